//! Batches and resets, measured: how many runs a second a batch signals and terminates, and
//! what a reset of a run with a 1,000-event history costs (the `client.reset` call, which
//! copies the history prefix into the new run in one transaction, and until the new run,
//! rebuilt from that prefix by the engine, has taken a signal; the median of several).
//! On a SQLite file and, when `WF_POSTGRES_URL` (or `WF_BENCH_POSTGRES`) names a database, on
//! PostgreSQL, in a schema of this process's own, dropped at the end. Prints figures; asserts
//! nothing about time. About a minute in release with the defaults.
//!
//! ```sh
//! cargo run --release --example batch_bench                 # 2,000 runs per batch
//! cargo run --release --example batch_bench -- 10000        # another count
//! cargo run --release --example batch_bench -- 2000 5000    # and another history length
//! ```

use std::time::{Duration, Instant};
use wf_sdk::batch::{BatchAction, BatchRequest, BatchStatus};
use wf_sdk::client::{ListFilter, ResetPoint};
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

/// Resets measured per store.
const RESETS: usize = 9;
/// Clients starting runs at once.
const STARTERS: usize = 4;

/// Starts `n` runs with workflow ids `prefix-*`, a few at a time.
async fn start_runs(client: &Client, prefix: &str, n: usize) -> Result<(), WfError> {
    let mut starts = Vec::new();
    for part in 0..STARTERS {
        let (client, prefix) = (client.clone(), prefix.to_string());
        starts.push(tokio::spawn(async move {
            for i in (part..n).step_by(STARTERS) {
                client.start::<Idle>(&format!("{prefix}-{i}"), ()).await?;
            }
            Ok::<_, WfError>(())
        }));
    }
    for s in starts {
        s.await
            .map_err(|e| WfError::InvalidConfig(format!("a starter panicked: {e}")))??;
    }
    Ok(())
}

/// Runs `action` over the `n` running runs with workflow ids `prefix-*` (the only running
/// `Idle` runs) and returns runs per second.
async fn measure(
    client: &Client,
    prefix: &str,
    n: usize,
    action: BatchAction,
) -> Result<f64, WfError> {
    start_runs(client, prefix, n).await?;
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
    assert_eq!((b.selected, b.done), (n as u64, n as u64), "{b:?}");
    println!(
        "    {} runs: {} done, {} failed in {secs:.2} s",
        b.selected, b.done, b.failed
    );
    Ok(b.done as f64 / secs)
}

/// The median of `times`.
fn median(mut times: Vec<Duration>) -> Duration {
    times.sort();
    times[times.len() / 2]
}

fn ms(d: Duration) -> String {
    format!("{:.1} ms", d.as_secs_f64() * 1e3)
}

/// Resets a run of about `events` events to its last task, `RESETS` times: the median time of
/// the reset call, and until the new run (rebuilt from the copied prefix) has taken a signal.
async fn measure_resets(client: &Client, events: u64) -> Result<(), WfError> {
    let h = client.start::<Idle>("long", ()).await?;
    // Each signal is one task: `SignalReceived` and `WorkflowTaskCompleted`.
    while h.describe().await?.history_length < events {
        h.poke().await?;
    }
    let (mut calls, mut ready) = (Vec::new(), Vec::new());
    let limit = Duration::from_secs(60);
    let late = |what: &str| WfError::Timeout(format!("{what} took over a minute"));
    for _ in 0..RESETS {
        let t = Instant::now();
        let reset = client.reset("long", ResetPoint::LastGoodTask, "bench");
        tokio::time::timeout(limit, reset)
            .await
            .map_err(|_| late("a reset"))??;
        calls.push(t.elapsed());
        // Recorded by the new run's workflow task: the engine rebuilt it from its history.
        tokio::time::timeout(limit, h.poke())
            .await
            .map_err(|_| late("a signal to the new run"))??;
        ready.push(t.elapsed());
    }
    let length = h.describe().await?.history_length;
    println!(
        "  reset of a {length}-event run: the call {}, until its new run took a signal {} \
         (median of {RESETS})",
        ms(median(calls)),
        ms(median(ready))
    );
    Ok(())
}

async fn on(name: &str, builder: EngineBuilder, n: usize, events: u64) -> Result<(), WfError> {
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
    measure_resets(&client, events).await?;
    engine.shutdown().await;
    Ok(())
}

/// Drops schema `schema` of the database at `url`.
async fn drop_schema(url: &str, schema: &str) {
    match wf_postgres::connect_raw(url).await {
        Ok(client) => {
            let sql = format!("DROP SCHEMA IF EXISTS \"{schema}\" CASCADE");
            if let Err(e) = client.batch_execute(&sql).await {
                eprintln!("could not drop schema {schema}: {e}");
            }
        }
        Err(e) => eprintln!("could not drop schema {schema}: {e}"),
    }
}

#[tokio::main]
async fn main() -> Result<(), WfError> {
    let arg = |i: usize| std::env::args().nth(i).and_then(|a| a.parse::<u64>().ok());
    let n = arg(1).unwrap_or(2_000) as usize;
    let events = arg(2).unwrap_or(1_000);
    let dir = std::env::temp_dir().join(format!("wf-batch-bench-{}", std::process::id()));
    std::fs::create_dir_all(&dir).map_err(|e| WfError::InvalidConfig(e.to_string()))?;
    let db = dir.join("bench.db");
    let sqlite = on("SQLite", Engine::builder().sqlite(&db), n, events).await;
    let _ = std::fs::remove_dir_all(&dir);
    sqlite?;
    let url = std::env::var("WF_BENCH_POSTGRES")
        .or_else(|_| std::env::var("WF_POSTGRES_URL"))
        .ok()
        .filter(|u| !u.trim().is_empty());
    if let Some(url) = url {
        let schema = format!("wf_batch_bench_{}", std::process::id());
        let options = wf_sdk::postgres::PostgresOptions {
            schema: schema.clone(),
            ..Default::default()
        };
        let builder = Engine::builder().postgres_with(url.clone(), options);
        let pg = on("PostgreSQL", builder, n, events).await;
        drop_schema(&url, &schema).await;
        pg?;
    }
    Ok(())
}
