//! Retention: closed runs older than a period are purged (on demand with `Client::purge`, or by
//! the engine's background task with `EngineBuilder::retention`), answer `NotFound` afterwards
//! and may be started again; live runs, their dedupe ids and a running parent's child results
//! stay. Time moves with the test clock, not the wall clock.

mod common;
use common::*;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};
use wf_sdk::prelude::*;
use wf_sdk::{client::PurgeRequest, history::EventKind};

const DAY: Duration = Duration::from_secs(86_400);

/// Returns its input at once.
#[derive(Default)]
pub struct Quick;

#[workflow]
impl Quick {
    #[run]
    async fn run(_ctx: &mut WorkflowContext<Self>, n: u32) -> Result<u32, WorkflowError> {
        Ok(n)
    }
}

/// Runs until told to finish; counts the signals and updates it applied.
#[derive(Default)]
pub struct Live {
    pokes: u32,
    done: bool,
}

#[workflow]
impl Live {
    #[run]
    async fn run(ctx: &mut WorkflowContext<Self>) -> Result<u32, WorkflowError> {
        ctx.wait_condition(|s| s.done).await;
        Ok(ctx.state(|s| s.pokes))
    }

    #[signal]
    fn poke(&mut self) {
        self.pokes += 1;
    }

    #[signal]
    fn finish(&mut self) {
        self.done = true;
    }

    #[update]
    fn bump(&mut self) -> Result<u32, UpdateError> {
        self.pokes += 1;
        Ok(self.pokes)
    }

    #[query]
    fn pokes(&self) -> u32 {
        self.pokes
    }
}

/// Waits for one child (on the default task queue) and returns its result plus one.
#[derive(Default)]
pub struct Parent;

#[workflow]
impl Parent {
    #[run]
    async fn run(ctx: &mut WorkflowContext<Self>, n: u32) -> Result<u32, WorkflowError> {
        let child = ctx
            .child::<Quick>("the-child", &n)
            .task_queue("default")
            .await;
        child
            .map(|v| v + 1)
            .map_err(|e| WorkflowError::new(e.to_string()))
    }
}

fn at(clock: &TestClock) -> SystemTime {
    UNIX_EPOCH + Duration::from_millis(clock.now_ms() as u64)
}

fn is_not_found<T: std::fmt::Debug>(r: Result<T, WfError>) -> bool {
    matches!(r, Err(WfError::NotFound { .. }))
}

/// Whether every way of reaching `workflow_id` says it is not found.
async fn assert_purged(client: &Client, workflow_id: &str) {
    assert!(
        is_not_found(client.describe(workflow_id).await),
        "{workflow_id}: describe"
    );
    assert!(
        is_not_found(client.history(workflow_id).await),
        "{workflow_id}: history"
    );
    let h = client.handle::<Live>(workflow_id);
    assert!(is_not_found(h.pokes().await), "{workflow_id}: query");
    assert!(is_not_found(h.poke().await), "{workflow_id}: signal");
    assert!(is_not_found(h.bump().await), "{workflow_id}: update");
    let listed = client.list(Default::default()).await.unwrap();
    assert!(
        listed.iter().all(|r| r.workflow_id != workflow_id),
        "{workflow_id} is still listed: {listed:?}"
    );
}

async fn status(client: &Client, workflow_id: &str) -> RunStatus {
    client.describe(workflow_id).await.unwrap().status
}

/// An engine on `backend` running `Quick` and `Live` on `clock`, with this retention if any.
async fn engine(backend: Backend, tag: &str, clock: &TestClock, keep: Option<Duration>) -> Engine {
    let b = builder(backend, tag).clock(clock.clone());
    let b = match keep {
        Some(period) => b.retention(period),
        None => b,
    };
    b.workflow::<Quick>()
        .workflow::<Live>()
        .build()
        .await
        .unwrap()
}

/// Starts `old-0` .. `old-{n-1}` (`Quick`) and waits until they have all completed.
async fn closed_runs(client: &Client, n: u32) {
    for i in 0..n {
        client.start::<Quick>(&format!("old-{i}"), i).await.unwrap();
    }
    for i in 0..n {
        let h = client.handle::<Quick>(&format!("old-{i}"));
        assert_eq!(h.result().await.unwrap(), i);
    }
}

/// An engine with `n` runs closed two days ago and a live run: the cutoff of one day ago
/// takes the closed ones.
async fn old_and_live(
    backend: Backend,
    tag: &str,
    n: u32,
) -> (Engine, Client, WorkflowHandle<Live>, SystemTime) {
    let clock = TestClock::new();
    let engine = engine(backend, tag, &clock, None).await;
    let client = engine.client();
    closed_runs(&client, n).await;
    let live = client.start::<Live>("live", ()).await.unwrap();
    clock.advance(2 * DAY);
    let cutoff = at(&clock) - DAY;
    (engine, client, live, cutoff)
}

async fn purge_on_demand_removes_old_closed_runs_only(backend: Backend) {
    let clock = TestClock::new();
    let engine = engine(backend, "purge-demand", &clock, None).await;
    let client = engine.client();
    // Old: two closed runs (one terminated) and a live run with a dedupe id, all from day 0.
    let old = client.start::<Quick>("old-1", 1).await.unwrap();
    assert_eq!(old.result().await.unwrap(), 1);
    let ended = client.start::<Live>("old-2", ()).await.unwrap();
    client.terminate("old-2", "not needed").await.unwrap();
    let live = client.start::<Live>("live", ()).await.unwrap();
    live.poke().signal_id("p-1").await.unwrap();
    clock.advance(10 * DAY);
    // New: closed on day 10.
    let new = client.start::<Quick>("new", 3).await.unwrap();
    assert_eq!(new.result().await.unwrap(), 3);
    let cutoff = at(&clock) - 5 * DAY;
    // `list` carries the times retention goes by.
    let listed = client.list(Default::default()).await.unwrap();
    let info = |id: &str| listed.iter().find(|r| r.workflow_id == id).unwrap().clone();
    let described = client.describe("old-1").await.unwrap();
    assert_eq!(info("old-1").started_at, described.started_at);
    assert_eq!(info("old-1").closed_at, described.closed_at);
    assert!(info("old-1").closed_at.unwrap() < cutoff);
    assert_eq!(info("new").closed_at, Some(at(&clock)));
    assert_eq!(info("live").closed_at, None);

    let counted = client
        .purge(PurgeRequest {
            dry_run: true,
            ..PurgeRequest::closed_before(cutoff)
        })
        .await
        .unwrap();
    assert_eq!((counted.runs, counted.more), (2, false));
    assert_eq!(
        status(&client, "old-1").await,
        RunStatus::Completed,
        "a dry run deletes nothing"
    );
    assert_eq!(client.purge_closed_before(cutoff).await.unwrap(), 2);

    assert_purged(&client, "old-1").await;
    assert_purged(&client, "old-2").await;
    assert!(is_not_found(ended.result().await));
    assert_eq!(status(&client, "new").await, RunStatus::Completed);
    assert_eq!(new.result().await.unwrap(), 3);
    // The live run (started before the cutoff) is untouched, its dedupe ids too.
    assert_eq!(status(&client, "live").await, RunStatus::Running);
    live.poke().signal_id("p-1").await.unwrap();
    assert_eq!(
        live.pokes().await.unwrap(),
        1,
        "signal id p-1 still deduplicates"
    );
    assert_eq!(live.bump().await.unwrap(), 2);
    live.finish().await.unwrap();
    assert_eq!(live.result().await.unwrap(), 2);
    // A purged workflow id starts again.
    let again = client.start::<Quick>("old-1", 7).await.unwrap();
    assert_eq!(again.result().await.unwrap(), 7);
    assert_eq!(client.purge_closed_before(cutoff).await.unwrap(), 0);
    engine.shutdown().await;
}

async fn retention_purges_closed_runs_in_the_background(backend: Backend) {
    let clock = TestClock::new();
    let engine = engine(backend, "retention-task", &clock, Some(7 * DAY)).await;
    let client = engine.client();
    let a = client.start::<Quick>("a", 1).await.unwrap();
    assert_eq!(a.result().await.unwrap(), 1);
    let live = client.start::<Live>("live", ()).await.unwrap();
    clock.advance(3 * DAY);
    let b = client.start::<Quick>("b", 2).await.unwrap();
    assert_eq!(b.result().await.unwrap(), 2);

    // Day 8: `a` (closed on day 0) is past the period, `b` (day 3) is not.
    clock.advance(5 * DAY);
    eventually("a purged", || async {
        is_not_found(client.describe("a").await).then_some(())
    })
    .await;
    assert_purged(&client, "a").await;
    assert_eq!(status(&client, "b").await, RunStatus::Completed);
    assert_eq!(status(&client, "live").await, RunStatus::Running);

    // Day 11: `b` goes too; the live run, eleven days old, stays.
    clock.advance(3 * DAY);
    eventually("b purged", || async {
        is_not_found(client.describe("b").await).then_some(())
    })
    .await;
    assert_eq!(status(&client, "live").await, RunStatus::Running);
    live.poke().await.unwrap();
    live.finish().await.unwrap();
    assert_eq!(live.result().await.unwrap(), 1);

    // Closed on day 11, it goes after day 18.
    clock.advance(6 * DAY);
    assert_eq!(status(&client, "live").await, RunStatus::Completed);
    clock.advance(2 * DAY);
    eventually("live purged once closed for the period", || async {
        is_not_found(client.describe("live").await).then_some(())
    })
    .await;
    engine.shutdown().await;
}

/// A child closes while its parent's engine is away: its result waits in the parent's inbox.
/// Purging the child then leaves the parent that result, which it gets when it runs again.
async fn a_running_parent_gets_the_result_of_a_purged_child(backend: Backend) {
    let clock = TestClock::new();
    let engines = shared_store(backend, "purge-child");
    // The parents' engine serves only the `parents` queue: without it, a parent does not run.
    let parents_engine = || async {
        let b = engines().clock(clock.clone()).task_queue("parents");
        b.workflow::<Parent>().build().await.unwrap()
    };
    let parents = parents_engine().await;
    let parent = parents
        .client()
        .start::<Parent>("parent", 41)
        .await
        .unwrap();
    eventually("the child started", || async {
        let history = parent.history().await.unwrap();
        let started = count(&history, |k| {
            matches!(k, EventKind::ChildWorkflowStarted { .. })
        });
        (started == 1).then_some(())
    })
    .await;
    parents.shutdown().await;

    let children = engines()
        .clock(clock.clone())
        .workflow::<Quick>()
        .build()
        .await
        .unwrap();
    let client = children.client();
    let child = client.handle::<Quick>("the-child");
    assert_eq!(child.result().await.unwrap(), 41);
    assert_eq!(status(&client, "parent").await, RunStatus::Running);
    clock.advance(2 * DAY);
    assert_eq!(
        client.purge_closed_before(at(&clock) - DAY).await.unwrap(),
        1
    );
    assert!(is_not_found(client.describe("the-child").await));
    assert_eq!(status(&client, "parent").await, RunStatus::Running);

    let parents = parents_engine().await;
    let parent = parents.client().handle::<Parent>("parent");
    assert_eq!(parent.result().await.unwrap(), 42);
    parents.shutdown().await;
    children.shutdown().await;
}

/// The purge holds nothing between its batches: between two of them, a live run takes
/// signals and updates, a new run starts and finishes, and the purge then goes on to its end
/// without touching them.
async fn live_runs_commit_between_purge_batches(backend: Backend) {
    const OLD: u32 = 12;
    let (engine, client, live, cutoff) = old_and_live(backend, "purge-between", OLD).await;
    let batch = |n| PurgeRequest {
        batch: n,
        ..PurgeRequest::closed_before(cutoff)
    };

    let mut purged = 0;
    let mut rounds = 0;
    loop {
        let report = client.purge(batch(3)).await.unwrap();
        assert!(report.runs <= 3);
        purged += report.runs;
        rounds += 1;
        // Between batches: commits of a live run and of a new one.
        live.poke().await.unwrap();
        assert_eq!(live.bump().await.unwrap(), 2 * rounds);
        let fresh = client
            .start::<Quick>(&format!("fresh-{rounds}"), rounds)
            .await
            .unwrap();
        assert_eq!(fresh.result().await.unwrap(), rounds);
        if !report.more {
            break;
        }
    }
    assert_eq!(purged, u64::from(OLD));
    assert!(
        rounds >= 4,
        "{OLD} runs in batches of 3 take at least 4 calls"
    );
    assert_eq!(live.pokes().await.unwrap(), 2 * rounds);
    for i in 1..=rounds {
        assert_eq!(
            status(&client, &format!("fresh-{i}")).await,
            RunStatus::Completed
        );
    }
    engine.shutdown().await;
}

/// A purge of many runs, batch after batch, while a live run takes updates at the same time:
/// every update is answered, every old run goes, nothing live is lost.
async fn a_concurrent_purge_and_live_updates_both_complete(backend: Backend) {
    const OLD: u32 = 120;
    let (engine, client, live, cutoff) = old_and_live(backend, "purge-concurrent", OLD).await;

    let purged = Arc::new(AtomicU64::new(0));
    let purger = {
        let (client, purged) = (client.clone(), purged.clone());
        tokio::spawn(async move {
            loop {
                let request = PurgeRequest {
                    batch: 2,
                    ..PurgeRequest::closed_before(cutoff)
                };
                let report = client.purge(request).await.unwrap();
                purged.fetch_add(report.runs, Ordering::SeqCst);
                if !report.more {
                    break;
                }
                tokio::task::yield_now().await;
            }
        })
    };
    let mut answers = Vec::new();
    for _ in 0..20 {
        answers.push(live.bump().await.unwrap());
    }
    purger.await.unwrap();
    assert_eq!(answers, (1..=20).collect::<Vec<u32>>());
    assert_eq!(purged.load(Ordering::SeqCst), u64::from(OLD));
    assert_eq!(live.pokes().await.unwrap(), 20);
    assert_eq!(status(&client, "live").await, RunStatus::Running);
    assert!(is_not_found(client.describe("old-0").await));
    engine.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_zero_retention_period_is_refused() {
    let built = Engine::builder()
        .retention(Duration::ZERO)
        .workflow::<Quick>()
        .build()
        .await;
    match built {
        Err(WfError::InvalidConfig(message)) => {
            assert!(message.contains("retention"), "{message}")
        }
        other => panic!("expected InvalidConfig, got {other:?}"),
    }
}

both!(
    purge_on_demand_removes_old_closed_runs_only,
    retention_purges_closed_runs_in_the_background,
    a_running_parent_gets_the_result_of_a_purged_child,
    live_runs_commit_between_purge_batches,
    a_concurrent_purge_and_live_updates_both_complete,
);
