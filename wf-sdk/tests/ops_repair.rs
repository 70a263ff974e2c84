//! Repairing one run, on the three stores: reset after a code fix, reset re-applying later
//! signals once, fork leaving the original untouched, resume of a failed run and of a run whose
//! workflow task keeps failing, delete, and who did each and why.

mod common;
use common::*;
use std::time::Duration;
use wf_sdk::prelude::*;
use wf_sdk::{
    client::{ListFilter, RepairAction, RepairKind, RepairRequest, ResetPoint},
    history::{EventKind, HistoryEvent},
    payload::Payload,
};

/// Version 2 changed the first command (another activity): v1's histories do not replay.
#[derive(Default)]
pub struct FlowV2 {
    go: bool,
}

#[workflow(name = "flow")]
impl FlowV2 {
    #[run]
    async fn run(ctx: &mut WorkflowContext<Self>) -> Result<u32, WorkflowError> {
        let s = ctx.activity(Tools::echo, "v2".to_string()).await?;
        ctx.wait_condition(|s| s.go).await;
        Ok(s.len() as u32 + 40)
    }

    #[signal]
    fn go(&mut self) {
        self.go = true;
    }
}

/// Adds what `add` signals bring, after a first activity; returns the sum once `finish`es.
#[derive(Default)]
pub struct Tally {
    sum: u32,
    done: bool,
}

#[workflow(name = "tally")]
impl Tally {
    #[run]
    async fn run(ctx: &mut WorkflowContext<Self>) -> Result<u32, WorkflowError> {
        let base = ctx.activity(Tools::add_one, 0).await?;
        ctx.wait_condition(|s| s.done).await;
        Ok(ctx.state(|s| s.sum) + base * 100)
    }

    #[signal]
    fn add(&mut self, n: u32) {
        self.sum += n;
    }

    #[signal]
    fn finish(&mut self) {
        self.done = true;
    }

    #[query]
    fn sum(&self) -> u32 {
        self.sum
    }
}

/// An activity that waits until the test releases it; counts its starts.
pub struct Held {
    started: std::sync::atomic::AtomicU32,
    release: tokio::sync::Semaphore,
}

impl Default for Held {
    fn default() -> Self {
        Held {
            started: Default::default(),
            release: tokio::sync::Semaphore::new(0),
        }
    }
}

#[activities]
impl Held {
    /// Waits for a permit, then returns 7.
    #[activity]
    pub async fn wait(&self, _ctx: ActivityContext) -> Result<u32, ActivityError> {
        self.started
            .fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        let permit = self.release.acquire().await;
        permit
            .map_err(|e| ActivityError::retryable(e.to_string()))?
            .forget();
        Ok(7)
    }
}

/// Returns what its one held activity returns.
#[derive(Default)]
pub struct HeldFlow;

#[workflow(name = "held")]
impl HeldFlow {
    #[run]
    async fn run(ctx: &mut WorkflowContext<Self>) -> Result<u32, WorkflowError> {
        Ok(ctx.activity(Held::wait, ()).await?)
    }
}

fn kinds_named<'a>(
    history: &'a [HistoryEvent],
    name: &'a str,
) -> impl Iterator<Item = &'a HistoryEvent> {
    history.iter().filter(move |e| e.kind.name() == name)
}

/// The event id of the first `WorkflowTaskCompleted`.
fn first_task_end(history: &[HistoryEvent]) -> u64 {
    kinds_named(history, "WorkflowTaskCompleted")
        .next()
        .expect("a workflow task completed")
        .event_id
}

async fn until_events(client: &Client, id: &str, name: &str, n: usize) -> Vec<HistoryEvent> {
    eventually(&format!("{n} {name} events of {id}"), || async {
        let h = client.history(id).await.ok()?;
        (kinds_named(&h, name).count() >= n).then_some(h)
    })
    .await
}

fn add(n: u32) -> Payload {
    Payload::encode(&(n,)).unwrap()
}

async fn reset_after_a_code_fix_completes_a_run_stuck_on_nondeterminism(backend: Backend) {
    let engines = shared_store(backend, "reset_after_fix");
    let v1 = engines()
        .workflow::<FlowV1>()
        .activities(tools())
        .build()
        .await
        .unwrap();
    let h = v1.client().start::<FlowV1>("f", ()).await.unwrap();
    until_events(&v1.client(), "f", "ActivityCompleted", 1).await;
    let old_run = h.describe().await.unwrap().run_id;
    v1.shutdown().await;

    // New code on a fresh engine: the signal makes the run replay, and replay disagrees.
    let v2 = engines()
        .workflow::<FlowV2>()
        .activities(tools())
        .build()
        .await
        .unwrap();
    let client = v2.client();
    let h2 = client.handle::<FlowV2>("f");
    h2.go().await.unwrap();
    let failure = eventually("the nondeterminism failure", || async {
        h2.describe().await.unwrap().task_failure
    })
    .await;
    assert!(failure.nondeterminism, "{failure:?}");

    // Reset to before the first task: v2 runs the run from its start, `go` applied again.
    let report = client
        .reset("f", ResetPoint::FirstTask, "deployed v2")
        .await
        .unwrap();
    assert_ne!(report.run_id, old_run);
    assert_eq!(h2.result().await.unwrap(), 42);

    let d = h2.describe().await.unwrap();
    assert_eq!(d.run_id, report.run_id);
    assert!(d.task_failure.is_none());
    let origin = d.repaired_from.expect("the new run records its reset");
    assert_eq!(origin.kind, RepairKind::Reset);
    assert_eq!(
        (origin.run_id.as_str(), origin.at_event),
        (old_run.as_str(), 1)
    );
    assert_eq!(origin.reason, "deployed v2");
    assert_eq!(origin.identity, "in-process");

    // The old run ended as reset, naming the new run.
    let old = client.run_history(&old_run, "f").await.unwrap();
    match &old.last().unwrap().kind {
        EventKind::WorkflowReset {
            new_run_id, reason, ..
        } => {
            assert_eq!(new_run_id, &report.run_id);
            assert_eq!(reason, "deployed v2");
        }
        other => panic!("the old run ends with {other:?}"),
    }
    let runs = client.list(ListFilter::default()).await.unwrap();
    let status = |run: &str| runs.iter().find(|r| r.run_id == run).map(|r| r.status);
    assert_eq!(status(&old_run), Some(RunStatus::Reset));
    assert_eq!(status(&report.run_id), Some(RunStatus::Completed));
    let new = client.history("f").await.unwrap();
    assert_eq!(kinds_named(&new, "SignalReceived").count(), 1, "{new:#?}");
    v2.shutdown().await;
}

/// An engine on `backend` that runs `Tally` and its tools.
async fn tally_engine(backend: Backend, name: &str) -> Engine {
    builder(backend, name)
        .workflow::<Tally>()
        .activities(tools())
        .build()
        .await
        .unwrap()
}

async fn a_reset_reapplies_later_signals_exactly_once(backend: Backend) {
    let engine = tally_engine(backend, "reset_reapplies").await;
    let client = engine.client();
    let h = client.start::<Tally>("t", ()).await.unwrap();
    let history = until_events(&client, "t", "ActivityCompleted", 1).await;
    let point = first_task_end(&history);
    client
        .signal_raw("t", "add", add(1), Some("a".into()))
        .await
        .unwrap();
    client
        .signal_raw("t", "add", add(2), Some("b".into()))
        .await
        .unwrap();
    until_events(&client, "t", "SignalReceived", 2).await;
    assert_eq!(h.sum().await.unwrap(), 3);

    let report = client
        .repair(
            RepairRequest::new(
                "t",
                RepairAction::Reset {
                    to: ResetPoint::Event(point),
                    drop_messages: false,
                },
            )
            .reason("replay the signals"),
        )
        .await
        .unwrap();
    // The new run's prefix ends at the point; the activity runs again and the two signals
    // are applied once each.
    until_events(&client, "t", "SignalReceived", 2).await;
    assert_eq!(h.sum().await.unwrap(), 3);
    // Their signal ids are still known: sent again, they change nothing.
    client
        .signal_raw("t", "add", add(2), Some("b".into()))
        .await
        .unwrap();
    client
        .signal_raw("t", "add", add(4), Some("c".into()))
        .await
        .unwrap();
    until_events(&client, "t", "SignalReceived", 3).await;
    h.finish().await.unwrap();
    assert_eq!(h.result().await.unwrap(), 7 + 100);
    let new = client.history("t").await.unwrap();
    // The prefix is kept (its first event names the reset).
    assert_eq!(new[1..point as usize], history[1..point as usize]);
    assert_eq!(kinds_named(&new, "SignalReceived").count(), 4, "{new:#?}");
    let ids: Vec<_> = new
        .iter()
        .filter_map(|e| match &e.kind {
            EventKind::SignalReceived { signal_id, .. } => signal_id.clone(),
            _ => None,
        })
        .collect();
    assert_eq!(ids, ["a", "b", "c"]);
    assert_eq!(client.describe("t").await.unwrap().run_id, report.run_id);

    // Dropping the messages: a reset of the closed run to the same point forgets them.
    let dropped = client
        .repair(RepairRequest::new(
            "t",
            RepairAction::Reset {
                to: ResetPoint::Event(point),
                drop_messages: true,
            },
        ))
        .await
        .unwrap();
    until_events(&client, "t", "ActivityCompleted", 1).await;
    assert_eq!(h.sum().await.unwrap(), 0);
    assert_eq!(client.describe("t").await.unwrap().run_id, dropped.run_id);
    engine.shutdown().await;
}

async fn a_reset_to_an_event_that_ends_no_task_is_refused(backend: Backend) {
    let engine = tally_engine(backend, "reset_refused").await;
    let client = engine.client();
    client.start::<Tally>("t", ()).await.unwrap();
    let history = until_events(&client, "t", "ActivityCompleted", 1).await;
    let scheduled = kinds_named(&history, "ActivityScheduled")
        .next()
        .unwrap()
        .event_id;
    let err = client
        .reset("t", ResetPoint::Event(scheduled), "bad point")
        .await
        .unwrap_err();
    assert!(matches!(err, WfError::Conflict(_)), "{err:?}");
    assert!(err.to_string().contains("WorkflowTaskCompleted"), "{err}");
    let err = client
        .reset("nobody", ResetPoint::FirstTask, "no run")
        .await
        .unwrap_err();
    assert!(matches!(err, WfError::NotFound { .. }), "{err:?}");
    // Nothing changed.
    assert_eq!(client.history("t").await.unwrap(), history);
    engine.shutdown().await;
}

async fn a_fork_leaves_the_original_history_byte_for_byte_unchanged(backend: Backend) {
    let engine = tally_engine(backend, "fork").await;
    let client = engine.client();
    let h = client.start::<Tally>("orig", ()).await.unwrap();
    until_events(&client, "orig", "ActivityCompleted", 1).await;
    h.add(5).await.unwrap();
    let history = until_events(&client, "orig", "SignalReceived", 1).await;
    let before = h.export().await.unwrap().to_json().unwrap();
    let bytes = h.describe().await.unwrap().history_bytes;
    let at = kinds_named(&history, "WorkflowTaskCompleted")
        .last()
        .unwrap()
        .event_id;

    let report = client
        .fork("orig", "copy", at, "try a new prompt")
        .await
        .unwrap();
    assert_eq!(report.workflow_id, "copy");
    let copy = client.handle::<Tally>("copy");
    assert_eq!(copy.sum().await.unwrap(), 5);
    copy.add(1).await.unwrap();
    copy.finish().await.unwrap();
    assert_eq!(copy.result().await.unwrap(), 106);
    let d = copy.describe().await.unwrap();
    let origin = d.repaired_from.unwrap();
    assert_eq!(origin.kind, RepairKind::Fork);
    assert_eq!((origin.workflow_id.as_str(), origin.at_event), ("orig", at));
    let forked = copy.history().await.unwrap();
    assert_eq!(forked[1..at as usize], history[1..at as usize]);

    // The original runs on, its history as it was.
    assert_eq!(h.export().await.unwrap().to_json().unwrap(), before);
    let d = h.describe().await.unwrap();
    assert_eq!((d.status, d.history_bytes), (RunStatus::Running, bytes));
    assert!(d.repaired_from.is_none());
    h.finish().await.unwrap();
    assert_eq!(h.result().await.unwrap(), 105);
    engine.shutdown().await;
}

async fn a_fork_leaves_the_originals_running_activity_alone(backend: Backend) {
    let held = std::sync::Arc::new(Held::default());
    let engine = builder(backend, "fork_running")
        .workflow::<HeldFlow>()
        .shared_activities(held.clone())
        .build()
        .await
        .unwrap();
    let client = engine.client();
    let h = client.start::<HeldFlow>("orig", ()).await.unwrap();
    let started = |n| {
        let held = held.clone();
        move || {
            let held = held.clone();
            async move { (held.started.load(std::sync::atomic::Ordering::SeqCst) >= n).then_some(()) }
        }
    };
    eventually("the original's attempt runs", started(1)).await;
    let at = first_task_end(&h.history().await.unwrap());
    client.fork("orig", "copy", at, "try again").await.unwrap();
    // The copy's own attempt of the activity runs beside the original's.
    eventually("the copy's attempt runs", started(2)).await;
    held.release.add_permits(2);
    // Both attempts' results count: neither run waits out a start-to-close timeout (5 min).
    let limit = Duration::from_secs(30);
    let orig = tokio::time::timeout(limit, h.result()).await;
    assert_eq!(orig.expect("the original completes").unwrap(), 7);
    let copy = client.handle::<HeldFlow>("copy");
    let copied = tokio::time::timeout(limit, copy.result()).await;
    assert_eq!(copied.expect("the copy completes").unwrap(), 7);
    engine.shutdown().await;
}

async fn resume_continues_a_failed_run_on_fixed_code(backend: Backend) {
    let engines = shared_store(backend, "resume_failed");
    let buggy = engines()
        .workflow::<Buggy>()
        .activities(tools())
        .build()
        .await
        .unwrap();
    let h = buggy.client().start::<Buggy>("b", 1).await.unwrap();
    let err = h.result().await.unwrap_err();
    assert!(
        matches!(err, WfError::WorkflowFailed(ref m) if m.contains("bug after 2")),
        "{err:?}"
    );
    let failed_run = h.describe().await.unwrap().run_id;
    buggy.shutdown().await;

    let fixed = engines()
        .workflow::<Fixed>()
        .activities(tools())
        .build()
        .await
        .unwrap();
    let client = fixed.client();
    let report = client.resume("b", "fixed the bug").await.unwrap();
    let h = client.handle::<Fixed>("b");
    assert_eq!(h.result().await.unwrap(), 20);
    let d = h.describe().await.unwrap();
    assert_eq!(d.run_id, report.run_id);
    let origin = d.repaired_from.unwrap();
    assert_eq!(origin.kind, RepairKind::Resume);
    assert_eq!(origin.run_id, failed_run);
    // The last good task is the one that scheduled the activity: it ran again.
    let history = h.history().await.unwrap();
    assert_eq!(
        kinds_named(&history, "WorkflowTaskCompleted")
            .next()
            .unwrap()
            .event_id,
        origin.at_event
    );
    // The failed run keeps its history and status.
    let runs = client.list(ListFilter::default()).await.unwrap();
    let old = runs.iter().find(|r| r.run_id == failed_run).unwrap();
    assert_eq!(old.status, RunStatus::Failed);
    // A completed run has nothing to resume.
    let err = client.resume("b", "again").await.unwrap_err();
    assert!(matches!(err, WfError::Conflict(_)), "{err:?}");
    fixed.shutdown().await;
}

async fn resume_retries_a_failing_workflow_task_at_once(backend: Backend) {
    let engines = shared_store(backend, "resume_running");
    let clock = TestClock::new();
    let v1 = engines()
        .clock(clock.clone())
        .workflow::<FlowV1>()
        .activities(tools())
        .build()
        .await
        .unwrap();
    v1.client().start::<FlowV1>("f", ()).await.unwrap();
    until_events(&v1.client(), "f", "ActivityCompleted", 1).await;
    v1.shutdown().await;

    let v2 = engines()
        .clock(clock.clone())
        .workflow::<FlowV2>()
        .activities(tools())
        .build()
        .await
        .unwrap();
    let h2 = v2.client().handle::<FlowV2>("f");
    h2.go().await.unwrap();
    let failure = eventually("the nondeterminism failure", || async {
        h2.describe().await.unwrap().task_failure
    })
    .await;
    assert!(failure.retry_at_ms > clock.now_ms(), "{failure:?}");
    v2.shutdown().await;

    // The old code is back; the clock stands still, so only a resume retries the task.
    let fixed = engines()
        .clock(clock.clone())
        .workflow::<FlowV1>()
        .activities(tools())
        .build()
        .await
        .unwrap();
    let client = fixed.client();
    let run_id = client.describe("f").await.unwrap().run_id;
    let report = client.resume("f", "old code is back").await.unwrap();
    assert_eq!(report.run_id, run_id, "the same run goes on");
    let h = client.handle::<FlowV1>("f");
    assert_eq!(h.result().await.unwrap(), 2);
    assert!(h.describe().await.unwrap().task_failure.is_none());
    fixed.shutdown().await;
}

async fn delete_removes_a_run_and_its_dedupe_ids(backend: Backend) {
    let engine = tally_engine(backend, "delete").await;
    let client = engine.client();
    let h = client.start::<Tally>("d", ()).await.unwrap();
    client
        .signal_raw("d", "add", add(3), Some("once".into()))
        .await
        .unwrap();
    until_events(&client, "d", "SignalReceived", 1).await;
    let run_id = h.describe().await.unwrap().run_id;

    // A running run is terminated, then deleted.
    let report = client
        .delete_run("d", "data deletion request")
        .await
        .unwrap();
    assert_eq!(report.run_id, run_id);
    let err = client.describe("d").await.unwrap_err();
    assert!(matches!(err, WfError::NotFound { .. }), "{err:?}");
    assert!(client.history("d").await.is_err());
    let err = client.delete_run("d", "twice").await.unwrap_err();
    assert!(matches!(err, WfError::NotFound { .. }), "{err:?}");

    // The id starts afresh, and the deleted chain's signal id is forgotten.
    let h = client.start::<Tally>("d", ()).await.unwrap();
    client
        .signal_raw("d", "add", add(3), Some("once".into()))
        .await
        .unwrap();
    until_events(&client, "d", "SignalReceived", 1).await;
    assert_eq!(h.sum().await.unwrap(), 3);
    engine.shutdown().await;
}

both!(
    reset_after_a_code_fix_completes_a_run_stuck_on_nondeterminism,
    a_reset_reapplies_later_signals_exactly_once,
    a_reset_to_an_event_that_ends_no_task_is_refused,
    a_fork_leaves_the_original_history_byte_for_byte_unchanged,
    a_fork_leaves_the_originals_running_activity_alone,
    resume_continues_a_failed_run_on_fixed_code,
    resume_retries_a_failing_workflow_task_at_once,
    delete_removes_a_run_and_its_dedupe_ids,
);

#[test]
fn the_points_print_as_the_cli_names_them() {
    assert_eq!(ResetPoint::FirstTask.to_string(), "first-task");
    assert_eq!(ResetPoint::LastGoodTask.to_string(), "last-good-task");
    assert_eq!(ResetPoint::Event(7).to_string(), "event 7");
    let _ = Duration::ZERO;
}
