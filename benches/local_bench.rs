//! Local activities against regular ones, on a SQLite file: workflows that each call three
//! tiny activities, run once with `ctx.activity(..)` (an activity task in the store per call,
//! leased by the activity worker, its result sent back to the run) and once with
//! `.local()` (run in the workflow worker during the task, recorded in the task's commit).
//! Prints figures; asserts nothing about time.
//!
//! ```sh
//! cargo run --release --example local_bench            # 1,000 workflows per mode
//! cargo run --release --example local_bench -- 200     # another count
//! ```

use std::time::{Duration, Instant};
use wf_sdk::prelude::*;

/// Three tiny steps.
pub struct Steps;

#[activities]
impl Steps {
    /// Adds one.
    #[activity]
    pub async fn bump(&self, _ctx: ActivityContext, n: u32) -> Result<u32, ActivityError> {
        Ok(n + 1)
    }
}

/// Calls `bump` three times, as regular or local activities.
#[derive(Default)]
pub struct ThreeSteps;

#[workflow]
impl ThreeSteps {
    #[run]
    async fn run(ctx: &mut WorkflowContext<Self>, local: bool) -> Result<u32, WorkflowError> {
        let mut n = 0;
        for _ in 0..3 {
            let call = ctx.activity(Steps::bump, n);
            n = if local {
                call.local().await?
            } else {
                call.await?
            };
        }
        Ok(n)
    }
}

/// Starts `runs` workflows at once and waits for all: the elapsed time and the events of one
/// run's history.
async fn measure(
    client: &Client,
    prefix: &str,
    runs: u32,
    local: bool,
) -> Result<(Duration, usize), WfError> {
    let tag = format!("{prefix}-{}", if local { "local" } else { "regular" });
    let t = Instant::now();
    let mut waiting = Vec::with_capacity(runs as usize);
    for i in 0..runs {
        let (client, tag) = (client.clone(), tag.clone());
        waiting.push(tokio::spawn(async move {
            let h = client
                .start::<ThreeSteps>(&format!("{tag}-{i}"), local)
                .await?;
            let n: u32 = h.result().await?;
            Ok::<_, WfError>(n)
        }));
    }
    for w in waiting {
        let n = w
            .await
            .map_err(|e| WfError::Startup(format!("a bench task stopped: {e}")))??;
        if n != 3 {
            return Err(WfError::Startup(format!("a run returned {n}, not 3")));
        }
    }
    let elapsed = t.elapsed();
    let events = client
        .handle::<ThreeSteps>(&format!("{tag}-0"))
        .history()
        .await?
        .len();
    Ok((elapsed, events))
}

#[tokio::main]
async fn main() -> Result<(), WfError> {
    let runs: u32 = std::env::args()
        .nth(1)
        .and_then(|a| a.parse().ok())
        .unwrap_or(1_000);
    let path = std::env::temp_dir().join(format!("wf-local-bench-{}.db", std::process::id()));
    let engine = Engine::builder()
        .sqlite(&path)
        .workflow::<ThreeSteps>()
        .activities(Steps)
        .build()
        .await?;
    let client = engine.client();
    // A short warm-up of both paths (file growth, caches).
    measure(&client, "warm-up", runs.min(50), false).await?;
    measure(&client, "warm-up", runs.min(50), true).await?;
    println!(
        "{runs} workflows, each calling 3 tiny activities, on SQLite ({})",
        path.display()
    );
    for local in [false, true] {
        let (elapsed, events) = measure(&client, "bench", runs, local).await?;
        println!(
            "  {:<8} {:>8.2?}   {:>8.0} workflows/s   {:>8.0} activities/s   {events} events per run",
            if local { "local" } else { "regular" },
            elapsed,
            f64::from(runs) / elapsed.as_secs_f64(),
            f64::from(runs * 3) / elapsed.as_secs_f64(),
        );
    }
    engine.shutdown().await;
    for suffix in ["", "-wal", "-shm"] {
        let _ = std::fs::remove_file(format!("{}{suffix}", path.display()));
    }
    Ok(())
}
