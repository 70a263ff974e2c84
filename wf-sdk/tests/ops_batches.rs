//! Batches: one action (signal, cancel, terminate, reset, pause, unpause, delete) on every
//! run a list filter selects, as a durable job in the store, on the three stores: progress and
//! status through describe and list, cancellation, a reset batch that completes runs failed on
//! a bug once the code is fixed, and a batch over 10,000 runs whose engine dies halfway, taken
//! over by a fresh engine on the same store, that acts on each run exactly once.

mod common;
use common::*;
use std::time::Duration;
use wf_sdk::batch::{BatchAction, BatchDescription, BatchRequest, BatchStatus};
use wf_sdk::client::{ListFilter, RepairKind, ResetPoint, RunStatus, SearchValue};
use wf_sdk::prelude::*;
use wf_sdk::testing::faults::{Crash, FaultStore};

/// Runs until told to finish; counts the pokes it took.
#[derive(Default)]
pub struct Live {
    pokes: u32,
    done: bool,
}

#[workflow]
impl Live {
    #[run]
    async fn run(ctx: &mut WorkflowContext<Self>, tag: String) -> Result<u32, WorkflowError> {
        ctx.upsert_search_attributes([("tag", SearchValue::from(tag.as_str()))])?;
        ctx.wait_condition(|s| s.done).await;
        Ok(ctx.state(|s| s.pokes))
    }

    #[signal]
    fn poke(&mut self, by: u32) {
        self.pokes += by;
    }

    #[signal]
    fn finish(&mut self) {
        self.done = true;
    }

    #[query]
    fn pokes(&self) -> u32 {
        self.pokes
    }
}

/// Another type, which a batch filtered on `Live` leaves alone.
#[derive(Default)]
pub struct Other {
    pokes: u32,
}

#[workflow]
impl Other {
    #[run]
    async fn run(ctx: &mut WorkflowContext<Self>) -> Result<(), WorkflowError> {
        ctx.wait_condition(|s| s.pokes > 100).await;
        Ok(())
    }

    #[signal]
    fn poke(&mut self, by: u32) {
        self.pokes += by;
    }

    #[query]
    fn pokes(&self) -> u32 {
        self.pokes
    }
}

fn of_type(t: &str) -> ListFilter {
    ListFilter {
        workflow_type: Some(t.to_string()),
        ..Default::default()
    }
}

const POLL: Duration = Duration::from_millis(20);

async fn start_live(client: &Client, prefix: &str, n: usize, tag: &str) {
    for i in 0..n {
        client
            .start::<Live>(&format!("{prefix}-{i}"), tag.to_string())
            .await
            .expect("a run starts");
    }
}

async fn pokes(client: &Client, id: &str) -> u32 {
    client
        .handle::<Live>(id)
        .pokes()
        .await
        .expect("the query answers")
}

/// A signal batch filtered on a type signals each of its runs once and leaves the other
/// type's runs alone; describe and list show its progress and status.
async fn signal_batch_acts_on_each_selected_run(backend: Backend) {
    let engine = builder(backend, "batch_signal")
        .workflow::<Live>()
        .workflow::<Other>()
        .build()
        .await
        .unwrap();
    let client = engine.client();
    start_live(&client, "live", 25, "a").await;
    for i in 0..5 {
        client
            .start::<Other>(&format!("other-{i}"), ())
            .await
            .unwrap();
    }
    let mut request = BatchRequest::new(
        of_type("Live"),
        BatchAction::signal("poke", &(1u32,)).unwrap(),
    );
    request.batch_id = Some("poke-all".into());
    request.reason = "test".into();
    let started = client.batches().start(request.clone()).await.unwrap();
    assert_eq!(
        (started.batch_id.as_str(), started.selected),
        ("poke-all", 25)
    );
    let done = client.batches().wait("poke-all", POLL).await.unwrap();
    assert_eq!(done.status, BatchStatus::Completed);
    assert_eq!((done.selected, done.done, done.failed), (25, 25, 0));
    assert!(done.closed_ms.is_some());
    for i in 0..25 {
        assert_eq!(pokes(&client, &format!("live-{i}")).await, 1, "live-{i}");
    }
    for i in 0..5 {
        let n = client
            .handle::<Other>(&format!("other-{i}"))
            .pokes()
            .await
            .unwrap();
        assert_eq!(n, 0, "other-{i} is not of the filtered type");
    }
    let listed = client.batches().list().await.unwrap();
    assert_eq!(listed.len(), 1);
    assert_eq!(listed[0].batch_id, "poke-all");
    // The id is taken; schedules do not see batches.
    let again = client.batches().start(request).await.unwrap_err();
    assert!(matches!(again, WfError::InvalidArgument(_)), "{again}");
    assert!(client.schedules().list().await.unwrap().is_empty());
    let unknown = client.batches().describe("nope").await.unwrap_err();
    assert!(unknown.to_string().contains("nope"), "{unknown}");
    engine.shutdown().await;
}

/// Terminate by status and search attribute: only the running runs tagged `b` end, as
/// terminated, with the batch's reason; a run that already finished is not selected.
async fn terminate_batch_by_status_and_search(backend: Backend) {
    let engine = builder(backend, "batch_terminate")
        .workflow::<Live>()
        .build()
        .await
        .unwrap();
    let client = engine.client();
    start_live(&client, "a", 6, "a").await;
    start_live(&client, "b", 8, "b").await;
    let b0 = client.handle::<Live>("b-0");
    b0.finish().await.unwrap();
    b0.result().await.unwrap();
    let filter = ListFilter {
        status: Some(RunStatus::Running),
        search: vec![("tag".into(), SearchValue::from("b"))],
        ..Default::default()
    };
    let mut request = BatchRequest::new(filter, BatchAction::Terminate);
    request.reason = "bad deploy".into();
    request.rate_per_s = Some(50);
    let b = client.batches().start(request).await.unwrap();
    assert_eq!(b.selected, 7);
    let b = client.batches().wait(&b.batch_id, POLL).await.unwrap();
    assert_eq!((b.status, b.done, b.failed), (BatchStatus::Completed, 7, 0));
    for i in 0..6 {
        let d = client.describe(&format!("a-{i}")).await.unwrap();
        assert_eq!(d.status, RunStatus::Running);
    }
    assert_eq!(
        client.describe("b-0").await.unwrap().status,
        RunStatus::Completed
    );
    for i in 1..8 {
        let d = client.describe(&format!("b-{i}")).await.unwrap();
        assert_eq!(d.status, RunStatus::Terminated, "b-{i}");
    }
    engine.shutdown().await;
}

/// A cancelled batch stops: its progress stays where it was, short of the selection, and
/// the runs after that point are not acted on.
async fn cancelled_batch_stops(backend: Backend) {
    let engine = builder(backend, "batch_cancel")
        .workflow::<Live>()
        .build()
        .await
        .unwrap();
    let client = engine.client();
    start_live(&client, "c", 30, "c").await;
    let mut request = BatchRequest::new(of_type("Live"), BatchAction::Cancel);
    request.rate_per_s = Some(5);
    let b = client.batches().start(request).await.unwrap();
    eventually_for(
        Duration::from_secs(10),
        "the batch cancels a run",
        || async {
            (client.batches().describe(&b.batch_id).await.unwrap().done >= 1).then_some(())
        },
    )
    .await;
    let cancelled = client.batches().cancel(&b.batch_id).await.unwrap();
    assert_eq!(cancelled.status, BatchStatus::Cancelled);
    tokio::time::sleep(Duration::from_millis(1_500)).await;
    let after = client.batches().describe(&b.batch_id).await.unwrap();
    assert_eq!(after.status, BatchStatus::Cancelled);
    assert!(after.done < 30, "a cancelled batch stops: {after:?}");
    let runs = client.list(of_type("Live")).await.unwrap();
    let running = runs
        .iter()
        .filter(|r| r.status == RunStatus::Running)
        .count();
    assert!(
        running > 0,
        "runs after the cancellation point are left alone"
    );
    // Cancelling again leaves it as it is.
    let again = client.batches().cancel(&b.batch_id).await.unwrap();
    assert_eq!(again.status, BatchStatus::Cancelled);
    engine.shutdown().await;
}

/// Invalid requests are refused before anything is stored.
async fn bad_batches_are_refused(backend: Backend) {
    let engine = builder(backend, "batch_bad")
        .workflow::<Live>()
        .build()
        .await
        .unwrap();
    let client = engine.client();
    let mut zero = BatchRequest::new(of_type("Live"), BatchAction::Cancel);
    zero.rate_per_s = Some(0);
    assert!(matches!(
        client.batches().start(zero).await,
        Err(WfError::InvalidArgument(_))
    ));
    let mut bad_id = BatchRequest::new(of_type("Live"), BatchAction::Cancel);
    bad_id.batch_id = Some("a\u{7}b".into());
    assert!(client.batches().start(bad_id).await.is_err());
    assert!(client.batches().list().await.unwrap().is_empty());
    engine.shutdown().await;
}

const MANY: usize = 10_000;

/// The key one: a signal batch over 10,000 runs whose engine's store dies halfway (every call
/// fails from a commit on, as for a killed process); a fresh engine on the same store takes
/// the batch over once its lease runs out, and every run got the signal exactly once.
async fn batch_survives_its_engine_dying_halfway(backend: Backend) {
    let store = open_store(backend, "batch_crash").await;
    let faults = FaultStore::new(store.clone());
    let first = Engine::builder()
        .poll_interval(POLL)
        .store(faults.clone())
        .workflow::<Live>()
        .build()
        .await
        .unwrap();
    let client = first.client();
    let mut starts = Vec::new();
    for part in 0..4 {
        let client = client.clone();
        starts.push(tokio::spawn(async move {
            for i in (part..MANY).step_by(4) {
                client
                    .start::<Live>(&format!("m-{i}"), "m".to_string())
                    .await
                    .unwrap();
            }
        }));
    }
    for s in starts {
        s.await.unwrap();
    }
    let mut request = BatchRequest::new(
        of_type("Live"),
        BatchAction::signal("poke", &(1u32,)).unwrap(),
    );
    request.batch_id = Some("many".into());
    // Paced so the second half takes seconds on every store: unpaced, the memory store can
    // finish all 10,000 between two looks of a starved test task, and no crash falls halfway.
    request.rate_per_s = Some(2_000);
    let b = client.batches().start(request).await.unwrap();
    assert_eq!(b.selected, MANY as u64);
    eventually_for(
        Duration::from_secs(300),
        "the batch gets halfway",
        || async {
            (client.batches().describe("many").await.unwrap().done >= (MANY / 2) as u64)
                .then_some(())
        },
    )
    .await;
    faults.crash_at(faults.commits() + 1, Crash::AppliedUnacked);
    faults.crashed().await;
    drop(client);
    drop(first);

    let second = Engine::builder()
        .poll_interval(POLL)
        .store(store)
        .workflow::<Live>()
        .build()
        .await
        .unwrap();
    let client = second.client();
    let at_crash = client.batches().describe("many").await.unwrap();
    assert_eq!(at_crash.status, BatchStatus::Running);
    assert!(
        at_crash.done >= (MANY / 2) as u64 - 100 && at_crash.done < MANY as u64,
        "the first engine died halfway: {at_crash:?}"
    );
    let b = tokio::time::timeout(
        Duration::from_secs(600),
        client.batches().wait("many", POLL),
    )
    .await
    .expect("the second engine finishes the batch")
    .unwrap();
    assert_eq!(b.status, BatchStatus::Completed, "{b:?}");
    assert_eq!(
        (b.selected, b.done, b.failed),
        (MANY as u64, MANY as u64, 0),
        "{b:?}"
    );
    let mut wrong = Vec::new();
    for i in 0..MANY {
        let id = format!("m-{i}");
        let n = pokes(&client, &id).await;
        if n != 1 {
            wrong.push((id, n));
        }
    }
    assert!(
        wrong.is_empty(),
        "runs not signalled exactly once: {:?}",
        &wrong[..wrong.len().min(20)]
    );
    second.shutdown().await;
}

/// Starts `request` and waits for it to complete, having acted on `n` runs without a failure.
async fn completed(client: &Client, request: BatchRequest, n: u64) -> BatchDescription {
    let b = client.batches().start(request).await.unwrap();
    let b = client.batches().wait(&b.batch_id, POLL).await.unwrap();
    assert_eq!(
        (b.status, b.done, b.failed),
        (BatchStatus::Completed, n, 0),
        "{b:?}"
    );
    b
}

/// Pause, then unpause, then delete by batch: the paused runs take no signal until the unpause
/// batch (describe names the batch as who paused), the other tag's runs are left alone, and
/// the delete batch removes the selected runs.
async fn pause_unpause_and_delete_batches(backend: Backend) {
    let engine = builder(backend, "batch_pause")
        .workflow::<Live>()
        .build()
        .await
        .unwrap();
    let client = engine.client();
    start_live(&client, "p", 5, "p").await;
    start_live(&client, "q", 3, "q").await;
    let tagged = |tag: &str| ListFilter {
        search: vec![("tag".into(), SearchValue::from(tag))],
        ..Default::default()
    };
    let run = |action: BatchAction| {
        let mut request = BatchRequest::new(tagged("p"), action);
        request.reason = "provider down".into();
        request
    };
    let b = completed(&client, run(BatchAction::Pause), 5).await;
    for i in 0..5 {
        let d = client.describe(&format!("p-{i}")).await.unwrap();
        let paused = d.paused.expect("the batch paused it");
        assert_eq!(paused.reason, "provider down");
        assert_eq!(paused.by, format!("batch {}", b.batch_id));
        client
            .handle::<Live>(&format!("p-{i}"))
            .poke(1)
            .await
            .unwrap();
    }
    for i in 0..3 {
        let d = client.describe(&format!("q-{i}")).await.unwrap();
        assert!(d.paused.is_none(), "q-{i} is not selected");
    }
    let listed = client.list(tagged("p")).await.unwrap();
    assert!(listed.iter().all(|r| r.paused), "{listed:?}");

    completed(&client, run(BatchAction::Unpause), 5).await;
    for i in 0..5 {
        let id = format!("p-{i}");
        assert!(client.describe(&id).await.unwrap().paused.is_none());
        let client = client.clone();
        eventually("the held signal applies after the unpause", || {
            let (client, id) = (client.clone(), id.clone());
            async move { (pokes(&client, &id).await == 1).then_some(()) }
        })
        .await;
    }

    completed(&client, run(BatchAction::Delete), 5).await;
    for i in 0..5 {
        let err = client.describe(&format!("p-{i}")).await.unwrap_err();
        assert!(matches!(err, WfError::NotFound { .. }), "p-{i}: {err}");
    }
    assert_eq!(client.count(ListFilter::default()).await.unwrap(), 3);
    engine.shutdown().await;
}

/// The case that matters: runs failed on a bug; the code is fixed; one reset batch to their
/// last good task completes them all, each reset recording the batch as who did it and why.
/// The batch resets the runs it selected, never a later run of their chains: run again over
/// the same (failed) runs it resets none of them twice.
async fn a_reset_batch_completes_runs_failed_on_a_bug_once_fixed(backend: Backend) {
    let engines = shared_store(backend, "batch_reset_fix");
    let buggy = engines()
        .workflow::<Buggy>()
        .activities(tools())
        .build()
        .await
        .unwrap();
    let client = buggy.client();
    let mut failed_runs = Vec::new();
    for i in 0..4u32 {
        let h = client.start::<Buggy>(&format!("bug-{i}"), i).await.unwrap();
        let err = h.result().await.unwrap_err();
        assert!(matches!(err, WfError::WorkflowFailed(_)), "{err:?}");
        failed_runs.push(h.describe().await.unwrap().run_id);
    }
    buggy.shutdown().await;

    let fixed = engines()
        .workflow::<Fixed>()
        .activities(tools())
        .build()
        .await
        .unwrap();
    let client = fixed.client();
    let failed = ListFilter {
        workflow_type: Some("buggy".into()),
        status: Some(RunStatus::Failed),
        ..Default::default()
    };
    let action = BatchAction::Reset {
        to: ResetPoint::LastGoodTask,
        drop_messages: false,
    };
    let mut request = BatchRequest::new(failed.clone(), action.clone());
    request.batch_id = Some("fix".into());
    request.reason = "fixed the bug".into();
    let b = completed(&client, request, 4).await;
    assert_eq!(b.action, action);
    for i in 0..4u32 {
        let h = client.handle::<Fixed>(&format!("bug-{i}"));
        assert_eq!(h.result().await.unwrap(), (i + 1) * 10, "bug-{i}");
        let origin = h.describe().await.unwrap().repaired_from.unwrap();
        assert_eq!(origin.kind, RepairKind::Reset);
        assert_eq!(origin.run_id, failed_runs[i as usize]);
        assert_eq!(origin.reason, "fixed the bug");
        assert_eq!(origin.identity, "batch fix");
    }
    // The failed runs are still failed, and selected again: each is no longer its workflow
    // id's latest run, so the batch refuses to reset it (counted as failed) and the completed
    // runs stay as they are.
    let again = client
        .batches()
        .start(BatchRequest::new(failed.clone(), action.clone()))
        .await
        .unwrap();
    let again = client.batches().wait(&again.batch_id, POLL).await.unwrap();
    assert_eq!((again.done, again.failed), (0, 4), "{again:?}");
    assert!(
        again
            .last_error
            .as_deref()
            .unwrap()
            .contains("not the latest run"),
        "{again:?}"
    );
    for i in 0..4 {
        let d = client.describe(&format!("bug-{i}")).await.unwrap();
        assert_eq!(
            d.status,
            RunStatus::Completed,
            "bug-{i} was not reset twice"
        );
    }
    // Only the latest runs: none is failed any more.
    let latest = ListFilter {
        latest_only: true,
        ..failed
    };
    let none = client
        .batches()
        .start(BatchRequest::new(latest, action))
        .await
        .unwrap();
    assert_eq!(none.selected, 0);
    // An event id is one run's point: a batch refuses it.
    let event = BatchAction::Reset {
        to: ResetPoint::Event(3),
        drop_messages: false,
    };
    let err = client
        .batches()
        .start(BatchRequest::new(of_type("buggy"), event))
        .await
        .unwrap_err();
    assert!(matches!(err, WfError::InvalidArgument(_)), "{err}");
    fixed.shutdown().await;
}

/// A reset batch of running runs to their first task: each old run closes as reset, and the
/// new one took the old run's signals again, once each; with `drop_messages`, none.
async fn a_reset_batch_reapplies_or_drops_later_signals(backend: Backend) {
    let engine = builder(backend, "batch_reset_live")
        .workflow::<Live>()
        .build()
        .await
        .unwrap();
    let client = engine.client();
    start_live(&client, "keep", 3, "keep").await;
    start_live(&client, "drop", 3, "drop").await;
    let mut old_runs = Vec::new();
    for id in ["keep-0", "keep-1", "keep-2", "drop-0", "drop-1", "drop-2"] {
        let h = client.handle::<Live>(id);
        h.poke(2).await.unwrap();
        h.poke(3).await.unwrap();
        assert_eq!(pokes(&client, id).await, 5);
        old_runs.push(h.describe().await.unwrap().run_id);
    }
    let tagged = |tag: &str| ListFilter {
        status: Some(RunStatus::Running),
        search: vec![("tag".into(), SearchValue::from(tag))],
        ..Default::default()
    };
    for (tag, drop_messages) in [("keep", false), ("drop", true)] {
        let action = BatchAction::Reset {
            to: ResetPoint::FirstTask,
            drop_messages,
        };
        completed(&client, BatchRequest::new(tagged(tag), action), 3).await;
    }
    let runs = client.list(ListFilter::default()).await.unwrap();
    for (i, id) in ["keep-0", "keep-1", "keep-2", "drop-0", "drop-1", "drop-2"]
        .iter()
        .enumerate()
    {
        let old = runs.iter().find(|r| r.run_id == old_runs[i]).unwrap();
        assert_eq!(old.status, RunStatus::Reset, "{id}'s old run");
        let d = client.describe(id).await.unwrap();
        assert_ne!(d.run_id, old_runs[i]);
        assert_eq!(d.status, RunStatus::Running);
        let want = if id.starts_with("keep") { 5 } else { 0 };
        assert_eq!(pokes(&client, id).await, want, "{id}");
    }
    engine.shutdown().await;
}

both!(
    a_reset_batch_completes_runs_failed_on_a_bug_once_fixed,
    a_reset_batch_reapplies_or_drops_later_signals,
    signal_batch_acts_on_each_selected_run,
    terminate_batch_by_status_and_search,
    cancelled_batch_stops,
    bad_batches_are_refused,
    pause_unpause_and_delete_batches,
    batch_survives_its_engine_dying_halfway,
);
