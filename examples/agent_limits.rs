//! Flow limits across processes, on the embedded SQLite store: agent loops whose model calls
//! the model API allows 3 at once and 600 a minute for the whole account. Two worker processes
//! share one SQLite file (this one, and a second started from the same program); the limits live
//! in the store, so they bind both: 12 agents make 48 model calls, never more than 3 at once over
//! both processes, started at 600 a minute after a burst of 5. Each call reports when and where
//! it ran; the program prints what it observed and checks it.
//!
//! `cargo run --release --example agent_limits`

#[path = "support/demo_db.rs"]
mod demo_db;

use demo_db::DemoDb;

use std::io::{BufRead, BufReader, Read, Write};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, SystemTime, UNIX_EPOCH};
use wf_sdk::flow::{FlowLimit, FlowScope};
use wf_sdk::prelude::*;

/// At most this many model calls at once, over every process.
pub const AT_ONCE: u32 = 3;
/// At most this many model calls started a minute (after a burst of [`BURST`]).
pub const PER_MINUTE: u32 = 600;
/// Calls the account may make at once after a quiet spell.
pub const BURST: u32 = 5;
const AGENTS: usize = 12;
const STEPS: u32 = 4;

/// One model call, as the activity saw it.
#[derive(Serialize, Deserialize, Clone, Debug)]
pub struct Call {
    /// The worker process that ran it.
    pub pid: u32,
    /// When it started and ended, in milliseconds since the Unix epoch.
    pub start_ms: u64,
    /// See `start_ms`.
    pub end_ms: u64,
}

fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_millis() as u64)
        .unwrap_or(0)
}

/// The model API (a stand-in that takes 40 ms an answer).
pub struct Model;

#[activities]
impl Model {
    /// Asks the model for the next step towards `goal`.
    #[activity]
    async fn ask(&self, _ctx: ActivityContext, _goal: String) -> Result<Call, ActivityError> {
        let start_ms = now_ms();
        tokio::time::sleep(Duration::from_millis(40)).await;
        Ok(Call {
            pid: std::process::id(),
            start_ms,
            end_ms: now_ms(),
        })
    }
}

/// An agent loop: [`STEPS`] model calls, each under the account's flow key.
#[derive(Default)]
pub struct Agent;

#[workflow(name = "limited_agent")]
impl Agent {
    #[run]
    async fn run(
        ctx: &mut WorkflowContext<Self>,
        goal: String,
    ) -> Result<Vec<Call>, WorkflowError> {
        let mut calls = Vec::new();
        for _ in 0..STEPS {
            calls.push(
                ctx.activity(Model::ask, goal.clone())
                    .flow_key("model-api")
                    .await?,
            );
        }
        Ok(calls)
    }
}

/// A worker engine on the file at `db`.
async fn worker(db: &Path) -> Result<Engine, WfError> {
    Engine::builder()
        .sqlite(db)
        .poll_interval(Duration::from_millis(20))
        .workflow::<Agent>()
        .activities(Model)
        .build()
        .await
}

/// The second worker process: serves `db` until its standard input closes.
pub async fn worker_process(db: &Path) -> Result<(), WfError> {
    let engine = worker(db).await?;
    println!("ready");
    let _ = std::io::stdout().flush();
    let _ = tokio::task::spawn_blocking(|| {
        let mut rest = Vec::new();
        std::io::stdin().read_to_end(&mut rest)
    })
    .await;
    engine.shutdown().await;
    Ok(())
}

/// The most calls running at once.
fn most_at_once(calls: &[Call]) -> u32 {
    let mut edges: Vec<(u64, i32)> = calls
        .iter()
        .flat_map(|c| [(c.start_ms, 1), (c.end_ms, -1)])
        .collect();
    // An end before a start at the same millisecond: a slot handed over is not an overlap.
    edges.sort();
    let (mut open, mut most) = (0i32, 0i32);
    for (_, step) in edges {
        open += step;
        most = most.max(open);
    }
    most as u32
}

/// Runs the scenario, with the second worker process that `spawn(db)` starts.
pub async fn run(spawn: impl FnOnce(&Path) -> Command) -> Result<(), Box<dyn std::error::Error>> {
    let db = DemoDb::new("agent_limits");
    let here = worker(db.path()).await?;
    let limits = here.client().flow_limits();
    let key = FlowScope::key("model-api");
    limits
        .set(FlowLimit::concurrency(key.clone(), AT_ONCE))
        .await?;
    let rate = FlowLimit::rate(key, PER_MINUTE, Duration::from_secs(60)).burst(BURST);
    limits.set(rate).await?;
    let mut other: Child = spawn(db.path())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()?;
    // Its first line "ready" says it serves the file (a test harness may print others first).
    let mut ready = String::new();
    if let Some(out) = other.stdout.take() {
        let mut out = BufReader::new(out);
        ready.clear();
        while out.read_line(&mut ready)? > 0 && ready.trim() != "ready" {
            ready.clear();
        }
        // Whatever it prints later goes nowhere, but must not find the pipe closed.
        std::thread::spawn(move || std::io::copy(&mut out, &mut std::io::sink()));
    }
    if ready.trim() != "ready" {
        let _ = other.kill();
        return Err(format!("the second worker did not start: {ready:?}").into());
    }
    println!(
        "two worker processes ({} and {}) on {}",
        std::process::id(),
        other.id(),
        db.path().display()
    );
    println!("limits on key model-api: {AT_ONCE} at once, {PER_MINUTE} a minute (burst {BURST})");
    let client = here.client();
    let mut runs = Vec::new();
    for i in 0..AGENTS {
        runs.push(
            client
                .start::<Agent>(format!("agent-{i}"), format!("goal {i}"))
                .await?,
        );
    }
    let mut calls = Vec::new();
    for run in runs {
        calls.extend(run.result().await?);
    }
    drop(other.stdin.take());
    let _ = tokio::task::spawn_blocking(move || {
        let stopped = other.wait();
        if stopped.is_err() {
            let _ = other.kill();
        }
    })
    .await;
    here.shutdown().await;

    let most = most_at_once(&calls);
    let first = calls.iter().map(|c| c.start_ms).min().unwrap_or(0);
    let last = calls.iter().map(|c| c.start_ms).max().unwrap_or(0);
    let after_burst = (calls.len() as f64 - f64::from(BURST)).max(0.0);
    let per_minute = after_burst / ((last - first).max(1) as f64 / 60_000.0);
    let mut by_pid: Vec<(u32, usize)> = Vec::new();
    for c in &calls {
        match by_pid.iter_mut().find(|(p, _)| *p == c.pid) {
            Some((_, n)) => *n += 1,
            None => by_pid.push((c.pid, 1)),
        }
    }
    println!("{} model calls in {} ms", calls.len(), last - first);
    for (pid, n) in &by_pid {
        println!("  process {pid}: {n} calls");
    }
    println!("  at most {most} running at once (limit {AT_ONCE})");
    println!("  {per_minute:.0} started a minute after the burst (limit {PER_MINUTE})");
    assert_eq!(calls.len(), AGENTS * STEPS as usize);
    assert!(most <= AT_ONCE, "{most} calls ran at once");
    assert!(
        per_minute <= f64::from(PER_MINUTE) * 1.15,
        "{per_minute:.0} a minute"
    );
    assert_eq!(
        by_pid.len(),
        2,
        "both worker processes ran calls: {by_pid:?}"
    );
    Ok(())
}

/// Runs the scenario with this program started again as the second worker (`--worker FILE`).
// The tests call `run` with a second process of their own.
#[allow(dead_code)]
#[tokio::main]
pub async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().collect();
    if let [_, flag, db] = &args[..] {
        if flag == "--worker" {
            return Ok(worker_process(Path::new(db)).await?);
        }
    }
    let exe = std::env::current_exe()?;
    run(|db| {
        let mut cmd = Command::new(exe);
        cmd.arg("--worker").arg(db);
        cmd
    })
    .await
}
