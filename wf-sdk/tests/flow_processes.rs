//! Flow limits over three processes on one SQLite file and on one PostgreSQL schema: this test
//! process and two children (this binary again) each run an engine; the limits live in the
//! store, so they bind all three. Each attempt reports when and in which process it ran, in
//! its run's result: a concurrency limit of 4 is never exceeded over the three (and is
//! reached), a rate limit of 20/s starts attempts at 20/s within 15 % over 10 s, and a process killed
//! with SIGKILL gives its slot back within its liveness lease.

mod common;
use common::*;
use std::process::Child;
use std::time::{Duration, SystemTime, UNIX_EPOCH};
use wf_sdk::flow::{FlowLimit, FlowScope};
use wf_sdk::prelude::*;

/// The variable that tells a child process its store: a SQLite path, or `postgres:SCHEMA:URL`.
const STORE: &str = "WF_FLOW_PROCESSES_STORE";
/// How long an engine's leases outlive its last sign of life, in every process here.
const LIVENESS: Duration = Duration::from_secs(1);

/// One attempt as it saw itself.
#[derive(Serialize, Deserialize, Clone, Debug)]
pub struct Span {
    pid: u32,
    start_us: u64,
    end_us: u64,
}

fn now_us() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_micros() as u64)
        .unwrap_or(0)
}

/// The activities, the same in every process.
pub struct Work;

#[activities]
impl Work {
    /// Runs for `ms` (forever for `u64::MAX`: the crash test's slot holder).
    #[activity]
    async fn work(&self, _ctx: ActivityContext, ms: u64) -> Result<Span, ActivityError> {
        let start_us = now_us();
        let hold = Duration::from_millis(ms.min(3_600_000));
        tokio::time::sleep(hold).await;
        Ok(Span {
            pid: std::process::id(),
            start_us,
            end_us: now_us(),
        })
    }
}

#[derive(Serialize, Deserialize)]
pub struct Steps {
    steps: u32,
    ms: u64,
    key: String,
}

/// `steps` attempts of `work`, one after the other, under flow key `key`.
#[derive(Default)]
pub struct Chain;

#[workflow]
impl Chain {
    #[run]
    async fn run(
        ctx: &mut WorkflowContext<Self>,
        input: Steps,
    ) -> Result<Vec<Span>, WorkflowError> {
        let mut spans = Vec::new();
        for _ in 0..input.steps {
            let call = ctx
                .activity(Work::work, input.ms)
                .flow_key(input.key.clone());
            spans.push(call.await?);
        }
        Ok(spans)
    }
}

/// An engine on `place` (a SQLite path or `postgres:SCHEMA:URL`) that runs [`Chain`] and
/// [`Work`].
fn on_store(place: &str) -> wf_sdk::engine::EngineBuilder {
    bare(place).activities(Work)
}

/// An engine on `place` that runs [`Chain`] but no activity.
fn bare(place: &str) -> wf_sdk::engine::EngineBuilder {
    engine_at(place)
        .poll_interval(Duration::from_millis(10))
        .liveness_lease(LIVENESS)
        .workflow::<Chain>()
}

/// How many engines are live on `place` now, read from a store handle of its own.
async fn live_engines(place: &str) -> usize {
    let now_ms = (now_us() / 1_000) as i64;
    let store = store_at(place).await;
    store
        .admin()
        .live_engines(now_ms)
        .await
        .map(|e| e.len())
        .unwrap_or(0)
}

/// A child process: an engine on the store [`STORE`] names, until it is killed.
#[test]
#[ignore = "runs only as a child process of the flow_processes tests"]
fn flow_child() {
    let Ok(place) = std::env::var(STORE) else {
        return;
    };
    let rt = tokio::runtime::Runtime::new().unwrap();
    rt.block_on(async {
        let _engine = on_store(&place).build().await.unwrap();
        tokio::time::sleep(Duration::from_secs(300)).await;
    });
}

/// The two child processes, killed (SIGKILL) and reaped when dropped.
struct Children(Vec<Child>);

impl Drop for Children {
    fn drop(&mut self) {
        for child in &mut self.0 {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

/// This process's engine on `place` (setting `limit`), and two children on it, once all three
/// have registered with the store.
async fn three_processes(place: &str, limit: FlowLimit) -> (Engine, Children) {
    let engine = on_store(place).flow_limit(limit).build().await.unwrap();
    let children = Children(
        (0..2)
            .map(|_| spawn_test_child("flow_child", STORE, place))
            .collect(),
    );
    eventually_for(Duration::from_secs(30), "three engines live", || async {
        (live_engines(place).await >= 3).then_some(())
    })
    .await;
    (engine, children)
}

/// Starts `runs` runs of `steps` attempts of `ms` under key `key`; every attempt's span.
async fn run_all(
    engine: &Engine,
    prefix: &str,
    runs: usize,
    steps: u32,
    ms: u64,
    key: &str,
) -> Vec<Span> {
    let client = engine.client();
    let mut handles = Vec::new();
    for i in 0..runs {
        let input = Steps {
            steps,
            ms,
            key: key.into(),
        };
        handles.push(
            client
                .start::<Chain>(format!("{prefix}{i}"), input)
                .await
                .unwrap(),
        );
    }
    let mut spans = Vec::new();
    for h in handles {
        spans.extend(h.result().await.unwrap());
    }
    spans
}

/// The most spans open at once (an end before a start at the same instant: a slot handed on).
fn most_at_once(spans: &[Span]) -> i64 {
    let mut edges: Vec<(u64, i64)> = spans
        .iter()
        .flat_map(|s| [(s.start_us, 1), (s.end_us, -1)])
        .collect();
    edges.sort();
    let (mut open, mut most) = (0, 0);
    for (_, step) in edges {
        open += step;
        most = most.max(open);
    }
    most
}

async fn a_concurrency_limit_holds_over_three_processes(backend: Backend) {
    let place = new_place(backend, "flow-processes-concurrency");
    let limit = FlowLimit::concurrency(FlowScope::key("model"), 4);
    let (engine, children) = three_processes(&place, limit).await;
    // 500 attempts of 5 ms: 50 runs of 10 steps.
    let spans = run_all(&engine, "w", 50, 10, 5, "model").await;
    assert_eq!(spans.len(), 500);
    let most = most_at_once(&spans);
    let mut pids: Vec<u32> = spans.iter().map(|s| s.pid).collect();
    pids.sort_unstable();
    pids.dedup();
    eprintln!(
        "{backend:?}: at most {most} of 500 attempts ran at once over {} processes",
        pids.len()
    );
    assert!(most <= 4, "{most} attempts ran at once under a limit of 4");
    assert_eq!(most, 4, "50 runs waiting never filled the limit's 4 slots");
    assert_eq!(pids.len(), 3, "every process ran attempts: {pids:?}");
    drop(children);
    engine.shutdown().await;
}

async fn a_rate_limit_holds_over_three_processes(backend: Backend) {
    let place = new_place(backend, "flow-processes-rate");
    let limit = FlowLimit::rate(FlowScope::key("tick"), 20, Duration::from_secs(1));
    let (engine, children) = three_processes(&place, limit).await;
    // 240 ticks waiting: the burst of 20, then 220 at 20/s (11 s); measured over the 10 s
    // after the first second.
    let spans = run_all(&engine, "t", 60, 4, 0, "tick").await;
    let first = spans.iter().map(|s| s.start_us).min().unwrap();
    let (from, to) = (first + 1_000_000, first + 11_000_000);
    let in_window = spans
        .iter()
        .filter(|s| s.start_us >= from && s.start_us < to)
        .count();
    let rate = in_window as f64 / 10.0;
    eprintln!("{backend:?}: {rate} starts/s over three processes under a rate limit of 20/s");
    assert!(
        (17.0..=23.0).contains(&rate),
        "measured {rate} starts/s ({in_window} in 10 s) under a limit of 20/s"
    );
    drop(children);
    engine.shutdown().await;
}

async fn a_killed_process_gives_its_slot_back_within_its_liveness_lease(backend: Backend) {
    let place = new_place(backend, "flow-processes-kill");
    let limit = FlowLimit::concurrency(FlowScope::key("solo"), 1);
    // This process runs no activity: only the children may take the holder.
    let engine = bare(&place).flow_limit(limit).build().await.unwrap();
    let mut children = Children(
        (0..2)
            .map(|_| spawn_test_child("flow_child", STORE, &place))
            .collect(),
    );
    let client = engine.client();
    let hold = Steps {
        steps: 1,
        ms: u64::MAX,
        key: "solo".into(),
    };
    let holder = client.start::<Chain>("holder", hold).await.unwrap();
    eventually_for(Duration::from_secs(30), "the holder running", || async {
        let d = holder.describe().await.ok()?;
        d.pending_activities
            .first()
            .is_some_and(|a| a.attempt_deadline.is_some())
            .then_some(())
    })
    .await;
    // A quick one waits for the slot; then every child dies at once (SIGKILL).
    let quick = Steps {
        steps: 1,
        ms: 1,
        key: "solo".into(),
    };
    let waiter = client.start::<Chain>("waiter", quick).await.unwrap();
    tokio::time::sleep(Duration::from_millis(300)).await;
    let killed_us = now_us();
    for child in &mut children.0 {
        child.kill().unwrap();
        child.wait().unwrap();
    }
    // A fresh engine here takes over (the dead ones' leases run out within LIVENESS).
    let rescuer = on_store(&place).build().await.unwrap();
    let spans = waiter.result().await.unwrap();
    let after = Duration::from_micros(spans[0].start_us.saturating_sub(killed_us));
    eprintln!(
        "{backend:?}: the slot came back {after:?} after the kill (liveness lease {LIVENESS:?})"
    );
    assert!(
        after <= LIVENESS + Duration::from_secs(3),
        "the waiting attempt started {after:?} after its holder's process died"
    );
    assert_eq!(spans[0].pid, std::process::id());
    rescuer.shutdown().await;
    engine.shutdown().await;
}

on_files_and_postgres!(
    a_concurrency_limit_holds_over_three_processes,
    a_rate_limit_holds_over_three_processes,
    a_killed_process_gives_its_slot_back_within_its_liveness_lease,
);
