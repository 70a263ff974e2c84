//! Cancellation scopes: one activity, one timer or one child cancelled while the run goes on;
//! work started in a cancelled scope; dropping an activity's future does not cancel it. And
//! the running attempt's side: `ActivityContext::cancelled()` resolves when the workflow
//! cancels the activity or the run, on the engine that runs the workflow or on another one.

mod common;

use common::*;
use std::future::Future;
use std::pin::pin;
use std::sync::Arc;
use std::task::Poll;
use std::time::Duration;
use tokio::sync::watch;
use wf_sdk::prelude::*;
use wf_sdk::{
    error::{ActivityCallError, ChildError},
    history::{EventKind, Replayer},
};

/// Activities the tests hold open, or release through a gate.
pub struct Work {
    gate: Arc<watch::Sender<bool>>,
    /// How many `until_cancelled` attempts started.
    started: Arc<watch::Sender<u32>>,
    /// How many attempts saw their cancellation.
    saw_cancel: Arc<watch::Sender<u32>>,
}

/// The test's ends of a `Work`'s gate and cancellation count.
#[derive(Clone)]
struct Probes {
    gate: Arc<watch::Sender<bool>>,
    started: Arc<watch::Sender<u32>>,
    saw_cancel: Arc<watch::Sender<u32>>,
}

impl Probes {
    fn new() -> Probes {
        Probes {
            gate: Arc::new(watch::channel(false).0),
            started: Arc::new(watch::channel(0).0),
            saw_cancel: Arc::new(watch::channel(0).0),
        }
    }

    fn work(&self) -> Work {
        Work {
            gate: self.gate.clone(),
            started: self.started.clone(),
            saw_cancel: self.saw_cancel.clone(),
        }
    }

    /// Waits until `n` attempts of `until_cancelled` started.
    async fn started(&self, n: u32) {
        let mut started = self.started.subscribe();
        tokio::time::timeout(Duration::from_secs(30), started.wait_for(|s| *s >= n))
            .await
            .expect("the activity starts")
            .unwrap();
    }

    /// Waits until `n` attempts saw their cancellation: within a bound far above the
    /// milliseconds it takes, so that only a cancellation that never arrives fails.
    async fn cancellations_seen(&self, n: u32) {
        let mut seen = self.saw_cancel.subscribe();
        tokio::time::timeout(Duration::from_secs(30), seen.wait_for(|c| *c >= n))
            .await
            .expect("the running attempt hears of its cancellation")
            .unwrap();
    }
}

#[activities]
impl Work {
    /// Runs until its attempt is cancelled, then counts it.
    #[activity]
    pub async fn until_cancelled(&self, ctx: ActivityContext) -> Result<(), ActivityError> {
        self.started.send_modify(|n| *n += 1);
        ctx.cancelled().await;
        assert!(ctx.is_cancelled());
        self.saw_cancel.send_modify(|n| *n += 1);
        Err(ActivityError::non_retryable("cancelled", "stopped early"))
    }

    /// Returns once the test opens the gate.
    #[activity]
    pub async fn gated(&self, _ctx: ActivityContext) -> Result<u32, ActivityError> {
        let mut open = self.gate.subscribe();
        let _ = open.wait_for(|o| *o).await;
        Ok(7)
    }

    /// Returns its input plus one.
    #[activity]
    pub async fn add_one(&self, _ctx: ActivityContext, n: u32) -> Result<u32, ActivityError> {
        Ok(n + 1)
    }
}

/// What the `Scoped` workflow cancels.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub enum Case {
    Activity,
    Timer,
    /// A child with this workflow id.
    Child(String),
    /// Drops an activity's future without cancelling it.
    DropActivity,
    /// Awaits an activity until the run is cancelled.
    RunCancelled,
}

/// Polls `a` and `b` together: `Some(output of a)` if `a` finishes first, `None` if `b` does
/// (`a` stays usable).
async fn first<A: Future + Unpin, B: Future>(a: &mut A, b: B) -> Option<A::Output> {
    let mut b = pin!(b);
    std::future::poll_fn(|cx| {
        if let Poll::Ready(out) = std::pin::Pin::new(&mut *a).poll(cx) {
            return Poll::Ready(Some(out));
        }
        b.as_mut().poll(cx).map(|_| None)
    })
    .await
}

#[derive(Default)]
pub struct Scoped {
    stop: bool,
    finish: bool,
}

#[workflow]
impl Scoped {
    #[run]
    async fn run(ctx: &mut WorkflowContext<Self>, case: Case) -> Result<String, WorkflowError> {
        let scope = ctx.cancellation_scope();
        let outcome = match case {
            Case::Activity => {
                let mut work = scope.run(ctx.activity(Work::until_cancelled, ()));
                if first(&mut work, ctx.wait_condition(|s| s.stop))
                    .await
                    .is_some()
                {
                    return Err(WorkflowError::new("the activity ended by itself"));
                }
                scope.cancel();
                match work.await {
                    Err(ActivityCallError::Cancelled { activity }) => {
                        format!("{activity} cancelled")
                    }
                    other => format!("unexpected {other:?}"),
                }
            }
            Case::Timer => {
                let mut timer = scope.run(ctx.sleep(Duration::from_secs(3600)));
                if first(&mut timer, ctx.wait_condition(|s| s.stop))
                    .await
                    .is_some()
                {
                    return Err(WorkflowError::new("the hour passed"));
                }
                scope.cancel();
                match timer.await {
                    Err(wf_sdk::error::Cancelled) => "timer cancelled".to_string(),
                    Ok(()) => "timer fired".to_string(),
                }
            }
            Case::Child(id) => {
                let mut kid = scope.run(ctx.child::<Kid>(id, &()));
                if first(&mut kid, ctx.wait_condition(|s| s.stop))
                    .await
                    .is_some()
                {
                    return Err(WorkflowError::new("the child ended by itself"));
                }
                scope.cancel();
                match kid.await {
                    Err(ChildError::Cancelled(_)) => "child cancelled".to_string(),
                    other => format!("unexpected {other:?}"),
                }
            }
            Case::DropActivity => {
                let mut work = ctx.activity(Work::gated, ());
                if first(&mut work, ctx.wait_condition(|s| s.stop))
                    .await
                    .is_some()
                {
                    return Err(WorkflowError::new("the gate opened too early"));
                }
                drop(work);
                ctx.wait_condition(|s| s.finish).await;
                "dropped".to_string()
            }
            Case::RunCancelled => {
                ctx.activity(Work::until_cancelled, ()).await?;
                return Err(WorkflowError::new("the activity ended by itself"));
            }
        };
        // Work started in the cancelled scope is cancelled before it starts...
        let late = match scope.run(ctx.activity(Work::add_one, 1)).await {
            Err(ActivityCallError::Cancelled { .. }) => "late cancelled".to_string(),
            other => format!("late {other:?}"),
        };
        // ... and the run goes on.
        let next = ctx.activity(Work::add_one, 41).await?;
        Ok(format!("{outcome}; {late}; next {next}"))
    }

    #[signal]
    fn stop(&mut self) {
        self.stop = true;
    }

    #[signal]
    fn finish(&mut self) {
        self.finish = true;
    }
}

/// A child that runs until it is asked to cancel.
#[derive(Default)]
pub struct Kid;

#[workflow]
impl Kid {
    #[run]
    async fn run(ctx: &mut WorkflowContext<Self>, _input: ()) -> Result<(), WorkflowError> {
        ctx.cancelled().await;
        Err(WorkflowError::Cancelled)
    }
}

struct Setup {
    engine: Engine,
    probes: Probes,
}

async fn setup(backend: Backend, tag: &str) -> Setup {
    let probes = Probes::new();
    let engine = builder(backend, tag)
        .workflow::<Scoped>()
        .workflow::<Kid>()
        .activities(probes.work())
        .build()
        .await
        .unwrap();
    Setup { engine, probes }
}

/// Starts `case`, waits for `started` in its history, then signals `stop`.
async fn start_and_stop(
    s: &Setup,
    id: &str,
    case: Case,
    started: impl Fn(&EventKind) -> bool,
) -> WorkflowHandle<Scoped> {
    let h = s.engine.client().start::<Scoped>(id, case).await.unwrap();
    until_recorded(&h, "the scoped work to start", started).await;
    h.stop().await.unwrap();
    h
}

/// The recorded history replays on the same code without a divergence.
async fn replays(h: &WorkflowHandle<Scoped>) {
    let history = h.export().await.unwrap();
    Replayer::new()
        .workflow::<Scoped>()
        .workflow::<Kid>()
        .replay(&history)
        .unwrap();
}

async fn cancelling_a_scope_cancels_its_activity_and_the_run_goes_on(backend: Backend) {
    let s = setup(backend, "scope-activity").await;
    let h = start_and_stop(&s, "scope-activity", Case::Activity, |k| {
        matches!(k, EventKind::ActivityScheduled { .. })
    })
    .await;
    assert_eq!(
        h.result().await.unwrap(),
        "until_cancelled cancelled; late cancelled; next 42"
    );
    let history = h.history().await.unwrap();
    assert_eq!(
        count(&history, |k| matches!(
            k,
            EventKind::ActivityCancelled { seq: 1 }
        )),
        1
    );
    // The late activity never started: only `hang` and `add_one(41)` were scheduled.
    assert_eq!(
        count(&history, |k| matches!(
            k,
            EventKind::ActivityScheduled { .. }
        )),
        2
    );
    assert_eq!(h.describe().await.unwrap().status, RunStatus::Completed);
    replays(&h).await;
    s.engine.shutdown().await;
}

async fn cancelling_a_scope_cancels_its_timer(backend: Backend) {
    let s = setup(backend, "scope-timer").await;
    let h = start_and_stop(&s, "scope-timer", Case::Timer, |k| {
        matches!(k, EventKind::TimerStarted { .. })
    })
    .await;
    assert_eq!(
        h.result().await.unwrap(),
        "timer cancelled; late cancelled; next 42"
    );
    let history = h.history().await.unwrap();
    assert_eq!(
        count(&history, |k| matches!(
            k,
            EventKind::TimerCancelled { seq: 1 }
        )),
        1
    );
    replays(&h).await;
    s.engine.shutdown().await;
}

async fn cancelling_a_scope_cancels_its_child(backend: Backend) {
    let s = setup(backend, "scope-child").await;
    let h = start_and_stop(&s, "scope-parent", Case::Child("scope-kid".into()), |k| {
        matches!(k, EventKind::ChildWorkflowStarted { .. })
    })
    .await;
    assert_eq!(
        h.result().await.unwrap(),
        "child cancelled; late cancelled; next 42"
    );
    let history = h.history().await.unwrap();
    assert_eq!(
        count(&history, |k| matches!(
            k,
            EventKind::ChildCancelRequested { seq: 1, workflow_id } if workflow_id == "scope-kid"
        )),
        1
    );
    let kid = s.engine.client().handle::<Kid>("scope-kid");
    assert_eq!(kid.describe().await.unwrap().status, RunStatus::Cancelled);
    replays(&h).await;
    s.engine.shutdown().await;
}

async fn dropping_an_activity_future_does_not_cancel_the_activity(backend: Backend) {
    let s = setup(backend, "scope-drop").await;
    let h = start_and_stop(&s, "scope-drop", Case::DropActivity, |k| {
        matches!(k, EventKind::ActivityScheduled { .. })
    })
    .await;
    // The run dropped the future; the activity still runs to its end and is recorded.
    s.probes.gate.send_replace(true);
    until_recorded(&h, "the dropped activity's result", |k| {
        matches!(k, EventKind::ActivityCompleted { seq: 1, .. })
    })
    .await;
    h.finish().await.unwrap();
    assert_eq!(h.result().await.unwrap(), "dropped; late Ok(2); next 42");
    let history = h.history().await.unwrap();
    assert_eq!(
        count(&history, |k| matches!(
            k,
            EventKind::ActivityCancelled { .. }
        )),
        0
    );
    replays(&h).await;
    s.engine.shutdown().await;
}

async fn a_running_activity_hears_its_scope_cancelled(backend: Backend) {
    let s = setup(backend, "heard-scope").await;
    let h = s
        .engine
        .client()
        .start::<Scoped>("heard-scope", Case::Activity)
        .await
        .unwrap();
    s.probes.started(1).await;
    h.stop().await.unwrap();
    s.probes.cancellations_seen(1).await;
    h.result().await.unwrap();
    s.engine.shutdown().await;
}

async fn a_running_activity_hears_the_run_cancelled(backend: Backend) {
    let s = setup(backend, "heard-run").await;
    let h = s
        .engine
        .client()
        .start::<Scoped>("heard-run", Case::RunCancelled)
        .await
        .unwrap();
    s.probes.started(1).await;
    h.cancel().await.unwrap();
    s.probes.cancellations_seen(1).await;
    assert!(matches!(h.result().await, Err(WfError::Cancelled(_))));
    s.engine.shutdown().await;
}

/// The workflow runs on one engine, its activities on another (another process, on
/// PostgreSQL and SQLite): the cancellation reaches the attempt through the store.
async fn an_activity_on_another_engine_hears_its_cancellation(backend: Backend) {
    let engines = shared_store(backend, "heard-remote");
    let probes = Probes::new();
    let workflows = engines()
        .workflow::<Scoped>()
        .workflow::<Kid>()
        .build()
        .await
        .unwrap();
    let activities = engines().activities(probes.work()).build().await.unwrap();
    let client = workflows.client();
    let h = client
        .start::<Scoped>("heard-remote", Case::Activity)
        .await
        .unwrap();
    probes.started(1).await;
    h.stop().await.unwrap();
    probes.cancellations_seen(1).await;
    assert_eq!(
        h.result().await.unwrap(),
        "until_cancelled cancelled; late cancelled; next 42"
    );
    // The terminated run's attempt hears of it too.
    let h = client
        .start::<Scoped>("heard-remote-2", Case::RunCancelled)
        .await
        .unwrap();
    probes.started(2).await;
    h.terminate("enough").await.unwrap();
    probes.cancellations_seen(2).await;
    activities.shutdown().await;
    workflows.shutdown().await;
}

both!(
    a_running_activity_hears_its_scope_cancelled,
    a_running_activity_hears_the_run_cancelled,
    an_activity_on_another_engine_hears_its_cancellation,
    cancelling_a_scope_cancels_its_activity_and_the_run_goes_on,
    cancelling_a_scope_cancels_its_timer,
    cancelling_a_scope_cancels_its_child,
    dropping_an_activity_future_does_not_cancel_the_activity,
);
