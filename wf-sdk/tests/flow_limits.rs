//! Flow limits held in the store, on the three stores, with several engines sharing one store:
//! a concurrency limit on a flow key is never exceeded over all engines (and is reached); a
//! rate limit on a task queue starts attempts at its rate; a crashed engine's slots come back
//! once its liveness lease runs out; an operator's change applies to new attempts, without a
//! restart, even on an engine that has not read the limit yet.

mod common;
use common::*;
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use wf_sdk::flow::{FlowKind, FlowLimit, FlowRule, FlowScope};
use wf_sdk::prelude::*;

/// What the activities saw, shared by every engine of a test.
#[derive(Default)]
pub struct Gauge {
    running: AtomicU32,
    /// The most attempts of `work` running at once since the last [`Gauge::reset_max`].
    max: AtomicU32,
    done: AtomicU32,
    /// When each `tick` started.
    ticks: Mutex<Vec<Instant>>,
    /// `hold`'s first attempt started (it never ends).
    holding: AtomicBool,
    /// When `quick` started, if it did.
    quick_at: Mutex<Option<Instant>>,
}

impl Gauge {
    fn max(&self) -> u32 {
        self.max.load(Ordering::SeqCst)
    }

    /// Starts a new observation of the maximum from the attempts running now.
    fn reset_max(&self) {
        self.max
            .store(self.running.load(Ordering::SeqCst), Ordering::SeqCst);
    }

    fn done(&self) -> u32 {
        self.done.load(Ordering::SeqCst)
    }
}

#[activities]
impl Gauge {
    /// Runs for `ms`, counting how many run at once.
    #[activity]
    async fn work(&self, _ctx: ActivityContext, ms: u64) -> Result<(), ActivityError> {
        let now = self.running.fetch_add(1, Ordering::SeqCst) + 1;
        self.max.fetch_max(now, Ordering::SeqCst);
        tokio::time::sleep(Duration::from_millis(ms)).await;
        self.running.fetch_sub(1, Ordering::SeqCst);
        self.done.fetch_add(1, Ordering::SeqCst);
        Ok(())
    }

    /// Notes when it started.
    #[activity]
    async fn tick(&self, _ctx: ActivityContext) -> Result<(), ActivityError> {
        self.ticks.lock().unwrap().push(Instant::now());
        Ok(())
    }
}

#[derive(Serialize, Deserialize)]
pub struct Steps {
    steps: u32,
    ms: u64,
    key: String,
}

/// Runs `steps` attempts of `work` one after the other, under flow key `key`.
#[derive(Default)]
pub struct Worker;

#[workflow]
impl Worker {
    #[run]
    async fn run(ctx: &mut WorkflowContext<Self>, input: Steps) -> Result<u32, WorkflowError> {
        for _ in 0..input.steps {
            ctx.activity(Gauge::work, input.ms)
                .flow_key(input.key.clone())
                .await?;
        }
        Ok(input.steps)
    }
}

/// Runs `n` ticks one after the other.
#[derive(Default)]
pub struct Ticker;

#[workflow]
impl Ticker {
    #[run]
    async fn run(ctx: &mut WorkflowContext<Self>, n: u32) -> Result<u32, WorkflowError> {
        for _ in 0..n {
            ctx.activity(Gauge::tick, ()).await?;
        }
        Ok(n)
    }
}

/// Holds its slot of flow key `solo` (its engine crashes meanwhile).
#[derive(Default)]
pub struct Holder;

#[workflow]
impl Holder {
    #[run]
    async fn run(ctx: &mut WorkflowContext<Self>) -> Result<(), WorkflowError> {
        Ok(ctx.activity(HoldOnly::hold, ()).flow_key("solo").await?)
    }
}

/// Needs a slot of flow key `solo`.
#[derive(Default)]
pub struct Waiter;

#[workflow]
impl Waiter {
    #[run]
    async fn run(ctx: &mut WorkflowContext<Self>) -> Result<(), WorkflowError> {
        Ok(ctx.activity(QuickOnly::quick, ()).flow_key("solo").await?)
    }
}

/// `n` engines on one store, all running `Worker` and `Ticker` with `gauge`'s activities; the
/// first sets `limit`.
async fn engines(
    backend: Backend,
    tag: &str,
    n: usize,
    gauge: &Arc<Gauge>,
    limit: FlowLimit,
) -> Vec<Engine> {
    let shared = shared_store(backend, tag);
    let mut engines = Vec::with_capacity(n);
    for i in 0..n {
        let mut b = shared()
            .workflow::<Worker>()
            .workflow::<Ticker>()
            .shared_activities(gauge.clone());
        if i == 0 {
            b = b.flow_limit(limit.clone());
        }
        engines.push(b.build().await.unwrap());
    }
    engines
}

async fn a_concurrency_limit_holds_over_every_engine(backend: Backend) {
    let gauge = Arc::new(Gauge::default());
    let limit = FlowLimit::concurrency(FlowScope::key("model"), 4);
    let engines = engines(backend, "flow-concurrency", 3, &gauge, limit).await;
    // 500 attempts of 5 ms: 50 runs of 10 steps, started on the three engines in turn.
    let mut handles = Vec::new();
    for i in 0..50 {
        let client = engines[i % 3].client();
        let input = Steps {
            steps: 10,
            ms: 5,
            key: "model".into(),
        };
        handles.push(
            client
                .start::<Worker>(&format!("w{i}"), input)
                .await
                .unwrap(),
        );
    }
    for h in handles {
        assert_eq!(h.result().await.unwrap(), 10);
    }
    assert_eq!(gauge.done(), 500);
    let max = gauge.max();
    assert!(max <= 4, "{max} attempts ran at once under a limit of 4");
    assert_eq!(max, 4, "50 runs waiting never filled the limit's 4 slots");
    for e in engines {
        e.shutdown().await;
    }
}

async fn a_rate_limit_starts_attempts_at_its_rate(backend: Backend) {
    let gauge = Arc::new(Gauge::default());
    // Every run of the engines' task queue, 20 attempts a second (burst 20).
    let limit = FlowLimit::rate(FlowScope::task_queue("default"), 20, Duration::from_secs(1));
    let engines = engines(backend, "flow-rate", 3, &gauge, limit).await;
    // 160 ticks waiting: more than the limit starts in the 5 s measured.
    for i in 0..40 {
        let client = engines[i % 3].client();
        client.start::<Ticker>(&format!("t{i}"), 4).await.unwrap();
    }
    let first = eventually("the first tick", || async {
        gauge.ticks.lock().unwrap().first().copied()
    })
    .await;
    // The burst goes in the first second; the rate is measured over the 4 s after it.
    let (from, to) = (
        first + Duration::from_secs(1),
        first + Duration::from_secs(5),
    );
    tokio::time::sleep_until(tokio::time::Instant::from_std(to)).await;
    let ticks = gauge.ticks.lock().unwrap().clone();
    let in_window = ticks.iter().filter(|t| **t >= from && **t < to).count();
    let rate = in_window as f64 / 4.0;
    eprintln!("{backend:?}: {rate} starts/s measured under a rate limit of 20/s");
    assert!(
        (17.0..=23.0).contains(&rate),
        "measured {rate} starts/s ({in_window} in 4 s) under a limit of 20/s"
    );
    let first_second = ticks.iter().filter(|t| **t < from).count();
    assert!(
        first_second <= 42,
        "{first_second} starts in the first second: more than the burst and a second's rate"
    );
    for e in engines {
        e.shutdown().await;
    }
}

async fn a_crashed_engines_slots_come_back_within_its_liveness_lease(backend: Backend) {
    let gauge = Arc::new(Gauge::default());
    let lease = Duration::from_secs(1);
    let shared = shared_store(backend, "flow-crash");
    let limit = FlowLimit::concurrency(FlowScope::key("solo"), 1);
    // Only the first engine runs `hold`, only the second `quick`: the slot is the first's.
    let first = shared()
        .liveness_lease(lease)
        .workflow::<Holder>()
        .workflow::<Waiter>()
        .activities(HoldOnly(gauge.clone()))
        .flow_limit(limit)
        .build()
        .await
        .unwrap();
    let second = shared()
        .liveness_lease(lease)
        .workflow::<Holder>()
        .workflow::<Waiter>()
        .activities(QuickOnly(gauge.clone()))
        .build()
        .await
        .unwrap();
    first.client().start::<Holder>("holder", ()).await.unwrap();
    eventually("hold running", || async {
        gauge.holding.load(Ordering::SeqCst).then_some(())
    })
    .await;
    let waiter = second.client().start::<Waiter>("waiter", ()).await.unwrap();
    // The slot is taken: `quick` does not start.
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(
        gauge.quick_at.lock().unwrap().is_none(),
        "quick started in a taken slot"
    );
    // A crash: nothing released, the liveness lease no longer renewed.
    let crashed = Instant::now();
    drop(first);
    waiter.result().await.unwrap();
    let started = gauge.quick_at.lock().unwrap().expect("quick ran");
    let after = started - crashed;
    eprintln!("{backend:?}: the slot came back {after:?} after the crash (lease {lease:?})");
    assert!(
        after <= lease + Duration::from_millis(700),
        "the slot came back {after:?} after the crash, with a liveness lease of {lease:?}"
    );
    second.shutdown().await;
}

/// The activity of the engine that crashes, noting on a [`Gauge`].
pub struct HoldOnly(Arc<Gauge>);

#[activities]
impl HoldOnly {
    /// Its first attempt never ends (its engine is to crash); later ones return.
    #[activity]
    async fn hold(&self, ctx: ActivityContext) -> Result<(), ActivityError> {
        if ctx.attempt() == 1 {
            self.0.holding.store(true, Ordering::SeqCst);
            std::future::pending::<()>().await;
        }
        Ok(())
    }
}

/// The activity of the engine that survives, noting on a [`Gauge`].
pub struct QuickOnly(Arc<Gauge>);

#[activities]
impl QuickOnly {
    /// Notes when it started.
    #[activity]
    async fn quick(&self, _ctx: ActivityContext) -> Result<(), ActivityError> {
        *self.0.quick_at.lock().unwrap() = Some(Instant::now());
        Ok(())
    }
}

async fn a_limit_changed_at_run_time_applies_to_new_attempts(backend: Backend) {
    let gauge = Arc::new(Gauge::default());
    let scope = FlowScope::activity("work");
    let limit = FlowLimit::concurrency(scope.clone(), 1);
    let engines = engines(backend, "flow-change", 2, &gauge, limit).await;
    let client = engines[1].client();
    let mut handles = Vec::new();
    for i in 0..12 {
        let input = Steps {
            steps: 5,
            ms: 15,
            key: format!("k{i}"),
        };
        let h = engines[i % 2]
            .client()
            .start::<Worker>(&format!("c{i}"), input)
            .await
            .unwrap();
        handles.push(h);
    }
    eventually("ten attempts done", || async {
        (gauge.done() >= 10).then_some(())
    })
    .await;
    assert_eq!(gauge.max(), 1, "attempts ran at once under a limit of 1");
    // An operator raises it, through the other engine's client; no engine restarts.
    client
        .flow_limits()
        .set(FlowLimit::concurrency(scope.clone(), 3))
        .await
        .unwrap();
    gauge.reset_max();
    for h in handles {
        assert_eq!(h.result().await.unwrap(), 5);
    }
    let max = gauge.max();
    assert_eq!(
        max, 3,
        "after the change to 3, {max} attempts ran at once at most"
    );
    let listed = client.flow_limits().list().await.unwrap();
    assert_eq!(listed, vec![FlowLimit::concurrency(scope.clone(), 3)]);
    assert!(matches!(listed[0].rule, FlowRule::Concurrency { max: 3 }));
    let limits = engines[0].client().flow_limits();
    assert!(limits
        .remove(scope.clone(), FlowKind::Concurrency)
        .await
        .unwrap());
    assert!(!limits.remove(scope, FlowKind::Concurrency).await.unwrap());
    assert!(limits.list().await.unwrap().is_empty());
    for e in engines {
        e.shutdown().await;
    }
}

async fn a_limit_new_to_a_running_engine_binds_what_it_would_start_at_once(backend: Backend) {
    let gauge = Arc::new(Gauge::default());
    let shared = shared_store(backend, "flow-unseen");
    // It runs the activities its own commits schedule, leased in the commit.
    let engine = shared()
        .workflow::<Worker>()
        .shared_activities(gauge.clone())
        .build()
        .await
        .unwrap();
    let operator = shared().client_only().build().await.unwrap();
    // Set through another engine: the running one has not read it yet.
    let limit = FlowLimit::concurrency(FlowScope::activity("work"), 2);
    operator.client().flow_limits().set(limit).await.unwrap();
    let client = engine.client();
    let mut handles = Vec::new();
    for i in 0..10 {
        let input = Steps {
            steps: 3,
            ms: 10,
            key: "any".into(),
        };
        handles.push(
            client
                .start::<Worker>(&format!("u{i}"), input)
                .await
                .unwrap(),
        );
    }
    for h in handles {
        assert_eq!(h.result().await.unwrap(), 3);
    }
    let max = gauge.max();
    assert_eq!(max, 2, "{max} attempts ran at once under a limit of 2");
    engine.shutdown().await;
    operator.shutdown().await;
}

async fn a_bad_limit_is_refused(backend: Backend) {
    let rate = FlowLimit::rate(FlowScope::key("k"), 5, Duration::ZERO);
    let refused = builder(backend, "flow-bad")
        .flow_limit(rate.clone())
        .build()
        .await;
    assert!(
        matches!(refused, Err(WfError::InvalidConfig(_))),
        "{refused:?}"
    );
    let engine = builder(backend, "flow-bad-2").build().await.unwrap();
    let err = engine.client().flow_limits().set(rate).await.unwrap_err();
    assert!(matches!(err, WfError::InvalidArgument(_)), "{err:?}");
    assert!(engine
        .client()
        .flow_limits()
        .list()
        .await
        .unwrap()
        .is_empty());
    engine.shutdown().await;
}

both!(
    a_concurrency_limit_holds_over_every_engine,
    a_rate_limit_starts_attempts_at_its_rate,
    a_crashed_engines_slots_come_back_within_its_liveness_lease,
    a_limit_changed_at_run_time_applies_to_new_attempts,
    a_limit_new_to_a_running_engine_binds_what_it_would_start_at_once,
    a_bad_limit_is_refused,
);
