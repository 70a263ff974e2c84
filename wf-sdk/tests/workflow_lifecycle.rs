//! Run lifecycle: messages before `run`, wait_condition with timeout, durable timers across
//! restarts, handler draining, unfinished handlers, continue-as-new carrying dedupe ids,
//! continue_as_new_suggested, deterministic time/randomness/ids.

mod common;
use common::*;
use std::time::Duration;
use wf_sdk::prelude::*;
use wf_sdk::{
    client::{IdConflictPolicy, StartOptions},
    history::EventKind,
    payload::Payload,
};

#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
pub struct Config {
    pub label: String,
    pub generation: u32,
}

#[derive(Default)]
pub struct Lifecycle {
    label: String,
    generation: u32,
    seen: Vec<String>,
    approved: bool,
    go: bool,
    stamp: Option<(i64, u64, String)>,
}

#[workflow]
impl Lifecycle {
    #[init]
    fn new(config: &Config) -> Self {
        Lifecycle {
            label: config.label.clone(),
            generation: config.generation,
            ..Default::default()
        }
    }

    #[run]
    async fn run(ctx: &mut WorkflowContext<Self>, config: Config) -> Result<String, WorkflowError> {
        let stamp = (ctx.now_ms(), ctx.random_u64(), ctx.uuid().to_string());
        ctx.state_mut(|s| s.stamp = Some(stamp));
        ctx.state_mut(|s| s.seen.push(format!("run started gen {}", s.generation)));
        let approved = ctx
            .wait_condition(|s| s.approved)
            .timeout(Duration::from_secs(24 * 3600))
            .await;
        if !approved {
            return Ok(format!("{} timed out", config.label));
        }
        ctx.wait_condition(|s| s.go).await;
        if config.generation < 2 {
            ctx.handlers_drained().await;
            let next = Config {
                label: config.label.clone(),
                generation: config.generation + 1,
            };
            return Err(ctx.continue_as_new(&next));
        }
        ctx.sleep(Duration::from_secs(60)).await?;
        Ok(ctx.state(|s| {
            format!(
                "{} done at gen {}: {}",
                s.label,
                s.generation,
                s.seen.join(", ")
            )
        }))
    }

    #[signal]
    fn note(&mut self, text: String) {
        self.seen.push(format!("{text} (label {})", self.label));
    }

    #[signal]
    fn approve(&mut self) {
        self.approved = true;
    }

    #[signal]
    fn go(&mut self) {
        self.go = true;
    }

    #[update]
    fn rename(&mut self, label: String) -> Result<String, UpdateError> {
        let old = std::mem::replace(&mut self.label, label);
        self.seen.push(format!("renamed from {old}"));
        Ok(old)
    }

    #[query]
    fn seen(&self) -> Vec<String> {
        self.seen.clone()
    }

    #[query]
    fn generation(&self) -> u32 {
        self.generation
    }

    #[query]
    fn stamp(&self) -> Option<(i64, u64, String)> {
        self.stamp.clone()
    }
}

fn cfg(label: &str) -> Config {
    Config {
        label: label.into(),
        generation: 0,
    }
}

async fn messages_before_run_are_applied_first(backend: Backend) {
    let engines = shared_store(backend, "before-run");
    let store_engine = engines()
        .client_only()
        .workflow::<Lifecycle>()
        .build()
        .await
        .unwrap();
    let client = store_engine.client();
    let h = client.start::<Lifecycle>("lc", cfg("alpha")).await.unwrap();
    h.note("early".into()).await.unwrap();
    // No worker yet: the update waits in the inbox; run it in the background.
    let update = {
        let h = h.clone();
        tokio::spawn(async move { h.rename("beta".into()).await })
    };
    tokio::time::sleep(Duration::from_millis(50)).await;
    let worker = engines().workflow::<Lifecycle>().build().await.unwrap();
    assert_eq!(update.await.unwrap().unwrap(), "alpha");
    let seen = worker
        .client()
        .handle::<Lifecycle>("lc")
        .seen()
        .await
        .unwrap();
    assert_eq!(
        seen,
        vec![
            "early (label alpha)",
            "renamed from alpha",
            "run started gen 0"
        ]
    );
}

async fn wait_condition_timeout_uses_durable_timers(backend: Backend) {
    let clock = TestClock::new();
    let engine = builder(backend, "cond-timeout")
        .clock(clock.clone())
        .workflow::<Lifecycle>()
        .build()
        .await
        .unwrap();
    let h = engine
        .client()
        .start::<Lifecycle>("lc", cfg("late"))
        .await
        .unwrap();
    eventually("the timer", || async {
        let hist = h.history().await.unwrap();
        (count(&hist, |k| matches!(k, EventKind::TimerStarted { .. })) == 1).then_some(())
    })
    .await;
    clock.advance(Duration::from_secs(24 * 3600));
    assert_eq!(h.result().await.unwrap(), "late timed out");
    // And when the condition wins, the timer is cancelled.
    let h2 = engine
        .client()
        .start::<Lifecycle>("lc2", cfg("early"))
        .await
        .unwrap();
    eventually("the second timer", || async {
        let hist = h2.history().await.unwrap();
        (count(&hist, |k| matches!(k, EventKind::TimerStarted { .. })) == 1).then_some(())
    })
    .await;
    h2.approve().await.unwrap();
    eventually("the timer cancelled", || async {
        let hist = h2.history().await.unwrap();
        (count(&hist, |k| matches!(k, EventKind::TimerCancelled { .. })) == 1).then_some(())
    })
    .await;
}

async fn continue_as_new_carries_dedupe_ids(backend: Backend) {
    let clock = TestClock::new();
    let engine = builder(backend, "can")
        .clock(clock.clone())
        .workflow::<Lifecycle>()
        .build()
        .await
        .unwrap();
    let h = engine
        .client()
        .start::<Lifecycle>("lc", cfg("chain"))
        .await
        .unwrap();
    h.note("once".into()).signal_id("n-1").await.unwrap();
    h.rename("chain2".into()).update_id("r-1").await.unwrap();
    let first_run = h.describe().await.unwrap().run_id;
    h.approve().await.unwrap();
    h.go().await.unwrap();
    let second_run = eventually("continue as new", || async {
        let d = h.describe().await.unwrap();
        (d.run_id != first_run).then_some(d.run_id)
    })
    .await;
    // Retries of the same ids in the new run: the signal is dropped, the update answers the
    // first outcome ("chain"), not the new state.
    h.note("once".into()).signal_id("n-1").await.unwrap();
    assert_eq!(
        h.rename("other".into()).update_id("r-1").await.unwrap(),
        "chain"
    );
    assert_eq!(h.generation().await.unwrap(), 1);
    let hist = h.history().await.unwrap();
    assert!(
        matches!(&hist[0].kind, EventKind::WorkflowStarted { continued_from: Some(r), .. } if *r == first_run)
    );
    assert_eq!(
        count(&hist, |k| matches!(k, EventKind::SignalReceived { .. })),
        0
    );
    assert_eq!(
        count(&hist, |k| matches!(k, EventKind::UpdateAccepted { .. })),
        0
    );
    let old = engine.client().run_history(&first_run, "lc").await.unwrap();
    assert!(
        matches!(&old.iter().rev().find(|e| e.kind.is_terminal()).unwrap().kind,
        EventKind::ContinuedAsNew { new_run_id, .. } if *new_run_id == second_run)
    );
    // Finish the chain: gen 1 -> gen 2 -> sleep 60 s -> done.
    h.approve().await.unwrap();
    h.go().await.unwrap();
    eventually("generation 2", || async {
        (h.generation().await.ok()? == 2).then_some(())
    })
    .await;
    h.approve().await.unwrap();
    h.go().await.unwrap();
    // The 60 s timer follows `go`. (Whether the 24 h approval timer exists depends on whether
    // `approve` reached the new run before or in its first task: both are correct.)
    eventually("the 60 s timer", || async {
        let hist = h.history().await.unwrap();
        let go = hist.iter().position(
            |e| matches!(&e.kind, EventKind::SignalReceived { name, .. } if name == "go"),
        )?;
        hist[go..]
            .iter()
            .any(|e| matches!(e.kind, EventKind::TimerStarted { .. }))
            .then_some(())
    })
    .await;
    clock.advance(Duration::from_secs(61));
    let out = h.result().await.unwrap();
    assert!(out.starts_with("chain done at gen 2"), "{out}");
}

async fn time_randomness_and_ids_replay_identically(backend: Backend) {
    let engine = builder(backend, "determinism")
        .cache_capacity(1)
        .workflow::<Lifecycle>()
        .build()
        .await
        .unwrap();
    let client = engine.client();
    let h = client.start::<Lifecycle>("lc", cfg("d")).await.unwrap();
    let stamp = eventually("the stamp", || async { h.stamp().await.ok()? }).await;
    // Evict it (cache of one) and query again: replay recomputes the same values.
    let other = client.start::<Lifecycle>("other", cfg("o")).await.unwrap();
    eventually("other started", || async { other.stamp().await.ok()? }).await;
    assert_eq!(h.stamp().await.unwrap(), Some(stamp.clone()));
    // A signal makes the worker rebuild the evicted run by replay and go on from the same state.
    h.note("after eviction".into()).await.unwrap();
    let seen = eventually("note applied", || async {
        let s = h.seen().await.ok()?;
        (s.len() == 2).then_some(s)
    })
    .await;
    assert_eq!(seen[0], "run started gen 0");
    assert_eq!(h.stamp().await.unwrap(), Some(stamp));
}

async fn start_id_conflict_policies(backend: Backend) {
    let engine = builder(backend, "conflict")
        .workflow::<Lifecycle>()
        .build()
        .await
        .unwrap();
    let client = engine.client();
    let h = client.start::<Lifecycle>("lc", cfg("one")).await.unwrap();
    let first = h.describe().await.unwrap().run_id;
    assert!(matches!(
        client.start::<Lifecycle>("lc", cfg("two")).await,
        Err(WfError::AlreadyStarted { .. })
    ));
    let opts = |p| StartOptions {
        id_conflict: p,
        ..Default::default()
    };
    client
        .start_with::<Lifecycle>("lc", cfg("two"), opts(IdConflictPolicy::UseExisting))
        .await
        .unwrap();
    assert_eq!(h.describe().await.unwrap().run_id, first);
    client
        .start_with::<Lifecycle>(
            "lc",
            cfg("three"),
            opts(IdConflictPolicy::TerminateExisting),
        )
        .await
        .unwrap();
    assert_ne!(h.describe().await.unwrap().run_id, first);
    let old = client.run_history(&first, "lc").await.unwrap();
    assert!(matches!(
        old.last().unwrap().kind,
        EventKind::WorkflowTerminated { .. }
    ));
    let _ = Payload::default();
}

/// Engine A holds a run in memory; engine B continues it as new. An update sent through A
/// (whose memory still points at the closed run) and a signal after it reach the new run.
async fn messages_through_a_stale_engine_reach_the_new_run(backend: Backend) {
    let store = shared_store(backend, "stale");
    let engine = || store().workflow::<Lifecycle>().build();
    let a = engine().await.unwrap();
    let b = engine().await.unwrap();
    let ha = a
        .client()
        .start::<Lifecycle>("stale", cfg("first"))
        .await
        .unwrap();
    // A ran the first task and holds the run; this update runs there too.
    assert_eq!(ha.rename("second".into()).await.unwrap(), "first");
    let first_run = ha.describe().await.unwrap().run_id;
    // B takes the signals (A does not see them) and continues the run as new.
    let hb = b.client().handle::<Lifecycle>("stale");
    hb.approve().await.unwrap();
    hb.go().await.unwrap();
    let second_run = eventually("continue as new", || async {
        let d = hb.describe().await.ok()?;
        (d.run_id != first_run && d.status == RunStatus::Running).then_some(d.run_id)
    })
    .await;
    // The new run starts from its input (label "first"), not from the old run's state.
    assert_eq!(ha.rename("third".into()).await.unwrap(), "first");
    ha.note("via a".into()).await.unwrap();
    let d = ha.describe().await.unwrap();
    assert_eq!(d.run_id, second_run);
    let seen = ha.seen().await.unwrap();
    assert!(seen.contains(&"renamed from first".to_string()), "{seen:?}");
    assert!(
        seen.contains(&"via a (label third)".to_string()),
        "{seen:?}"
    );
    let old = a.client().run_history(&first_run, "stale").await.unwrap();
    assert_eq!(
        count(&old, |k| matches!(k, EventKind::UpdateAccepted { .. })),
        1
    );
    a.shutdown().await;
    b.shutdown().await;
}

both!(
    messages_before_run_are_applied_first,
    messages_through_a_stale_engine_reach_the_new_run,
    wait_condition_timeout_uses_durable_timers,
    continue_as_new_carries_dedupe_ids,
    time_randomness_and_ids_replay_identically,
    start_id_conflict_policies,
    start_returns_with_the_first_task_recorded,
    a_first_task_that_fails_still_starts_the_run,
);

#[derive(Default)]
pub struct Fragile;

#[workflow]
impl Fragile {
    #[run]
    async fn run(ctx: &mut WorkflowContext<Self>, boom: bool) -> Result<(), WorkflowError> {
        if boom {
            panic!("the first task panics");
        }
        ctx.sleep(Duration::from_secs(3600)).await?;
        Ok(())
    }
}

async fn start_returns_with_the_first_task_recorded(backend: Backend) {
    let engine = builder(backend, "eager")
        .workflow::<Fragile>()
        .build()
        .await
        .unwrap();
    let h = engine.client().start::<Fragile>("f", false).await.unwrap();
    // No waiting: this engine runs the type, so it ran the first task in the start's own
    // transaction.
    assert_eq!(
        kinds(&h.history().await.unwrap()),
        ["WorkflowStarted", "TimerStarted", "WorkflowTaskCompleted"]
    );
    // A second start under `UseExisting` keeps that run and runs nothing.
    let options = StartOptions {
        id_conflict: IdConflictPolicy::UseExisting,
        ..Default::default()
    };
    let first = h.describe().await.unwrap().run_id;
    engine
        .client()
        .start_with::<Fragile>("f", false, options)
        .await
        .unwrap();
    let d = h.describe().await.unwrap();
    assert_eq!((d.run_id, d.history_length), (first, 3));
    engine.shutdown().await;
}

async fn a_first_task_that_fails_still_starts_the_run(backend: Backend) {
    let engine = builder(backend, "eager-fail")
        .workflow::<Fragile>()
        .build()
        .await
        .unwrap();
    let h = engine.client().start::<Fragile>("f", true).await.unwrap();
    let d = eventually("the recorded task failure", || async {
        h.describe().await.ok().filter(|d| d.task_failure.is_some())
    })
    .await;
    assert_eq!((d.status, d.history_length), (RunStatus::Running, 1));
    let failure = d.task_failure.unwrap();
    assert!(
        failure.message.contains("the first task panics"),
        "{failure:?}"
    );
    engine.shutdown().await;
}

#[derive(Default)]
pub struct Sleeper;

#[workflow]
impl Sleeper {
    #[run]
    async fn run(ctx: &mut WorkflowContext<Self>) -> Result<i64, WorkflowError> {
        let start = ctx.now_ms();
        ctx.sleep(Duration::from_secs(3600)).await?;
        Ok(ctx.now_ms() - start)
    }
}

/// Starts a `Sleeper` on `engine` and waits until its timer is recorded.
async fn start_sleeping(engine: &Engine) -> WorkflowHandle<Sleeper> {
    let h = engine
        .client()
        .start::<Sleeper>("sleeper", ())
        .await
        .unwrap();
    eventually("the timer", || async {
        let hist = h.history().await.ok()?;
        hist.iter()
            .any(|e| matches!(e.kind, EventKind::TimerStarted { .. }))
            .then_some(())
    })
    .await;
    h
}

/// An engine running `Sleeper` on the SQLite file at `path`, on `clock`.
async fn sleeper_engine(path: &std::path::Path, clock: &TestClock) -> Engine {
    Engine::builder()
        .sqlite(path)
        .clock(clock.clone())
        .workflow::<Sleeper>()
        .build()
        .await
        .unwrap()
}

/// An hour later on `clock`, an engine on the file at `path` finishes the sleeper's run.
async fn finishes_an_hour_later(path: &std::path::Path, clock: &TestClock) {
    clock.advance(Duration::from_secs(3600));
    let engine = sleeper_engine(path, clock).await;
    let h = engine.client().handle::<Sleeper>("sleeper");
    assert_eq!(h.result().await.unwrap(), 3_600_000);
    drop(h);
    engine.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn durable_timer_fires_after_a_restart() {
    let path = temp_db("timer-restart");
    let clock = TestClock::new();
    let engine = sleeper_engine(&path, &clock).await;
    drop(start_sleeping(&engine).await);
    engine.shutdown().await;
    // A new process (same file, same clock).
    finishes_an_hour_later(&path, &clock).await;
}

/// After a clean shutdown the database file alone holds everything: copied without its WAL,
/// it runs the workflow on.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_shut_down_engine_leaves_one_self_contained_database_file() {
    let (path, copy) = (temp_db("one-file"), temp_db("one-file-copy"));
    let clock = TestClock::new();
    let engine = sleeper_engine(&path, &clock).await;
    drop(start_sleeping(&engine).await);
    engine.shutdown().await;

    let wal = format!("{}-wal", path.display());
    assert!(
        !std::path::Path::new(&wal).exists(),
        "the WAL outlived the shutdown"
    );
    std::fs::copy(&path, &copy).unwrap();
    finishes_an_hour_later(&copy, &clock).await;
}

#[derive(Default)]
pub struct Quitter;

#[workflow]
impl Quitter {
    #[run]
    async fn run(ctx: &mut WorkflowContext<Self>) -> Result<(), WorkflowError> {
        ctx.sleep(Duration::from_millis(1)).await?;
        Ok(())
    }

    #[update]
    async fn slow(ctx: &mut WorkflowContext<Self>) -> Result<(), UpdateError> {
        ctx.sleep(Duration::from_secs(3600)).await?;
        Ok(())
    }
}

#[tokio::test]
async fn run_returning_with_unfinished_update_answers_run_finished() {
    let engine = Engine::builder()
        .memory()
        .workflow::<Quitter>()
        .build()
        .await
        .unwrap();
    let h = engine.client().start::<Quitter>("q", ()).await.unwrap();
    match h.slow().start().await {
        Ok(u) => assert!(matches!(u.result().await, Err(WfError::RunFinished { .. }))),
        Err(e) => assert!(matches!(e, WfError::RunFinished { .. }), "{e:?}"),
    }
    h.result().await.unwrap();
}

#[derive(Default)]
pub struct Chatty {
    n: u32,
}

#[workflow]
impl Chatty {
    #[run]
    async fn run(
        ctx: &mut WorkflowContext<Self>,
        target: u32,
    ) -> Result<(bool, u64), WorkflowError> {
        let early = ctx.continue_as_new_suggested();
        ctx.wait_condition(|s| s.n >= target).await;
        ctx.sleep(Duration::from_millis(1)).await?;
        assert!(!early);
        Ok((ctx.continue_as_new_suggested(), ctx.history_length()))
    }

    #[signal]
    fn ping(&mut self) {
        self.n += 1;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn continue_as_new_is_suggested_past_10240_events() {
    let engine = Engine::builder()
        .memory()
        .workflow::<Chatty>()
        .build()
        .await
        .unwrap();
    let h = engine.client().start::<Chatty>("c", 10_300).await.unwrap();
    let mut sends = Vec::new();
    for _ in 0..10_300 {
        let h = h.clone();
        sends.push(tokio::spawn(async move { h.ping().await }));
    }
    for s in sends {
        s.await.unwrap().unwrap();
    }
    let (suggested, len) = h.result().await.unwrap();
    assert!(len > 10_240, "{len}");
    assert!(suggested);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn engines_with_different_registrations_share_a_store() {
    // Engine A runs `Quitter`, engine B runs `Lifecycle`; both poll the same store. B must not
    // take A's runs (it would fail them as "unknown workflow type" and, on this frozen test
    // clock, they would never be retried).
    let store: std::sync::Arc<dyn wf_sdk::store::Store> =
        std::sync::Arc::new(wf_sdk::store::MemoryStore::new());
    let clock = TestClock::new();
    let a = Engine::builder()
        .store(store.clone())
        .clock(clock.clone())
        .build_id("a")
        .poll_interval(Duration::from_millis(5))
        .workflow::<Quitter>()
        .build()
        .await
        .unwrap();
    let b = Engine::builder()
        .store(store.clone())
        .clock(clock.clone())
        .build_id("b")
        .poll_interval(Duration::from_millis(5))
        .workflow::<Lifecycle>()
        .build()
        .await
        .unwrap();
    let mut handles = Vec::new();
    for i in 0..20 {
        handles.push(
            a.client()
                .start::<Quitter>(format!("q-{i}"), ())
                .await
                .unwrap(),
        );
    }
    let lc = b.client().start::<Lifecycle>("lc", cfg("b")).await.unwrap();
    eventually("the 1 ms timers", || async {
        let mut started = 0;
        for h in &handles {
            let hist = h.history().await.ok()?;
            started += hist
                .iter()
                .any(|e| matches!(e.kind, EventKind::TimerStarted { .. }))
                as usize;
        }
        (started == handles.len()).then_some(())
    })
    .await;
    clock.advance(Duration::from_millis(1));
    for h in &handles {
        tokio::time::timeout(Duration::from_secs(10), h.result())
            .await
            .expect("run by engine a")
            .unwrap();
        let d = h.describe().await.unwrap();
        assert!(d.task_failure.is_none());
        for e in h.history().await.unwrap() {
            if let EventKind::WorkflowTaskCompleted { build_id, .. } = e.kind {
                assert_eq!(build_id.as_deref(), Some("a"));
            }
        }
    }
    eventually("lc started by engine b", || async {
        lc.stamp().await.ok()?
    })
    .await;
}
