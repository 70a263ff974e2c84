//! The bench's workload (x): messages between processes. A second process (this binary run
//! again with `--cross-process-child FILE`) runs the engine with workers on a SQLite file; this
//! process is a `client_only` engine on the same file and measures, against the same figures
//! with everything in one process:
//! - update round trips (validator + handler, awaited to completion), one after another;
//! - signal to handler: each signal carries the sender's wall-clock time and the handler
//!   records how long it took to run; the run returns the delays once it has them all.

use super::CounterClient;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};
use wf_sdk::prelude::*;

/// Wall-clock microseconds (both processes share the clock).
pub fn wall_us() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_micros() as i64)
        .unwrap_or(0)
}

/// Records how long each signal took from its sender to its handler.
#[derive(Default)]
pub struct Stamps {
    delays_us: Vec<i64>,
    expected: usize,
}

#[workflow]
impl Stamps {
    #[init]
    fn new(expected: &usize) -> Self {
        Stamps {
            delays_us: Vec::new(),
            expected: *expected,
        }
    }

    #[run]
    async fn run(
        ctx: &mut WorkflowContext<Self>,
        expected: usize,
    ) -> Result<Vec<i64>, WorkflowError> {
        ctx.wait_condition(move |s| s.delays_us.len() >= expected)
            .await;
        Ok(ctx.state(|s| s.delays_us.clone()))
    }

    /// Reads the wall clock: fine for a measurement, never in a real workflow (a replay would
    /// compute other values; the bench reads the values the live run returned).
    #[signal]
    fn stamp(&mut self, sent_us: i64) {
        if self.delays_us.len() < self.expected {
            self.delays_us.push(wall_us() - sent_us);
        }
    }
}

/// An engine on `path` running the bench's workflows, or only a client of it.
pub async fn engine(path: &Path, workers: bool) -> Result<Engine, WfError> {
    let b = Engine::builder()
        .sqlite(path)
        .workflow::<super::Counter>()
        .workflow::<Stamps>();
    if workers { b } else { b.client_only() }.build().await
}

/// The child process: runs workers on `path` (its WAL warmed first, as the in-process figures'
/// is), says "ready" on stdout, and shuts down when its stdin closes (the parent went away).
pub async fn child(path: PathBuf) -> Result<(), WfError> {
    let engine = engine(&path, true).await?;
    super::warm_wal(&engine.client(), &path, false).await?;
    println!("ready");
    let _ = tokio::task::spawn_blocking(|| {
        let mut sink = Vec::new();
        let _ = std::io::stdin().read_to_end(&mut sink);
    })
    .await;
    engine.shutdown().await;
    Ok(())
}

/// `n` signals to a new `Stamps` run, one at a time with a pause between (each is handled on
/// its own, as a lone message is): the delays, sorted.
async fn signal_delays(client: &Client, id: &str, n: usize) -> Result<Vec<Duration>, WfError> {
    let h = client.start::<Stamps>(id, n).await?;
    for _ in 0..n {
        h.stamp(wall_us()).await?;
        tokio::time::sleep(Duration::from_millis(3)).await;
    }
    let mut delays: Vec<Duration> = h
        .result()
        .await?
        .into_iter()
        .map(|us| Duration::from_micros(us.max(0) as u64))
        .collect();
    delays.sort();
    Ok(delays)
}

/// `n` sequential updates: their round trips, sorted.
async fn update_round_trips(client: &Client, id: &str, n: usize) -> Result<Vec<Duration>, WfError> {
    let h = client.start::<super::Counter>(id, ()).await?;
    h.increment(1).await?; // the run is held by the worker from here on
    let mut lat = Vec::with_capacity(n);
    for _ in 0..n {
        let t = Instant::now();
        h.increment(1).await?;
        lat.push(t.elapsed());
    }
    lat.sort();
    Ok(lat)
}

/// `p50 X ms  p99 Y ms` of sorted durations.
pub fn p50_p99(sorted: &[Duration]) -> String {
    format!(
        "p50 {:.3} ms  p99 {:.3} ms",
        super::ms(super::percentile(sorted, 0.5)),
        super::ms(super::percentile(sorted, 0.99))
    )
}

pub async fn bench_x(b: &mut super::Bench) -> Result<(), WfError> {
    let n = if b.args.quick { 50 } else { 200 };
    // In one process, for comparison.
    let path = b.db("x-local");
    let local = engine(&path, true).await?;
    super::warm_wal(&local.client(), &path, false).await?;
    let updates_here = update_round_trips(&local.client(), "x-u", n).await?;
    let signals_here = signal_delays(&local.client(), "x-s", n).await?;
    local.shutdown().await;

    // The bench cannot go on without its child process: a failure to run it ends the bench.
    let failed = |e: String| -> ! { panic!("(x) the child process: {e}") };
    let path = b.db("x-cross");
    let exe = std::env::current_exe().unwrap_or_else(|e| failed(e.to_string()));
    let mut child = tokio::process::Command::new(exe)
        .arg("--cross-process-child")
        .arg(&path)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .unwrap_or_else(|e| failed(e.to_string()));
    let stdout = child.stdout.take().expect("piped");
    let mut lines = tokio::io::AsyncBufReadExt::lines(tokio::io::BufReader::new(stdout));
    match lines.next_line().await {
        Ok(Some(line)) if line == "ready" => {}
        other => failed(format!("no ready line: {other:?}")),
    }
    let client_engine = engine(&path, false).await?;
    let client = client_engine.client();
    let updates_there = update_round_trips(&client, "x-u", n).await?;
    let signals_there = signal_delays(&client, "x-s", n).await?;
    client_engine.shutdown().await;
    drop(child.stdin.take());
    let _ = child.wait().await;

    let there = "(x)   the same from a client-only engine, another process";
    let measured = [
        (
            format!("(x) {n} sequential updates, in one process"),
            &updates_here,
            None,
        ),
        (
            there.to_string(),
            &updates_there,
            Some(("x_update_p50_ms", "x_update_p99_ms")),
        ),
        (
            format!("(x) {n} signals, sender to handler, in one process"),
            &signals_here,
            None,
        ),
        (
            there.to_string(),
            &signals_there,
            Some(("x_signal_p50_ms", "x_signal_p99_ms")),
        ),
    ];
    for (name, sorted, keys) in measured {
        b.row(&name, p50_p99(sorted));
        if let Some((p50, p99)) = keys {
            b.record(p50, super::ms(super::percentile(sorted, 0.5)));
            b.record(p99, super::ms(super::percentile(sorted, 0.99)));
        }
    }
    Ok(())
}
