//! Ids and names at their limits: empty, exactly at the limit, 10 KB, control characters and
//! Unicode, at every door they come in by — client calls, schedules, registration and workflow
//! code. A refused one gets an error that names what is wrong and changes nothing; Unicode
//! within the limit round-trips through history, describe and list.

mod common;
use common::*;
use std::time::Duration;
use wf_sdk::prelude::*;
use wf_sdk::{
    client::{ListFilter, StartOptions, UpdateStage},
    error::{ChildError, SignalExternalError},
    history::EventKind,
    limits::{MAX_ID_BYTES, MAX_NAME_BYTES, MAX_REASON_BYTES},
    payload::Payload,
    schedule::{ScheduleAction, SchedulePolicies, ScheduleSpec},
};

/// Notes what it is told; runs until terminated.
#[derive(Default)]
pub struct Inbox {
    notes: Vec<String>,
    closed: bool,
}

#[workflow]
impl Inbox {
    #[run]
    async fn run(ctx: &mut WorkflowContext<Self>) -> Result<(), WorkflowError> {
        ctx.wait_condition(|s| s.closed).await;
        Ok(())
    }

    #[signal]
    fn note(&mut self, text: String) {
        self.notes.push(text);
    }

    #[update]
    fn put(&mut self, text: String) -> Result<usize, UpdateError> {
        self.notes.push(text);
        Ok(self.notes.len())
    }

    #[query]
    fn notes(&self) -> Vec<String> {
        self.notes.clone()
    }
}

/// Returns its input.
#[derive(Default)]
pub struct Echo;

#[workflow]
impl Echo {
    #[run]
    async fn run(_ctx: &mut WorkflowContext<Self>, text: String) -> Result<String, WorkflowError> {
        Ok(text)
    }
}

/// Starts an `Echo` child under the first id and signals `note` to the second; says how each
/// went.
#[derive(Default)]
pub struct Spawner;

#[workflow]
impl Spawner {
    #[run]
    async fn run(
        ctx: &mut WorkflowContext<Self>,
        ids: (String, String),
    ) -> Result<String, WorkflowError> {
        let (child_id, target) = ids;
        let child = match ctx.child::<Echo>(child_id, &"hi".to_string()).await {
            Ok(v) => format!("child said {v}"),
            Err(ChildError::InvalidArgument(m)) => format!("child refused: {m}"),
            Err(e) => return Err(e.into()),
        };
        let signal = match ctx.signal_external(&target, "note", &("from spawner".to_string(),)) {
            Ok(()) => "signal sent".to_string(),
            Err(SignalExternalError::InvalidArgument(m)) => format!("signal refused: {m}"),
            Err(e) => return Err(e.into()),
        };
        Ok(format!("{child}; {signal}"))
    }
}

/// Ids or names out of their limits, with what the error must say about each.
/// (Both limits are 1,000 bytes.)
fn out_of_limits(limit: usize) -> Vec<(String, String)> {
    assert_eq!(limit, 1_000);
    vec![
        (String::new(), "is empty".into()),
        (
            "x".repeat(limit + 1),
            "is 1,001 bytes; the limit is 1,000 bytes".into(),
        ),
        (
            "x".repeat(10_240),
            "is 10,240 bytes; the limit is 1,000 bytes".into(),
        ),
        (
            "line\nbreak".into(),
            "control character U+000A at byte 4".into(),
        ),
        ("nul\0".into(), "control character U+0000 at byte 3".into()),
        (
            "\u{1b}[31mred".into(),
            "control character U+001B at byte 0".into(),
        ),
    ]
}

/// Asserts `result` is `InvalidArgument` naming `what` and saying `problem`.
#[track_caller]
fn assert_refused<T: std::fmt::Debug>(result: Result<T, WfError>, what: &str, problem: &str) {
    match result {
        Err(WfError::InvalidArgument(m)) => {
            assert!(m.starts_with(&format!("the {what}")), "{m}");
            assert!(m.contains(problem), "{m} should say {problem}");
            assert!(m.len() < 300, "the error does not echo the value: {m}");
        }
        other => panic!("{what}: expected InvalidArgument, got {other:?}"),
    }
}

fn unit() -> Payload {
    Payload::encode(&()).unwrap()
}

fn text(s: &str) -> Payload {
    Payload::encode(&(s.to_string(),)).unwrap()
}

async fn engine(backend: Backend, tag: &str) -> Engine {
    builder(backend, tag)
        .workflow::<Inbox>()
        .workflow::<Echo>()
        .workflow::<Spawner>()
        .build()
        .await
        .unwrap()
}

async fn workflow_ids_are_checked_at_start(backend: Backend) {
    let engine = engine(backend, "limits-start").await;
    let client = engine.client();
    for (id, problem) in out_of_limits(MAX_ID_BYTES) {
        assert_refused(client.start::<Inbox>(id, ()).await, "workflow id", &problem);
    }
    // Signal-with-start checks the signal too; a bad task queue or type name is refused.
    let fresh = client.handle::<Inbox>("fresh");
    let signal = fresh.note("x".into()).signal_id("a\tb");
    let bad_signal = fresh
        .signal_with_start((), signal, IdConflictPolicy::UseExisting)
        .await;
    assert_refused(bad_signal, "signal id", "U+0009");
    let queue = StartOptions {
        task_queue: Some(String::new()),
        ..Default::default()
    };
    assert_refused(
        client.start_raw("fresh", "Inbox", unit(), queue).await,
        "task queue name",
        "is empty",
    );
    assert_refused(
        client
            .start_raw("fresh", "In\nbox", unit(), StartOptions::default())
            .await,
        "workflow type name",
        "U+000A",
    );
    assert!(
        client.list(ListFilter::default()).await.unwrap().is_empty(),
        "no refused start created a run"
    );

    // Exactly at the limit, in ASCII and in two-byte characters.
    for id in ["w".repeat(MAX_ID_BYTES), "é".repeat(MAX_ID_BYTES / 2)] {
        let h = client.start::<Inbox>(id.clone(), ()).await.unwrap();
        assert_eq!(h.describe().await.unwrap().workflow_id, id);
        h.note("hello".into()).await.unwrap();
        assert_eq!(h.notes().await.unwrap(), ["hello"]);
    }
    assert_eq!(client.list(ListFilter::default()).await.unwrap().len(), 2);
    engine.shutdown().await;
}

async fn unicode_ids_and_names_round_trip(backend: Backend) {
    let engine = engine(backend, "limits-unicode").await;
    let client = engine.client();
    let id = "заказ-42 · 注文 · 🚀 · ﷽";
    let h = client.start::<Inbox>(id, ()).await.unwrap();
    client
        .signal_raw(
            id,
            "примечание-🚀",
            text("buffered"),
            Some("сигнал-1".into()),
        )
        .await
        .unwrap();
    let (update_id, _) = client
        .update_raw(
            id,
            "put",
            text("π"),
            Some("更新-1".into()),
            UpdateStage::Completed,
        )
        .await
        .unwrap();
    assert_eq!(update_id, "更新-1");

    let d = h.describe().await.unwrap();
    assert_eq!(d.workflow_id, id);
    assert_eq!(d.buffered_signals, ["примечание-🚀"]);
    let listed = client.list(ListFilter::default()).await.unwrap();
    assert_eq!(listed.len(), 1);
    assert_eq!(listed[0].workflow_id, id);
    let history = h.history().await.unwrap();
    assert!(history.iter().any(|e| matches!(&e.kind,
        EventKind::SignalReceived { name, signal_id: Some(s), .. }
            if name == "примечание-🚀" && s == "сигнал-1")));
    assert!(history.iter().any(|e| matches!(&e.kind,
        EventKind::UpdateAccepted { update_id, .. } if update_id == "更新-1")));
    // The same signal id again is a duplicate (the update's task would have applied it).
    client
        .signal_raw(id, "примечание-🚀", text("again"), Some("сигнал-1".into()))
        .await
        .unwrap();
    client
        .update_raw(id, "put", text("ρ"), None, UpdateStage::Completed)
        .await
        .unwrap();
    assert_eq!(h.describe().await.unwrap().buffered_signals.len(), 1);
    // A run id is checked where a client names one.
    assert_refused(client.run_history("run\n1", id).await, "run id", "U+000A");
    assert_eq!(
        client.run_history(&d.run_id, id).await.unwrap(),
        h.history().await.unwrap()
    );
    engine.shutdown().await;
}

async fn message_names_and_ids_are_checked(backend: Backend) {
    let engine = engine(backend, "limits-messages").await;
    let client = engine.client();
    let h = client.start::<Inbox>("inbox", ()).await.unwrap();
    h.note("first".into()).await.unwrap();
    let before = h.history().await.unwrap();

    for (name, problem) in out_of_limits(MAX_NAME_BYTES) {
        assert_refused(
            client.signal_raw("inbox", &name, text("x"), None).await,
            "signal name",
            &problem,
        );
        assert_refused(
            client
                .update_raw("inbox", &name, text("x"), None, UpdateStage::Completed)
                .await,
            "update name",
            &problem,
        );
        assert_refused(
            client.query_raw("inbox", &name, unit()).await,
            "query name",
            &problem,
        );
    }
    for (id, problem) in out_of_limits(MAX_ID_BYTES) {
        assert_refused(
            client
                .signal_raw("inbox", "note", text("x"), Some(id.clone()))
                .await,
            "signal id",
            &problem,
        );
        assert_refused(
            client
                .update_raw("inbox", "put", text("x"), Some(id), UpdateStage::Completed)
                .await,
            "update id",
            &problem,
        );
    }
    assert_eq!(h.history().await.unwrap(), before, "nothing was written");

    // At the limit: a signal name no handler takes (buffered), a signal id, an update id.
    let name = "n".repeat(MAX_NAME_BYTES);
    client
        .signal_raw("inbox", &name, text("x"), Some("s".repeat(MAX_ID_BYTES)))
        .await
        .unwrap();
    // (A signal with an id goes through the inbox: the update's task applies it first.)
    let (update_id, _) = client
        .update_raw(
            "inbox",
            "put",
            text("y"),
            Some("u".repeat(MAX_ID_BYTES)),
            UpdateStage::Completed,
        )
        .await
        .unwrap();
    assert_eq!(update_id.len(), MAX_ID_BYTES);
    assert_eq!(h.notes().await.unwrap(), ["first", "y"]);
    assert_eq!(h.describe().await.unwrap().buffered_signals, [name]);
    engine.shutdown().await;
}

async fn reasons_are_capped(backend: Backend) {
    let engine = engine(backend, "limits-reasons").await;
    let client = engine.client();
    let h = client.start::<Inbox>("inbox", ()).await.unwrap();
    let too_long = "r".repeat(MAX_REASON_BYTES + 1);
    assert_refused(
        client.cancel("inbox", &too_long).await,
        "cancellation reason",
        "is 32,769 bytes; the limit is 32,768 bytes",
    );
    assert_refused(
        h.terminate(&too_long).await,
        "termination reason",
        "is 32,769 bytes",
    );
    assert_eq!(h.describe().await.unwrap().status, RunStatus::Running);
    // Any text up to the limit, newlines included.
    let reason = format!("line one\nline two\n{}", "r".repeat(MAX_REASON_BYTES - 18));
    assert_eq!(reason.len(), MAX_REASON_BYTES);
    h.terminate(&reason).await.unwrap();
    match h.result().await {
        Err(WfError::Terminated(why)) => assert_eq!(why, reason),
        other => panic!("{other:?}"),
    }
    engine.shutdown().await;
}

async fn schedule_ids_and_prefixes_are_checked(backend: Backend) {
    let clock = TestClock::new();
    let engine = builder(backend, "limits-schedules")
        .clock(clock.clone())
        .workflow::<Echo>()
        .build()
        .await
        .unwrap();
    let schedules = engine.client().schedules();
    let every_hour = || ScheduleSpec::every(Duration::from_secs(3600));
    let action = |prefix: &str| ScheduleAction::start::<Echo>(prefix, &"tick".to_string()).unwrap();
    for (id, problem) in out_of_limits(MAX_ID_BYTES) {
        let created = schedules
            .create(id, every_hour(), action("p"), SchedulePolicies::default())
            .await;
        assert_refused(created, "schedule id", &problem);
    }
    // A prefix leaves room for "-<fire time>" under the workflow id limit.
    let room = MAX_ID_BYTES - wf_sdk::schedule::ACTION_ID_SUFFIX_BYTES;
    for (prefix, problem) in [
        (String::new(), "is empty".to_string()),
        (
            "p".repeat(room + 1),
            format!("is {} bytes; the limit is {room} bytes", room + 1),
        ),
        ("a\nb".into(), "U+000A".into()),
    ] {
        let created = schedules
            .create(
                "s",
                every_hour(),
                action(&prefix),
                SchedulePolicies::default(),
            )
            .await;
        assert_refused(created, "workflow id prefix", &problem);
    }
    let mut queued = action("p");
    queued.task_queue = Some("q\0".into());
    assert_refused(
        schedules
            .create("s", every_hour(), queued, SchedulePolicies::default())
            .await,
        "task queue name",
        "U+0000",
    );
    let paused = schedules
        .create("ok", every_hour(), action("p"), SchedulePolicies::default())
        .await
        .unwrap()
        .pause(&"n".repeat(MAX_REASON_BYTES + 1))
        .await;
    assert_refused(paused, "schedule note", "is 32,769 bytes");
    assert_eq!(schedules.list().await.unwrap().len(), 1);

    // A Unicode id, and a prefix at its limit whose actions start under ids at most 1,000
    // bytes long.
    let prefix = "ж".repeat(room / 2);
    let id = "расписание-⏰";
    schedules
        .create(
            id,
            every_hour(),
            action(&prefix),
            SchedulePolicies::default(),
        )
        .await
        .unwrap();
    assert_eq!(
        schedules.handle(id).describe().await.unwrap().schedule_id,
        id
    );
    clock.advance(Duration::from_secs(3600));
    let started = eventually("the schedule's action", || async {
        let d = schedules.handle(id).describe().await.ok()?;
        d.recent_actions.first().map(|a| a.workflow_id.clone())
    })
    .await;
    assert!(
        started.starts_with(&prefix) && started.len() <= MAX_ID_BYTES,
        "{started}"
    );
    assert_eq!(
        engine
            .client()
            .handle::<Echo>(&started)
            .result()
            .await
            .unwrap(),
        "tick"
    );
    engine.shutdown().await;
}

async fn children_and_external_signals_check_their_ids(backend: Backend) {
    let engine = engine(backend, "limits-children").await;
    let client = engine.client();
    let inbox = client.start::<Inbox>("inbox", ()).await.unwrap();

    for (id, problem) in out_of_limits(MAX_ID_BYTES) {
        let spawner = client
            .start::<Spawner>(format!("spawner-{}", id.len()), (id.clone(), id))
            .await
            .unwrap();
        let said = spawner.result().await.unwrap();
        assert!(
            said.starts_with("child refused: the workflow id") && said.contains(&problem),
            "{said}"
        );
        assert!(said.contains("signal refused: the workflow id"), "{said}");
        let history = kinds(&spawner.history().await.unwrap());
        assert!(
            !history.contains(&"ChildWorkflowStarted") && !history.contains(&"ExternalSignalSent"),
            "nothing was issued: {history:?}"
        );
    }
    // At the limit, and in Unicode.
    let child_id = "c".repeat(MAX_ID_BYTES);
    let spawner = client
        .start::<Spawner>("spawner-ok", (child_id.clone(), "inbox".to_string()))
        .await
        .unwrap();
    assert_eq!(
        spawner.result().await.unwrap(),
        "child said hi; signal sent"
    );
    assert_eq!(
        client.describe(&child_id).await.unwrap().workflow_id,
        child_id
    );
    eventually("the external signal", || async {
        (inbox.notes().await.ok()? == ["from spawner"]).then_some(())
    })
    .await;
    let spawner = client
        .start::<Spawner>("spawner-ü", ("kind-🧒".to_string(), "ghost".to_string()))
        .await
        .unwrap();
    assert_eq!(
        spawner.result().await.unwrap(),
        "child said hi; signal sent"
    );
    engine.shutdown().await;
}

both!(
    workflow_ids_are_checked_at_start,
    unicode_ids_and_names_round_trip,
    message_names_and_ids_are_checked,
    reasons_are_capped,
    schedule_ids_and_prefixes_are_checked,
    children_and_external_signals_check_their_ids,
);

// ---------------------------------------------------------------------------------------------
// Registration: names out of their limits fail `build()`.

#[derive(Default)]
pub struct BadTypeName;

#[workflow(name = "bad\ttype")]
impl BadTypeName {
    #[run]
    async fn run(_ctx: &mut WorkflowContext<Self>) -> Result<(), WorkflowError> {
        Ok(())
    }
}

#[derive(Default)]
pub struct BadSignalName;

#[workflow]
impl BadSignalName {
    #[run]
    async fn run(_ctx: &mut WorkflowContext<Self>) -> Result<(), WorkflowError> {
        Ok(())
    }

    #[signal(name = "new\nline")]
    fn go(&mut self) {}
}

pub struct BadActivities;

#[activities]
impl BadActivities {
    #[activity(name = "nul\0")]
    async fn act(&self, _ctx: ActivityContext) -> Result<(), ActivityError> {
        Ok(())
    }
}

#[tokio::test]
async fn registration_refuses_names_out_of_their_limits() {
    let config_error = |built: Result<Engine, WfError>| match built {
        Err(WfError::InvalidConfig(m)) => m,
        other => panic!("expected InvalidConfig, got {other:?}"),
    };
    let m = config_error(Engine::builder().workflow::<BadTypeName>().build().await);
    assert!(
        m.contains("the workflow type name \"bad\\ttype\" holds the control character U+0009"),
        "{m}"
    );
    let m = config_error(Engine::builder().workflow::<BadSignalName>().build().await);
    assert!(
        m.contains("BadSignalName: the signal name \"new\\nline\""),
        "{m}"
    );
    let m = config_error(Engine::builder().activities(BadActivities).build().await);
    assert!(
        m.contains("an activity: the activity name \"nul\\0\""),
        "{m}"
    );
    let m = config_error(
        Engine::builder()
            .task_queue("q".repeat(10_240))
            .build()
            .await,
    );
    assert_eq!(
        m,
        "the task queue name is 10,240 bytes; the limit is 1,000 bytes"
    );
    let m = config_error(Engine::builder().build_id("").build().await);
    assert_eq!(m, "the build id is empty");
    // Names at the limit register.
    let engine = Engine::builder()
        .task_queue("q".repeat(MAX_NAME_BYTES))
        .build_id("v".repeat(MAX_NAME_BYTES))
        .workflow::<Echo>()
        .build()
        .await
        .unwrap();
    engine.shutdown().await;
}
