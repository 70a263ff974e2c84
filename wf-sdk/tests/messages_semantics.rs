//! Message semantics: updates whose wait times out (and stay queued), what a signal reports
//! (delivered or buffered), signals to runs whose cancellation was requested, signal metadata
//! for `wait_for_signal`, and the details of a wait that timed out.

mod common;
use common::*;
use std::time::Duration;
use wf_sdk::prelude::*;
use wf_sdk::{
    client::{SignalRequest, SignalStatus, UpdateStage},
    error::{WaitKind, WaitTimeout},
    history::EventKind,
    payload::Payload,
};

#[derive(Default)]
pub struct Desk {
    goal: String,
    pings: u32,
    done: bool,
}

#[workflow(name = "desk")]
impl Desk {
    #[run]
    async fn run(ctx: &mut WorkflowContext<Self>) -> Result<String, WorkflowError> {
        ctx.wait_condition(|s| s.done).await;
        Ok(ctx.state(|s| format!("{} after {} pings", s.goal, s.pings)))
    }

    #[signal]
    fn ping(&mut self) {
        self.pings += 1;
    }

    #[signal]
    fn finish(&mut self) {
        self.done = true;
    }

    #[query]
    fn pings(&self) -> u32 {
        self.pings
    }

    #[update]
    fn set_goal(&mut self, goal: String) -> Result<String, UpdateError> {
        self.goal = goal.clone();
        Ok(format!("goal is {goal}"))
    }

    /// Answers once the run is told to finish.
    #[update]
    async fn when_done(ctx: &mut WorkflowContext<Self>) -> Result<u32, UpdateError> {
        ctx.wait_condition(|s| s.done).await;
        Ok(ctx.state(|s| s.pings))
    }
}

fn is_accepted(k: &EventKind) -> bool {
    matches!(k, EventKind::UpdateAccepted { .. })
}

fn is_completed(k: &EventKind) -> bool {
    matches!(k, EventKind::UpdateCompleted { .. })
}

/// A client-only engine (no worker anywhere yet) starts a run and sends it an update: the
/// wait runs out with `Timeout` naming the id, the update stays queued, a worker started later
/// applies it, and the same update id then returns its value; history holds it once.
async fn update_times_out_then_a_retry_with_its_id_returns_the_value(backend: Backend) {
    let engines = shared_store(backend, "update-timeout");
    let client_engine = engines()
        .workflow::<Desk>()
        .client_only()
        .build()
        .await
        .unwrap();
    let client = client_engine.client();
    let h = client.start::<Desk>("desk-1", ()).await.unwrap();
    let err = h
        .set_goal("ship".into())
        .update_id("u-1")
        .timeout(Duration::from_millis(200))
        .await
        .unwrap_err();
    let WfError::Timeout(message) = &err else {
        panic!("expected Timeout, got {err:?}");
    };
    assert!(
        message.contains("\"u-1\"") && message.contains("stays queued"),
        "{message}"
    );
    assert!(err.is_retryable());
    // The update is queued in the store, not lost.
    let pending = h.describe().await.unwrap().pending_updates;
    assert_eq!(pending.len(), 1, "{pending:?}");
    assert_eq!(pending[0].update_id, "u-1");

    let worker = engines().workflow::<Desk>().build().await.unwrap();
    let value = h
        .set_goal("ship".into())
        .update_id("u-1")
        .timeout(Duration::from_secs(30))
        .await
        .unwrap();
    assert_eq!(value, "goal is ship");
    h.finish().await.unwrap();
    assert_eq!(h.result().await.unwrap(), "ship after 0 pings");
    let history = h.history().await.unwrap();
    assert_eq!(count(&history, is_accepted), 1, "{:?}", kinds(&history));
    assert_eq!(count(&history, is_completed), 1, "{:?}", kinds(&history));
    drop(worker);
}

/// The engine's default (`EngineBuilder::update_timeout`) applies to a call that sets none,
/// and to `.start()` (waiting for acceptance) as well; the update is applied later all the
/// same, and `wait_update` under the same id sees its outcome.
async fn engine_default_timeout_and_accepted_stage(backend: Backend) {
    let engines = shared_store(backend, "update-timeout-default");
    let client_engine = engines()
        .workflow::<Desk>()
        .client_only()
        .update_timeout(Duration::from_millis(150))
        .build()
        .await
        .unwrap();
    let client = client_engine.client();
    let h = client.start::<Desk>("desk-2", ()).await.unwrap();
    let err = h.set_goal("a".into()).update_id("u-a").await.unwrap_err();
    assert!(matches!(err, WfError::Timeout(_)), "{err:?}");
    let Err(err) = h.set_goal("b".into()).update_id("u-b").start().await else {
        panic!("no worker can accept the update");
    };
    let WfError::Timeout(message) = &err else {
        panic!("expected Timeout, got {err:?}");
    };
    assert!(message.contains("was not accepted"), "{message}");
    // Without an id the message names the generated one, which a retry can carry.
    let err = h.set_goal("c".into()).await.unwrap_err();
    let WfError::Timeout(message) = &err else {
        panic!("expected Timeout, got {err:?}");
    };
    let id = message
        .split("update id \"")
        .nth(1)
        .and_then(|rest| rest.split('"').next())
        .expect("the message names the update id")
        .to_string();

    let _worker = engines().workflow::<Desk>().build().await.unwrap();
    let b = client
        .wait_update("desk-2", "u-b", UpdateStage::Completed)
        .await
        .unwrap();
    assert_eq!(b.decode::<String>().unwrap(), "goal is b");
    let c = h
        .set_goal("c".into())
        .update_id(id)
        .timeout(Duration::from_secs(30))
        .await
        .unwrap();
    assert_eq!(c, "goal is c");
    let history = h.history().await.unwrap();
    assert_eq!(count(&history, is_accepted), 3, "{:?}", kinds(&history));
}

/// On an engine that runs the workflow, an update without an id is handed to the worker in
/// memory; when its handler is still waiting at the deadline the caller gets `Timeout` naming
/// the id the engine gave it, and that id later returns the value.
async fn update_handed_over_in_memory_times_out_too(backend: Backend) {
    let engine = builder(backend, "update-timeout-direct")
        .workflow::<Desk>()
        .build()
        .await
        .unwrap();
    let h = engine.client().start::<Desk>("desk-6", ()).await.unwrap();
    let err = h
        .when_done()
        .timeout(Duration::from_millis(200))
        .await
        .unwrap_err();
    let WfError::Timeout(message) = &err else {
        panic!("expected Timeout, got {err:?}");
    };
    let id = message
        .split("update id \"")
        .nth(1)
        .and_then(|rest| rest.split('"').next())
        .expect("the message names the update id")
        .to_string();
    h.ping().await.unwrap();
    h.finish().await.unwrap();
    let value = h.when_done().update_id(id).await.unwrap();
    assert_eq!(value, 1);
    let history = h.history().await.unwrap();
    assert_eq!(count(&history, is_accepted), 1, "{:?}", kinds(&history));
}

/// `update_with_start` waits as long as the update call's timeout too, and the update it
/// delivered with the start stays queued: the same call with its id returns the value later.
async fn update_with_start_times_out_and_stays_queued(backend: Backend) {
    let engines = shared_store(backend, "update-with-start-timeout");
    let client_engine = engines()
        .workflow::<Desk>()
        .client_only()
        .build()
        .await
        .unwrap();
    let h = client_engine.client().handle::<Desk>("desk-5");
    let call = || {
        h.set_goal("launch".into())
            .update_id("uws-1")
            .timeout(Duration::from_millis(150))
    };
    let err = h
        .update_with_start((), call(), IdConflictPolicy::UseExisting)
        .await
        .unwrap_err();
    assert!(
        matches!(&err, WfError::Timeout(m) if m.contains("\"uws-1\"")),
        "{err:?}"
    );
    let _worker = engines().workflow::<Desk>().build().await.unwrap();
    let value = h
        .update_with_start(
            (),
            call().timeout(Duration::from_secs(30)),
            IdConflictPolicy::UseExisting,
        )
        .await
        .unwrap();
    assert_eq!(value, "goal is launch");
    let history = h.history().await.unwrap();
    assert_eq!(count(&history, is_accepted), 1, "{:?}", kinds(&history));
}

/// A signal with a `#[signal]` method is delivered; one without waits (buffered) for
/// `wait_for_signal`. The status is the same from an engine that runs the workflow, a
/// client-only engine that knows its type, and for `send_signal` by wire name.
async fn signal_status_says_delivered_or_buffered(backend: Backend) {
    let engines = shared_store(backend, "signal-status");
    let engine = engines().workflow::<Desk>().build().await.unwrap();
    let h = engine.client().start::<Desk>("desk-3", ()).await.unwrap();
    assert_eq!(
        h.ping().with_status().await.unwrap(),
        SignalStatus::Delivered
    );
    assert_eq!(
        h.signal("note", &"hi").with_status().await.unwrap(),
        SignalStatus::Buffered
    );
    let raw = |name| SignalRequest {
        workflow_id: "desk-3",
        name,
        args: Payload::encode(&()).unwrap(),
        signal_id: Some(format!("id-{name}")),
        handled: None,
    };
    let client = engine.client();
    assert_eq!(
        client.send_signal(raw("ping")).await.unwrap(),
        SignalStatus::Delivered
    );
    assert_eq!(
        client.send_signal(raw("other")).await.unwrap(),
        SignalStatus::Buffered
    );
    let other = engines()
        .workflow::<Desk>()
        .client_only()
        .build()
        .await
        .unwrap();
    assert_eq!(
        other
            .client()
            .handle::<Desk>("desk-3")
            .ping()
            .signal_id("p2")
            .with_status()
            .await
            .unwrap(),
        SignalStatus::Delivered
    );
    assert_eq!(h.pings().await.unwrap(), 3);
    let d = h.describe().await.unwrap();
    assert_eq!(d.buffered_signals, vec!["note", "other"]);
}

/// Cleans up when cancelled: its wait looks at the cancellation, then it waits for a
/// `finish_cleanup` update before ending as cancelled.
#[derive(Default)]
pub struct Cleanup {
    pings: u32,
    cleaned: bool,
}

#[workflow(name = "cleanup")]
impl Cleanup {
    #[run]
    async fn run(ctx: &mut WorkflowContext<Self>) -> Result<u32, WorkflowError> {
        ctx.wait_condition(|_| ctx.cancel_requested()).await;
        ctx.wait_condition(|s| s.cleaned).await;
        Err(WorkflowError::Cancelled)
    }

    #[signal]
    fn ping(&mut self) {
        self.pings += 1;
    }

    #[query]
    fn pings(&self) -> u32 {
        self.pings
    }

    #[update]
    fn finish_cleanup(&mut self) -> Result<u32, UpdateError> {
        self.cleaned = true;
        Ok(self.pings)
    }
}

/// Once cancellation is requested, the run refuses signals with `RunFinished` (through the
/// worker in memory, with a signal id through the store, and from another engine), while
/// updates still reach its cleanup.
async fn signal_after_cancel_request_is_refused(backend: Backend) {
    let engines = shared_store(backend, "signal-cancel");
    let engine = engines().workflow::<Cleanup>().build().await.unwrap();
    let client = engine.client();
    let h = client.start::<Cleanup>("clean-1", ()).await.unwrap();
    h.ping().await.unwrap();
    client.cancel("clean-1", "stop").await.unwrap();
    let refused = |r: Result<(), WfError>| {
        assert!(matches!(r, Err(WfError::RunFinished { .. })), "{r:?}");
    };
    refused(h.ping().await);
    refused(h.ping().signal_id("s-1").await);
    let other = engines()
        .workflow::<Cleanup>()
        .client_only()
        .build()
        .await
        .unwrap();
    refused(other.client().handle::<Cleanup>("clean-1").ping().await);
    let args = Payload::encode(&()).unwrap();
    refused(
        other
            .client()
            .signal_raw("clean-1", "note", args, None)
            .await,
    );
    // The run is still running its cleanup: an update reaches it, then it ends as cancelled.
    assert_eq!(h.describe().await.unwrap().status, RunStatus::Running);
    assert_eq!(h.finish_cleanup().await.unwrap(), 1);
    let r = h.result().await;
    assert!(matches!(r, Err(WfError::Cancelled(_))), "{r:?}");
    let history = h.history().await.unwrap();
    let signals = count(&history, |k| matches!(k, EventKind::SignalReceived { .. }));
    assert_eq!(signals, 1, "{:?}", kinds(&history));
}

/// A run blocked only on `wait_condition` (no timer, no activity) ends as cancelled when its
/// cancellation is requested, as Temporal's `condition()` throws on cancellation; so does one
/// blocked on `wait_for_signal` without a deadline.
async fn cancel_interrupts_a_run_blocked_on_a_condition(backend: Backend) {
    let engines = shared_store(backend, "cancel-condition");
    let engine = engines()
        .workflow::<Desk>()
        .workflow::<Listener>()
        .build()
        .await
        .unwrap();
    let client = engine.client();
    let desk = client.start::<Desk>("desk-c", ()).await.unwrap();
    desk.ping().await.unwrap();
    desk.cancel().await.unwrap();
    let r = tokio::time::timeout(Duration::from_secs(30), desk.result())
        .await
        .expect("the cancelled run ends");
    assert!(matches!(r, Err(WfError::Cancelled(_))), "{r:?}");
    let history = desk.history().await.unwrap();
    assert_eq!(
        kinds(&history)[history.len() - 3..],
        [
            "CancelRequested",
            "WorkflowCancelled",
            "WorkflowTaskCompleted"
        ],
        "{:?}",
        kinds(&history)
    );
    // From another engine (through the inbox), on a run blocked on wait_for_signal.
    let listener = client.start::<Listener>("listener-c", ()).await.unwrap();
    let other = engines().client_only().build().await.unwrap();
    other.client().cancel("listener-c", "stop").await.unwrap();
    let r = tokio::time::timeout(Duration::from_secs(30), listener.result())
        .await
        .expect("the cancelled run ends");
    assert!(matches!(r, Err(WfError::Cancelled(_))), "{r:?}");
    // Replay (a fresh engine, nothing cached) reaches the same end.
    drop(engine);
    let again = engines().workflow::<Desk>().build().await.unwrap();
    let status = again
        .client()
        .handle::<Desk>("desk-c")
        .describe()
        .await
        .unwrap();
    assert_eq!(status.status, RunStatus::Cancelled);
    assert_eq!(
        again
            .client()
            .handle::<Desk>("desk-c")
            .pings()
            .await
            .unwrap(),
        1
    );
}

/// Takes steps (an activity, then a timer) for ever, never looking at cancellation unless
/// its input says so: then it cleans up with an activity first.
#[derive(Default)]
pub struct Stepper;

#[workflow(name = "stepper")]
impl Stepper {
    #[run]
    async fn run(ctx: &mut WorkflowContext<Self>, look: bool) -> Result<u32, WorkflowError> {
        let mut n = 0;
        loop {
            if look && ctx.cancel_requested() {
                let done = ctx.activity(Tools::add_one, n).await?;
                ctx.sleep(Duration::from_millis(1)).await?;
                return Err(WorkflowError::new(format!("cleaned up at {done}")));
            }
            n = ctx.activity(Tools::add_one, n).await?;
            ctx.sleep(Duration::from_millis(10)).await?;
        }
    }
}

/// A cancellation request that reaches the run when nothing it waits on is pending (here: in
/// its first task, before its code started; in the wild, in the task where its activity's
/// result arrived) is received by the first activity or timer the code starts, so a loop that
/// never looks at it still ends as cancelled; code that looks first cleans up normally.
async fn cancel_reaches_the_next_command_when_nothing_was_pending(backend: Backend) {
    let engines = shared_store(backend, "cancel-next");
    let client_engine = engines()
        .workflow::<Stepper>()
        .client_only()
        .build()
        .await
        .unwrap();
    let client = client_engine.client();
    let blind = client.start::<Stepper>("blind", false).await.unwrap();
    let looking = client.start::<Stepper>("looking", true).await.unwrap();
    client.cancel("blind", "stop").await.unwrap();
    client.cancel("looking", "stop").await.unwrap();
    let _worker = engines()
        .workflow::<Stepper>()
        .activities(tools())
        .build()
        .await
        .unwrap();
    let r = tokio::time::timeout(Duration::from_secs(30), blind.result())
        .await
        .expect("the cancelled run ends");
    assert!(matches!(r, Err(WfError::Cancelled(_))), "{r:?}");
    let history = blind.history().await.unwrap();
    assert_eq!(
        count(&history, |k| matches!(
            k,
            EventKind::ActivityScheduled { .. }
        )),
        0,
        "{:?}",
        kinds(&history)
    );
    let r = tokio::time::timeout(Duration::from_secs(30), looking.result())
        .await
        .expect("the cleanup ends");
    assert!(
        matches!(&r, Err(WfError::WorkflowFailed(m)) if m == "cleaned up at 1"),
        "{r:?}"
    );
}

#[derive(Default)]
pub struct Listener;

#[workflow(name = "listener")]
impl Listener {
    #[run]
    async fn run(ctx: &mut WorkflowContext<Self>) -> Result<String, WorkflowError> {
        let note = ctx.wait_for_signal_raw("note").await?;
        let text: String = note.arg()?;
        let sent = note.sent_at.expect("a new signal records its send time");
        let ms = sent
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_millis();
        if ctx
            .wait_condition(|_| false)
            .timeout(Duration::from_secs(5))
            .or_timeout()
            .await
            .is_ok()
        {
            return Err(WorkflowError::new("a false condition cannot hold"));
        }
        // Uncaught: fails the run with the code wait_timeout.
        ctx.wait_for_signal::<u32>("never")
            .timeout(Duration::from_secs(60))
            .await?;
        Ok(format!("{} {text} at {ms}", note.name))
    }
}

/// `wait_for_signal_raw` returns the signal's name, arguments and send time (the sender's
/// clock, recorded in `SignalReceived.sent_at`); a bounded wait that runs out reports its kind,
/// call index and deadline, and a run that does not catch it fails with code `wait_timeout`.
async fn signal_metadata_and_wait_timeout_details(backend: Backend) {
    let clock = TestClock::starting_at(1_700_000_000_000);
    let engine = builder(backend, "signal-meta")
        .clock(clock.clone())
        .workflow::<Listener>()
        .build()
        .await
        .unwrap();
    let h = engine.client().start::<Listener>("l-1", ()).await.unwrap();
    h.signal("note", &"hello".to_string()).await.unwrap();
    let history = h.history().await.unwrap();
    let sent_at = history.iter().find_map(|e| match &e.kind {
        EventKind::SignalReceived { sent_at, .. } => *sent_at,
        _ => None,
    });
    assert_eq!(sent_at, Some(1_700_000_000_000), "{:?}", kinds(&history));
    // The condition's timer, then the signal wait's.
    until_recorded(&h, "the condition's timer", |k| {
        matches!(k, EventKind::TimerStarted { .. })
    })
    .await;
    clock.advance(Duration::from_secs(5));
    until_recorded(
        &h,
        "the signal wait's timer",
        |k| matches!(k, EventKind::TimerStarted { seq, .. } if *seq > 1),
    )
    .await;
    clock.advance(Duration::from_secs(60));
    let err = h.result().await.unwrap_err();
    let WfError::WorkflowFailed(message) = &err else {
        panic!("expected WorkflowFailed, got {err:?}");
    };
    assert!(
        message.starts_with("wait_timeout: signal wait #3 for \"never\""),
        "{message}"
    );
}

#[test]
fn wait_timeout_carries_kind_index_and_deadline_and_its_code() {
    let t = WaitTimeout {
        kind: WaitKind::Condition,
        name: String::new(),
        call_index: 2,
        deadline: std::time::UNIX_EPOCH,
    };
    assert_eq!(WorkflowError::from(t.clone()).code(), "wait_timeout");
    assert!(
        t.to_string().starts_with("wait_timeout: condition wait #2"),
        "{t}"
    );
    assert_eq!(WorkflowError::new("x").code(), "failed");
}

both!(
    update_times_out_then_a_retry_with_its_id_returns_the_value,
    engine_default_timeout_and_accepted_stage,
    update_with_start_times_out_and_stays_queued,
    update_handed_over_in_memory_times_out_too,
    signal_status_says_delivered_or_buffered,
    signal_after_cancel_request_is_refused,
    signal_metadata_and_wait_timeout_details,
    cancel_interrupts_a_run_blocked_on_a_condition,
    cancel_reaches_the_next_command_when_nothing_was_pending,
);
