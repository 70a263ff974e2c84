//! Batches, measured: how many runs a second a batch terminates and signals, on a SQLite file
//! and (with `WF_BENCH_POSTGRES=URL`) on PostgreSQL, in schema `wf_batch_bench` (created if
//! missing; the runs stay there: point it at a scratch database). Prints figures; asserts
//! nothing about time.
//!
//! ```sh
//! cargo run --release --example batch_bench            # 5,000 runs per batch
//! cargo run --release --example batch_bench -- 20000   # another count
//! ```

use std::time::{Duration, Instant};
use wf_sdk::batch::{BatchAction, BatchRequest, BatchStatus};
use wf_sdk::client::ListFilter;
use wf_sdk::engine::EngineBuilder;
use wf_sdk::prelude::*;

/// Waits for `stop`, counting pokes.
#[derive(Default)]
pub struct Idle {
    pokes: u32,
    stop: bool,
}

#[workflow]
impl Idle {
    #[run]
    async fn run(ctx: &mut WorkflowContext<Self>) -> Result<u32, WorkflowError> {
        ctx.wait_condition(|s| s.stop).await;
        Ok(ctx.state(|s| s.pokes))
    }

    #[signal]
    fn poke(&mut self) {
        self.pokes += 1;
    }

    #[signal]
    fn stop(&mut self) {
        self.stop = true;
    }
}

/// Runs `action` over the `n` runs with workflow ids `prefix-*` and returns runs per second.
async fn measure(
    client: &Client,
    prefix: &str,
    n: usize,
    action: BatchAction,
) -> Result<f64, WfError> {
    for i in 0..n {
        client.start::<Idle>(&format!("{prefix}-{i}"), ()).await?;
    }
    let filter = ListFilter {
        workflow_type: Some("Idle".into()),
        status: Some(RunStatus::Running),
        ..Default::default()
    };
    let t = Instant::now();
    let b = client
        .batches()
        .start(BatchRequest::new(filter, action))
        .await?;
    let b = client
        .batches()
        .wait(&b.batch_id, Duration::from_millis(5))
        .await?;
    let secs = t.elapsed().as_secs_f64();
    assert_eq!(b.status, BatchStatus::Completed, "{b:?}");
    println!(
        "    {} runs: {} done, {} failed in {secs:.2} s",
        b.selected, b.done, b.failed
    );
    Ok(b.done as f64 / secs)
}

async fn on(name: &str, builder: EngineBuilder, n: usize) -> Result<(), WfError> {
    let engine = builder.workflow::<Idle>().build().await?;
    let client = engine.client();
    println!("{name}:");
    let signal = measure(&client, "s", n, BatchAction::signal("poke", &())?).await?;
    println!("  batch signal     {signal:>9.0} runs/s");
    // The signalled runs end, so that the terminate batch selects only its own runs.
    for i in 0..n {
        client.handle::<Idle>(&format!("s-{i}")).stop().await?;
    }
    for i in 0..n {
        client.handle::<Idle>(&format!("s-{i}")).result().await?;
    }
    let terminate = measure(&client, "t", n, BatchAction::Terminate).await?;
    println!("  batch terminate  {terminate:>9.0} runs/s");
    engine.shutdown().await;
    Ok(())
}

#[tokio::main]
async fn main() -> Result<(), WfError> {
    let n: usize = std::env::args()
        .nth(1)
        .and_then(|a| a.parse().ok())
        .unwrap_or(5_000);
    let dir = std::env::temp_dir().join(format!("wf-batch-bench-{}", std::process::id()));
    std::fs::create_dir_all(&dir).map_err(|e| WfError::InvalidConfig(e.to_string()))?;
    let db = dir.join("bench.db");
    on("SQLite", Engine::builder().sqlite(&db), n).await?;
    let _ = std::fs::remove_dir_all(&dir);
    if let Ok(url) = std::env::var("WF_BENCH_POSTGRES") {
        let options = wf_sdk::postgres::PostgresOptions {
            schema: "wf_batch_bench".into(),
            ..Default::default()
        };
        on(
            "PostgreSQL",
            Engine::builder().postgres_with(url, options),
            n,
        )
        .await?;
    }
    Ok(())
}
