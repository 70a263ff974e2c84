//! Workflow features beyond messages: wait_for_signal, signal/update-with-start, versioning
//! with patches and build ids, cancellation.

mod common;
use common::*;
use std::sync::Arc;
use std::time::{Duration, UNIX_EPOCH};
use wf_sdk::prelude::*;
use wf_sdk::{
    error::SignalWaitError,
    history::EventKind,
    store::{MemoryStore, Store},
    workflow::WorkflowDefinition,
};

// ---------------------------------------------------------------------------------------------
// wait_for_signal

#[derive(Default)]
pub struct Confirm {
    log: Vec<String>,
}

#[workflow]
impl Confirm {
    #[run]
    async fn run(ctx: &mut WorkflowContext<Self>) -> Result<Vec<String>, WorkflowError> {
        let start = ctx.now();
        let since =
            |t: std::time::SystemTime| t.duration_since(start).unwrap_or_default().as_secs();
        let mut log = Vec::new();
        // A zero timeout only takes what is already there: no timer.
        match ctx
            .wait_for_signal::<String>("confirm")
            .timeout(Duration::ZERO)
            .await
        {
            Err(SignalWaitError::Timeout(t)) => {
                log.push(format!("zero: timeout at +{}s", since(t.deadline)))
            }
            other => log.push(format!("zero: {other:?}")),
        }
        match ctx
            .wait_for_signal::<String>("confirm")
            .timeout(Duration::from_secs(3600))
            .await
        {
            Ok(v) => log.push(format!("got {v}")),
            Err(SignalWaitError::Timeout(t)) => {
                log.push(format!("timeout at +{}s", since(t.deadline)))
            }
            Err(e) => return Err(e.into()),
        }
        ctx.state_mut(|s| s.log = log.clone());
        // The signal sent after that timeout was buffered for this wait.
        let late = ctx.wait_for_signal::<String>("confirm").await?;
        log.push(format!("late {late}"));
        ctx.state_mut(|s| s.log = log.clone());
        ctx.sleep(Duration::from_secs(10)).await?;
        // Past its deadline, but a signal recorded during the sleep wins.
        let deadline = start + Duration::from_secs(5);
        let r = ctx
            .wait_for_signal::<String>("confirm")
            .deadline(deadline)
            .await;
        log.push(format!("past deadline: {}", r?));
        Ok(log)
    }

    #[query]
    fn log(&self) -> Vec<String> {
        self.log.clone()
    }
}

fn timers(h: &[wf_sdk::history::HistoryEvent]) -> usize {
    count(h, |k| matches!(k, EventKind::TimerStarted { .. }))
}

async fn wait_for_signal_with_timeouts_and_buffering(backend: Backend) {
    let clock = TestClock::new();
    let engine = builder(backend, "wait-signal")
        .clock(clock.clone())
        .workflow::<Confirm>()
        .build()
        .await
        .unwrap();
    let h = engine.client().start::<Confirm>("c", ()).await.unwrap();
    eventually("the 1 h timer", || async {
        (timers(&h.history().await.ok()?) == 1).then_some(())
    })
    .await;
    clock.advance(Duration::from_secs(3600));
    eventually("the timeout", || async {
        (h.log().await.ok()?.len() == 2).then_some(())
    })
    .await;
    h.signal("confirm", &"late-1".to_string()).await.unwrap();
    eventually("the 10 s sleep", || async {
        (timers(&h.history().await.ok()?) == 2).then_some(())
    })
    .await;
    h.signal("confirm", &"early-2".to_string()).await.unwrap();
    eventually("the signal recorded", || async {
        let n = count(&h.history().await.ok()?, |k| {
            matches!(k, EventKind::SignalReceived { .. })
        });
        (n == 2).then_some(())
    })
    .await;
    clock.advance(Duration::from_secs(10));
    let log = h.result().await.unwrap();
    assert_eq!(
        log,
        vec![
            "zero: timeout at +0s",
            "timeout at +3600s",
            "late late-1",
            "past deadline: early-2"
        ],
    );
    // Replay (a fresh engine on the same store) reuses the recorded deadlines.
    if backend == Backend::Memory {
        return;
    }
    let hist = h.history().await.unwrap();
    let fire_at: Vec<i64> = hist
        .iter()
        .filter_map(|e| match e.kind {
            EventKind::TimerStarted { fire_at_ms, .. } => Some(fire_at_ms),
            _ => None,
        })
        .collect();
    assert_eq!(fire_at.len(), 2);
    assert_eq!(fire_at[0] - hist[0].time_ms, 3_600_000);
}

// ---------------------------------------------------------------------------------------------
// signal-with-start and update-with-start

#[derive(Default)]
pub struct Tally {
    total: u32,
    closed: bool,
}

#[workflow]
impl Tally {
    #[run]
    async fn run(ctx: &mut WorkflowContext<Self>, base: u32) -> Result<u32, WorkflowError> {
        ctx.wait_condition(|s| s.closed).await;
        Ok(ctx.state(|s| s.total) + base)
    }

    #[signal]
    fn add(&mut self, n: u32) {
        self.total += n;
    }

    #[update]
    fn add_and_get(&mut self, n: u32) -> Result<u32, UpdateError> {
        self.total += n;
        Ok(self.total)
    }

    #[signal]
    fn close(&mut self) {
        self.closed = true;
    }
}

async fn signal_and_update_with_start(backend: Backend) {
    let engine = builder(backend, "with-start")
        .workflow::<Tally>()
        .build()
        .await
        .unwrap();
    let client = engine.client();
    let h = client.handle::<Tally>("t");
    // Not running: starts it, the signal applied before run's first step.
    h.signal_with_start(
        100,
        h.add(1).signal_id("s-1"),
        IdConflictPolicy::UseExisting,
    )
    .await
    .unwrap();
    // Running: delivers only (the input is ignored), deduped by id.
    h.signal_with_start(
        999,
        h.add(1).signal_id("s-1"),
        IdConflictPolicy::UseExisting,
    )
    .await
    .unwrap();
    assert_eq!(
        h.update_with_start(999, h.add_and_get(5), IdConflictPolicy::UseExisting)
            .await
            .unwrap(),
        6
    );
    assert!(matches!(
        h.signal_with_start(1, h.add(1), IdConflictPolicy::Fail)
            .await,
        Err(WfError::AlreadyStarted { .. })
    ));
    h.close().await.unwrap();
    assert_eq!(h.result().await.unwrap(), 106);
    // Closed: update-with-start starts a fresh run and returns the update's outcome.
    let h2 = client.handle::<Tally>("t");
    assert_eq!(
        h2.update_with_start(7, h2.add_and_get(2), IdConflictPolicy::UseExisting)
            .await
            .unwrap(),
        2
    );
    let history = h2.history().await.unwrap();
    assert!(
        matches!(history[1].kind, EventKind::UpdateAccepted { .. }),
        "{:?}",
        history[1].kind
    );
}

/// Waits for a signal with a timeout too long to represent: "practically never".
#[derive(Default)]
pub struct Patient {
    done: bool,
}

#[workflow]
impl Patient {
    #[run]
    async fn run(ctx: &mut WorkflowContext<Self>) -> Result<String, WorkflowError> {
        let held = ctx.wait_condition(|s| s.done).timeout(Duration::MAX).await;
        let slept = ctx.sleep(Duration::from_millis(u64::MAX)).await.is_ok();
        Ok(format!("signalled {held}, slept {slept}"))
    }

    #[signal]
    fn done(&mut self) {
        self.done = true;
    }
}

async fn timers_of_absurd_durations_fire_never_not_at_once(backend: Backend) {
    let clock = TestClock::new();
    let engine = builder(backend, "absurd-timer")
        .clock(clock.clone())
        .workflow::<Patient>()
        .build()
        .await
        .unwrap();
    let h = engine
        .client()
        .start::<Patient>("patient", ())
        .await
        .unwrap();
    // The timer's fire time saturates (it used to overflow: a panic, or a time in the past).
    let fire_times = |history: Vec<wf_sdk::history::HistoryEvent>| -> Vec<i64> {
        history
            .iter()
            .filter_map(|e| match e.kind {
                EventKind::TimerStarted { fire_at_ms, .. } => Some(fire_at_ms),
                _ => None,
            })
            .collect()
    };
    assert_eq!(fire_times(h.history().await.unwrap()), [i64::MAX]);
    assert_eq!(h.describe().await.unwrap().task_failure, None);
    clock.advance(Duration::from_secs(100 * 365 * 86_400));
    h.done().await.unwrap();
    let d = eventually("the second timer", || async {
        let history = h.history().await.ok()?;
        (fire_times(history.clone()).len() == 2).then_some(history)
    })
    .await;
    assert_eq!(fire_times(d), [i64::MAX, i64::MAX]);
    assert_eq!(h.describe().await.unwrap().status, RunStatus::Running);
    h.terminate("enough").await.unwrap();
}

both!(
    wait_for_signal_with_timeouts_and_buffering,
    signal_and_update_with_start,
    timers_of_absurd_durations_fire_never_not_at_once,
);

// ---------------------------------------------------------------------------------------------
// Versioning: one history recorded by old code, replayed by patched code.

#[derive(Default)]
pub struct Greeter1 {
    go: bool,
}

#[workflow(name = "greeter")]
impl Greeter1 {
    #[run]
    async fn run(ctx: &mut WorkflowContext<Self>) -> Result<String, WorkflowError> {
        let a = ctx.activity(Tools::echo, "hello".to_string()).await?;
        ctx.wait_condition(|s| s.go).await;
        Ok(a)
    }

    #[signal]
    fn go(&mut self) {
        self.go = true;
    }
}

/// The new code adds a step, guarded by a patch.
#[derive(Default)]
pub struct Greeter2 {
    go: bool,
}

#[workflow(name = "greeter")]
impl Greeter2 {
    #[run]
    async fn run(ctx: &mut WorkflowContext<Self>) -> Result<String, WorkflowError> {
        let mut a = ctx.activity(Tools::echo, "hello".to_string()).await?;
        if ctx.patched("add-world") {
            a += &ctx.activity(Tools::echo, " world".to_string()).await?;
        }
        ctx.wait_condition(|s| s.go).await;
        Ok(a)
    }

    #[signal]
    fn go(&mut self) {
        self.go = true;
    }
}

/// Later: every old run is gone; the patch is deprecated.
#[derive(Default)]
pub struct Greeter3 {
    go: bool,
}

#[workflow(name = "greeter")]
impl Greeter3 {
    #[run]
    async fn run(ctx: &mut WorkflowContext<Self>) -> Result<String, WorkflowError> {
        let mut a = ctx.activity(Tools::echo, "hello".to_string()).await?;
        ctx.deprecate_patch("add-world");
        a += &ctx.activity(Tools::echo, " world".to_string()).await?;
        ctx.wait_condition(|s| s.go).await;
        Ok(a)
    }

    #[signal]
    fn go(&mut self) {
        self.go = true;
    }
}

async fn run_greeter<W: WorkflowDefinition>(
    store: Arc<dyn Store>,
    build: &str,
    start: Option<&str>,
    finish: &str,
) -> String {
    let engine = Engine::builder()
        .store(store)
        .build_id(build)
        .poll_interval(Duration::from_millis(20))
        .workflow::<W>()
        .activities(tools())
        .build()
        .await
        .unwrap();
    let client = engine.client();
    if let Some(id) = start {
        client
            .start_raw(
                id,
                "greeter",
                wf_sdk::payload::Payload::encode(&()).unwrap(),
                Default::default(),
            )
            .await
            .unwrap();
        eventually("first activity", || async {
            let hist = client.history(id).await.ok()?;
            (count(&hist, |k| matches!(k, EventKind::ActivityCompleted { .. })) >= 1).then_some(())
        })
        .await;
        tokio::time::sleep(Duration::from_millis(30)).await;
    }
    client
        .signal_raw(
            finish,
            "go",
            wf_sdk::payload::Payload::encode(&()).unwrap(),
            None,
        )
        .await
        .unwrap();
    let out = client
        .result_raw(finish)
        .await
        .unwrap()
        .decode::<String>()
        .unwrap();
    engine.shutdown().await;
    out
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn patched_code_replays_old_histories_on_the_old_branch() {
    let store: Arc<dyn Store> = Arc::new(MemoryStore::new());
    // v1 starts "old" and leaves it waiting.
    let engine = Engine::builder()
        .store(store.clone())
        .build_id("v1")
        .workflow::<Greeter1>()
        .activities(tools())
        .build()
        .await
        .unwrap();
    engine
        .client()
        .start_raw(
            "old",
            "greeter",
            wf_sdk::payload::Payload::encode(&()).unwrap(),
            Default::default(),
        )
        .await
        .unwrap();
    eventually("old's activity", || async {
        let hist = engine.client().history("old").await.ok()?;
        (count(&hist, |k| matches!(k, EventKind::ActivityCompleted { .. })) >= 1).then_some(())
    })
    .await;
    engine.shutdown().await;
    // v2 replays "old" (no marker: old branch) and runs "new" on the new branch.
    assert_eq!(
        run_greeter::<Greeter2>(store.clone(), "v2", None, "old").await,
        "hello"
    );
    assert_eq!(
        run_greeter::<Greeter2>(store.clone(), "v2", Some("new"), "new").await,
        "hello world"
    );
    // The old run's history shows which build ran which task.
    let engine = Engine::builder()
        .store(store.clone())
        .client_only()
        .build()
        .await
        .unwrap();
    let hist = engine.client().history("old").await.unwrap();
    let builds: Vec<Option<String>> = hist
        .iter()
        .filter_map(|e| match &e.kind {
            EventKind::WorkflowTaskCompleted { build_id, .. } => Some(build_id.clone()),
            _ => None,
        })
        .collect();
    assert_eq!(builds.first().cloned().flatten().as_deref(), Some("v1"));
    assert_eq!(builds.last().cloned().flatten().as_deref(), Some("v2"));
    // v3 (deprecated patch) replays a v2 history with the marker, and runs new ones.
    let engine2 = Engine::builder()
        .store(store.clone())
        .build_id("v2")
        .workflow::<Greeter2>()
        .activities(tools())
        .build()
        .await
        .unwrap();
    engine2
        .client()
        .start_raw(
            "mid",
            "greeter",
            wf_sdk::payload::Payload::encode(&()).unwrap(),
            Default::default(),
        )
        .await
        .unwrap();
    eventually("mid's second activity", || async {
        let hist = engine2.client().history("mid").await.ok()?;
        (count(&hist, |k| matches!(k, EventKind::ActivityCompleted { .. })) >= 2).then_some(())
    })
    .await;
    engine2.shutdown().await;
    assert_eq!(
        run_greeter::<Greeter3>(store.clone(), "v3", None, "mid").await,
        "hello world"
    );
    assert_eq!(
        run_greeter::<Greeter3>(store.clone(), "v3", Some("newer"), "newer").await,
        "hello world"
    );
    let _ = UNIX_EPOCH;
}

// ---------------------------------------------------------------------------------------------
// Cancellation

#[derive(Default)]
pub struct Job {
    cleaned: bool,
}

#[workflow]
impl Job {
    #[run]
    async fn run(ctx: &mut WorkflowContext<Self>) -> Result<String, WorkflowError> {
        let work = ctx
            .activity(Tools::hang, ())
            .start_to_close(Duration::from_secs(3600))
            .await;
        match work {
            Err(wf_sdk::error::ActivityCallError::Cancelled { .. }) => {
                // Cleanup after cancellation still runs activities normally.
                let undo = ctx.activity(Tools::echo, "undo".to_string()).await?;
                ctx.state_mut(|s| s.cleaned = undo == "undo");
                Err(WorkflowError::Cancelled)
            }
            other => Ok(format!("{other:?}")),
        }
    }

    #[query]
    fn cleaned(&self) -> bool {
        self.cleaned
    }
}

async fn cancellation_cancels_pending_work_and_runs_cleanup(backend: Backend) {
    let tools = shared_tools();
    let engine = builder(backend, "cancel")
        .workflow::<Job>()
        .shared_activities(tools.clone())
        .build()
        .await
        .unwrap();
    let h = engine.client().start::<Job>("job", ()).await.unwrap();
    eventually("the activity running", || async {
        (tools.calls.load(std::sync::atomic::Ordering::SeqCst) == 1).then_some(())
    })
    .await;
    h.cancel().await.unwrap();
    assert_eq!(
        h.result().await,
        Err(WfError::Cancelled("cancelled by a client".into()))
    );
    assert!(h.cleaned().await.unwrap());
    let d = h.describe().await.unwrap();
    assert_eq!(d.status, RunStatus::Cancelled);
    assert!(d.pending_activities.is_empty());
    let k = kinds(&h.history().await.unwrap());
    for expected in ["CancelRequested", "ActivityCancelled", "WorkflowCancelled"] {
        assert!(k.contains(&expected), "{expected} missing in {k:?}");
    }
    assert!(matches!(h.cancel().await, Err(WfError::RunFinished { .. })));
}

#[derive(Default)]
pub struct Napper;

#[workflow]
impl Napper {
    #[run]
    async fn run(ctx: &mut WorkflowContext<Self>) -> Result<(), WorkflowError> {
        ctx.sleep(Duration::from_secs(3600)).await?;
        Ok(())
    }
}

async fn cancelled_timer_ends_the_run_as_cancelled(backend: Backend) {
    let engine = builder(backend, "cancel-timer")
        .workflow::<Napper>()
        .build()
        .await
        .unwrap();
    let h = engine.client().start::<Napper>("nap", ()).await.unwrap();
    eventually("the timer", || async {
        (timers(&h.history().await.ok()?) == 1).then_some(())
    })
    .await;
    h.cancel().await.unwrap();
    assert!(matches!(h.result().await, Err(WfError::Cancelled(_))));
    let hist = h.history().await.unwrap();
    assert_eq!(
        count(&hist, |k| matches!(k, EventKind::TimerCancelled { .. })),
        1
    );
}

both!(
    cancellation_cancels_pending_work_and_runs_cleanup,
    cancelled_timer_ends_the_run_as_cancelled
);
