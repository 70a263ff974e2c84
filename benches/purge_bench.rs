//! Retention's purge on a SQLite file, measured: how fast closed runs go, and what a purge in
//! batches costs the commits of a live run meanwhile (update round trips, idle vs during the
//! purge). Prints figures; asserts nothing about time.
//!
//! ```sh
//! cargo run --release --example purge_bench            # 20,000 closed runs
//! cargo run --release --example purge_bench -- 5000    # another count
//! ```

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};
use wf_sdk::client::PurgeRequest;
use wf_sdk::prelude::*;

/// Returns at once: a closed run with a short history.
#[derive(Default)]
pub struct Done;

#[workflow]
impl Done {
    #[run]
    async fn run(_ctx: &mut WorkflowContext<Self>, n: u32) -> Result<u32, WorkflowError> {
        Ok(n)
    }
}

/// A live run that takes updates.
#[derive(Default)]
pub struct Counter {
    n: u32,
}

#[workflow]
impl Counter {
    #[run]
    async fn run(ctx: &mut WorkflowContext<Self>) -> Result<(), WorkflowError> {
        ctx.wait_condition(|_| false).await;
        Ok(())
    }

    #[update]
    fn bump(&mut self) -> Result<u32, UpdateError> {
        self.n += 1;
        Ok(self.n)
    }
}

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    sorted[((sorted.len() - 1) as f64 * p).round() as usize]
}

/// Update round trips until `stop` is set (at least one), sorted.
async fn round_trips(counter: &WorkflowHandle<Counter>, stop: &AtomicBool) -> Vec<Duration> {
    let mut times = Vec::new();
    loop {
        let t = Instant::now();
        counter.bump().await.expect("update");
        times.push(t.elapsed());
        if stop.load(Ordering::SeqCst) && !times.is_empty() {
            break;
        }
    }
    times.sort();
    times
}

fn show(what: &str, times: &[Duration]) {
    println!(
        "  {what:<28} {:>6} updates   p50 {:>8.2?}   p99 {:>8.2?}   max {:>8.2?}",
        times.len(),
        percentile(times, 0.5),
        percentile(times, 0.99),
        times[times.len() - 1]
    );
}

#[tokio::main]
async fn main() -> Result<(), WfError> {
    let runs: u32 = std::env::args()
        .nth(1)
        .and_then(|a| a.parse().ok())
        .unwrap_or(20_000);
    let path = std::env::temp_dir().join(format!("wf-purge-bench-{}.db", std::process::id()));
    let clock = TestClock::new();
    let engine = Engine::builder()
        .sqlite(&path)
        .clock(clock.clone())
        .workflow::<Done>()
        .workflow::<Counter>()
        .build()
        .await?;
    let client = engine.client();
    let t = Instant::now();
    for i in 0..runs {
        client.start::<Done>(&format!("done-{i}"), i).await?;
    }
    for i in 0..runs {
        client.handle::<Done>(&format!("done-{i}")).result().await?;
    }
    println!("{runs} closed runs written in {:.2?}", t.elapsed());
    let counter = client.start::<Counter>("counter", ()).await?;
    clock.advance(Duration::from_secs(2 * 86_400));
    let cutoff = SystemTime::UNIX_EPOCH + Duration::from_millis(clock.now_ms() as u64)
        - Duration::from_secs(86_400);

    // Idle: the same number of round trips the purge will see, roughly.
    let stop = AtomicBool::new(false);
    let idle = {
        let sampling = round_trips(&counter, &stop);
        tokio::pin!(sampling);
        tokio::select! {
            times = &mut sampling => times,
            () = tokio::time::sleep(Duration::from_secs(1)) => {
                stop.store(true, Ordering::SeqCst);
                sampling.await
            }
        }
    };

    let stop = Arc::new(AtomicBool::new(false));
    let purging = {
        let (client, stop) = (client.clone(), stop.clone());
        tokio::spawn(async move {
            let t = Instant::now();
            let mut batches = 0u32;
            let mut purged = 0u64;
            loop {
                let report = client.purge(PurgeRequest::closed_before(cutoff)).await?;
                batches += 1;
                purged += report.runs;
                if !report.more {
                    break;
                }
            }
            stop.store(true, Ordering::SeqCst);
            Ok::<_, WfError>((purged, batches, t.elapsed()))
        })
    };
    let during = round_trips(&counter, &stop).await;
    let (purged, batches, took) = purging.await.expect("the purge task")?;
    println!(
        "purged {purged} runs in {batches} batches of at most {} in {took:.2?}: {:.0} runs/s",
        PurgeRequest::closed_before(cutoff).batch,
        purged as f64 / took.as_secs_f64()
    );
    println!("a live run's update round trips (SQLite, group commit):");
    show("idle", &idle);
    show("during the purge", &during);
    engine.shutdown().await;
    for ext in ["", "-wal", "-shm"] {
        let _ = std::fs::remove_file(format!("{}{ext}", path.display()));
    }
    Ok(())
}
