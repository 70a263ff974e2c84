//! The benchmark suite: the four peer workloads plus scale, on the embedded SQLite store with
//! default durability (fsync per commit), printed as a table and then one JSON line.
//!
//! ```text
//! cargo run --release --example bench                 # full sizes
//! cargo run --release --example bench -- --quick      # smaller sizes, well under a minute
//! cargo run --release --example bench -- --only a,b   # some workloads
//! cargo run --release --example bench -- --memory     # the in-memory store, for comparison
//! cargo run --release --example bench -- --store postgres  # on WF_POSTGRES_URL (or --postgres-url)
//! cargo run --release --example bench -- --store postgres --workers 2 --only a  # (a) also with 2 processes
//! cargo run --release --example bench -- --only b --cross-process  # (b) and (x)
//! cargo run --release --example bench -- --http       # (a), (b), (c), (g) over HTTP alone
//! cargo run --release --example bench -- --http --tls # the same over HTTPS (https_* keys)
//! ```
//!
//! Workloads (kept exactly as defined so results compare with Temporal, Restate and DBOS):
//! (a) N workflows each waiting for a signal: start all, signal all, await all; workflows/s.
//! (b) 200 sequential updates (validator + handler) on one workflow; p50/p99 latency.
//! (c) 200 sequential queries on one workflow, cached; each right after a signal with an id
//!     (read your writes); and on an evicted run whose history has 1,000 events (answered by
//!     replay).
//! (d) one workflow running 100 sequential no-op activities; total time.
//! (e) replay of a 100,000-event history; events/s.
//! (f) 100,000 workflows waiting on a signal: peak RSS and store size; then signal all.
//! (g) 100,000 signals to 100 workflows from 1,000 concurrent senders (and, for comparison, 64);
//!     signals/s.
//! (q) flow limits held in the store: 500 activity attempts under a concurrency limit of 4 (the
//!     most seen running at once); a rate limit of 100/s (the rate measured); the cost of a
//!     limit on (a) and (d), alternated with the same runs without one.
//! (s) durable streams: entries written per second (an activity, eight at once, a workflow
//!     task), and write-to-reader latency p50/p99 of workflow and activity writes, the reader
//!     in this process, in another (same file or schema), and over HTTP (SSE).
//! (x) messages between processes: update round trips and signal-to-handler delays from a
//!     client-only engine in this process to a worker in a child process on the same SQLite
//!     file, next to the same in one process (`--cross-process`, or `--only x`; SQLite only).
//! (http) (a), (b), (c), (g) with the client in a child process over loopback HTTP: the typed
//!     remote client, and plain JSON requests for (b) and (c) (`--http`, or `--only http`);
//!     over HTTPS with `--tls` (a certificate made for the run).

use std::path::PathBuf;
use std::time::{Duration, Instant};
use wf_sdk::engine::EngineBuilder;
use wf_sdk::prelude::*;

#[path = "support/bench_args.rs"]
mod args;
#[path = "support/bench_cross.rs"]
mod cross;
#[path = "support/bench_flow.rs"]
mod flow;
#[path = "support/bench_http.rs"]
mod http;
#[path = "support/bench_pg.rs"]
mod pg;
#[path = "support/bench_streams.rs"]
mod streams;

// ---------------------------------------------------------------------------------------------
// Workflows

/// (a), (f): waits for one signal.
#[derive(Default)]
pub struct Waiter {
    got: bool,
}

#[workflow]
impl Waiter {
    #[run]
    async fn run(ctx: &mut WorkflowContext<Self>) -> Result<(), WorkflowError> {
        ctx.wait_condition(|s| s.got).await;
        Ok(())
    }

    #[signal]
    fn go(&mut self) {
        self.got = true;
    }
}

/// (b), (c), (e), (g): a counter with updates, queries and signals.
#[derive(Default)]
pub struct Counter {
    n: u64,
    done: bool,
}

#[workflow]
impl Counter {
    #[run]
    async fn run(ctx: &mut WorkflowContext<Self>) -> Result<u64, WorkflowError> {
        ctx.wait_condition(|s| s.done).await;
        Ok(ctx.state(|s| s.n))
    }

    #[update]
    fn increment(&mut self, by: u64) -> Result<u64, UpdateError> {
        self.n += by;
        Ok(self.n)
    }

    #[validator(increment)]
    fn validate_increment(&self, by: &u64) -> Result<(), Rejection> {
        if *by == 0 {
            return Err(Rejection::new("increment by at least 1"));
        }
        Ok(())
    }

    #[signal]
    fn bump(&mut self) {
        self.n += 1;
    }

    #[signal]
    fn finish(&mut self) {
        self.done = true;
    }

    #[query]
    fn value(&self) -> u64 {
        self.n
    }
}

/// (d): 100 sequential no-op activities.
#[derive(Default)]
pub struct Chain;

#[workflow]
impl Chain {
    #[run]
    async fn run(ctx: &mut WorkflowContext<Self>, n: u32) -> Result<u32, WorkflowError> {
        let mut last = 0;
        for i in 0..n {
            last = ctx.activity(Noop::noop, i).await?;
        }
        Ok(last)
    }
}

/// The no-op activity.
pub struct Noop;

#[activities]
impl Noop {
    /// Returns its input.
    #[activity]
    pub async fn noop(&self, _ctx: ActivityContext, i: u32) -> Result<u32, ActivityError> {
        Ok(i)
    }
}

// ---------------------------------------------------------------------------------------------
// Harness

struct Bench {
    args: args::Args,
    dir: PathBuf,
    rows: Vec<(String, String)>,
    json: Vec<(&'static str, f64)>,
    n: usize,
}

impl Bench {
    fn wants(&self, w: &str) -> bool {
        self.args
            .only
            .as_ref()
            .is_none_or(|o| o.iter().any(|x| x == w))
    }

    /// A new store file for a workload. The earlier workloads' files (their engines are shut
    /// down) are deleted first: the kernel would otherwise write their dirty pages back while
    /// this workload waits on its own fsyncs.
    fn db(&mut self, tag: &str) -> PathBuf {
        self.n += 1;
        if let Ok(entries) = std::fs::read_dir(&self.dir) {
            for entry in entries.flatten() {
                let _ = std::fs::remove_file(entry.path());
            }
        }
        self.dir.join(format!("{tag}-{}.db", self.n))
    }

    /// An engine on a new store file, with the default run cache unless `cache` says otherwise.
    async fn engine(
        &mut self,
        tag: &str,
        cache: Option<usize>,
    ) -> Result<(Engine, PathBuf), WfError> {
        self.engine_with(tag, cache, |b| b).await
    }

    /// [`engine`](Self::engine), with what `extra` adds to its builder.
    async fn engine_with(
        &mut self,
        tag: &str,
        cache: Option<usize>,
        extra: impl FnOnce(EngineBuilder) -> EngineBuilder,
    ) -> Result<(Engine, PathBuf), WfError> {
        let path = self.db(tag);
        let b = extra(Engine::builder());
        let b = match cache {
            Some(runs) => b.cache_capacity(runs),
            None => b,
        };
        let b = b
            .workflow::<Waiter>()
            .workflow::<Counter>()
            .workflow::<Chain>()
            .activities(Noop);
        let b = if let Some(url) = &self.args.postgres {
            b.postgres_with(url, pg::options(self.n))
        } else if self.args.memory {
            b.memory()
        } else {
            b.sqlite(&path)
        };
        Ok((b.build().await?, path))
    }

    /// Whether the store is a SQLite file (its WAL, its size, a second process on it).
    fn on_file(&self) -> bool {
        !self.args.memory && self.args.postgres.is_none()
    }

    fn row(&mut self, name: &str, value: String) {
        println!("{name:<58} {value}");
        self.rows.push((name.to_string(), value));
    }

    fn record(&mut self, key: &'static str, v: f64) {
        self.json.push((key, v));
    }

    /// Prints the rows a child bench process printed (its lines starting with `prefix`) and
    /// records `keys` from its closing JSON line; its output if it failed or lacks a key.
    fn child_rows(
        &mut self,
        out: &std::process::Output,
        prefix: &str,
        keys: &[&'static str],
    ) -> Result<(), String> {
        let stdout = String::from_utf8_lossy(&out.stdout);
        if !out.status.success() {
            return Err(format!("{stdout}{}", String::from_utf8_lossy(&out.stderr)));
        }
        for line in stdout.lines().filter(|l| l.starts_with(prefix)) {
            let (name, value) = line.split_at(line.len().min(58));
            self.row(name.trim_end(), value.trim().to_string());
        }
        let json = stdout.lines().last().unwrap_or_default();
        for &key in keys {
            let value = json
                .split(&format!("\"{key}\": "))
                .nth(1)
                .and_then(|rest| rest.split([',', '}']).next())
                .and_then(|v| v.trim().parse::<f64>().ok())
                .ok_or_else(|| format!("no {key} in {json:?}"))?;
            self.record(key, value);
        }
        Ok(())
    }
}

/// The figures as one JSON object on one line (what the bench prints last).
fn json_line(figures: &[(&str, f64)]) -> String {
    let fields: Vec<String> = figures
        .iter()
        .map(|(k, v)| format!("\"{k}\": {v:.3}"))
        .collect();
    format!("{{{}}}", fields.join(", "))
}

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    if sorted.is_empty() {
        return Duration::ZERO;
    }
    let i = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[i.min(sorted.len() - 1)]
}

fn peak_rss_mb() -> f64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find(|l| l.starts_with("VmHWM:"))
        .and_then(|l| l.split_whitespace().nth(1))
        .and_then(|kb| kb.parse::<f64>().ok())
        .map(|kb| kb / 1024.0)
        .unwrap_or(f64::NAN)
}

/// The size of the store's file `path` + `suffix` ("" for the database, "-wal" for its WAL).
fn file_mb(path: &std::path::Path, suffix: &str) -> f64 {
    std::fs::metadata(format!("{}{suffix}", path.display()))
        .map(|m| m.len() as f64 / 1_048_576.0)
        .unwrap_or(0.0)
}

/// Starts `n` waiters, signals them all, awaits all results; workflows/s end to end.
async fn waiters(client: &Client, prefix: &str, n: usize) -> Result<f64, WfError> {
    Ok(waiter_phases(client, prefix, n).await?.0)
}

/// [`waiters`], with each phase's rate: (workflows/s, [start, signal, result] per second).
async fn waiter_phases(
    client: &Client,
    prefix: &str,
    n: usize,
) -> Result<(f64, [f64; 3]), WfError> {
    let t = Instant::now();
    let mut rates = [0.0; 3];
    for (rate, phase) in rates
        .iter_mut()
        .zip([Phase::Start, Phase::Signal, Phase::Result])
    {
        let p = Instant::now();
        run_all(client, n, prefix, phase).await?;
        *rate = n as f64 / p.elapsed().as_secs_f64();
    }
    Ok((n as f64 / t.elapsed().as_secs_f64(), rates))
}

#[derive(Clone, Copy)]
enum Phase {
    Start,
    Signal,
    Result,
}

/// Runs one phase for `n` workflows from 64 concurrent client tasks.
async fn run_all(client: &Client, n: usize, prefix: &str, phase: Phase) -> Result<(), WfError> {
    let tasks = 64.min(n.max(1));
    let mut joins = Vec::with_capacity(tasks);
    for t in 0..tasks {
        let client = client.clone();
        let prefix = prefix.to_string();
        joins.push(tokio::spawn(async move {
            let mut i = t;
            while i < n {
                let id = format!("{prefix}-{i}");
                match phase {
                    Phase::Start => {
                        client.start::<Waiter>(id, ()).await?;
                    }
                    Phase::Signal => client.handle::<Waiter>(id).go().await?,
                    Phase::Result => client.handle::<Waiter>(id).result().await?,
                }
                i += tasks;
            }
            Ok::<(), WfError>(())
        }));
    }
    for j in joins {
        j.await.expect("a bench task panicked")?;
    }
    Ok(())
}

async fn bench_a(b: &mut Bench) -> Result<(), WfError> {
    let small = 200;
    let large = if b.args.quick { 2_000 } else { 10_000 };
    let (engine, _) = b.engine("a", None).await?;
    let client = engine.client();
    let rate = waiters(&client, "a", small).await?;
    b.row(
        &format!("(a) {small} workflows: start, signal, result"),
        format!("{rate:>10.0} workflows/s"),
    );
    b.record("a_wf_per_s", rate);
    let (rate, [start, signal, result]) = waiter_phases(&client, "a10k", large).await?;
    b.row(
        &format!("(a) {large} workflows: start, signal, result"),
        format!("{rate:>10.0} workflows/s"),
    );
    b.row(
        &format!("(a) {large} workflows, by phase: start / signal / result"),
        format!("{start:>6.0} / {signal:.0} / {result:.0} per s"),
    );
    b.record("a10k_wf_per_s", rate);
    if let (Some(url), n @ 2..) = (b.args.postgres.clone(), b.args.workers) {
        // The same with this process and n - 1 more worker processes on its database.
        let failed = |e: String| -> ! { panic!("(a) with {n} worker processes: {e}") };
        let schema = pg::options(b.n).schema;
        let workers = pg::Workers::start(&url, &schema, n - 1)
            .await
            .unwrap_or_else(|e| failed(e));
        let rate = waiters(&client, "a10k-np", large).await;
        workers.stop().await;
        let rate = rate?;
        b.row(
            &format!("(a) {large} workflows, {n} worker processes"),
            format!("{rate:>10.0} workflows/s"),
        );
        b.record("a10k_np_wf_per_s", rate);
    }
    engine.shutdown().await;
    Ok(())
}

/// 200 sequential updates on `h`, each awaited to completion: (p50, p99).
async fn sequential_updates(h: &WorkflowHandle<Counter>) -> Result<(Duration, Duration), WfError> {
    let first = h.value().await?;
    let mut lat = Vec::with_capacity(200);
    for i in 0..200u64 {
        let t = Instant::now();
        let v = h.increment(1).await?;
        lat.push(t.elapsed());
        assert_eq!(v, first + i + 1);
    }
    lat.sort();
    Ok((percentile(&lat, 0.5), percentile(&lat, 0.99)))
}

async fn bench_b(b: &mut Bench) -> Result<(), WfError> {
    let (engine, path) = b.engine("b", None).await?;
    let client = engine.client();
    let h = client.start::<Counter>("b", ()).await?;
    h.increment(1).await?; // warm: the run is cached
    let cold = sequential_updates(&h).await?;
    warm_wal(&client, &path, !b.on_file()).await?;
    let (p50, p99) = sequential_updates(&h).await?;
    b.row(
        "(b) 200 sequential updates (validator + handler)",
        format!("p50 {:.3} ms  p99 {:.3} ms", ms(p50), ms(p99)),
    );
    if b.on_file() {
        b.row(
            "(b)   the same on a new database file (WAL growing)",
            format!("p50 {:.3} ms  p99 {:.3} ms", ms(cold.0), ms(cold.1)),
        );
    }
    b.record("b_p50_ms", ms(p50));
    b.record("b_p99_ms", ms(p99));
    engine.shutdown().await;
    Ok(())
}

/// Brings a new store file to the state of one in service: its WAL has grown to its working
/// size once and is then rewritten in place. Until then every commit makes the WAL file
/// longer, and an fsync of a file that grew also waits for the file system to journal its
/// new size (about 0.2 ms more per commit on this VM's ext4). Runs updates on a side
/// workflow until the WAL stops growing. The in-memory store needs nothing.
async fn warm_wal(client: &Client, path: &std::path::Path, memory: bool) -> Result<(), WfError> {
    if memory {
        return Ok(());
    }
    let h = client.start::<Counter>("warm-wal", ()).await?;
    let (mut last, mut steady) = (file_mb(path, "-wal"), 0);
    // At most ~25,000 updates: far more than one WAL cycle.
    for _ in 0..500 {
        for _ in 0..50 {
            h.increment(1).await?;
        }
        let now = file_mb(path, "-wal");
        steady = if now == last && now > 0.0 {
            steady + 1
        } else {
            0
        };
        if steady == 4 {
            break;
        }
        last = now;
    }
    h.finish().await?;
    Ok(())
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

fn us(d: Duration) -> f64 {
    d.as_secs_f64() * 1_000_000.0
}

async fn bench_c(b: &mut Bench) -> Result<(), WfError> {
    let (engine, _) = b.engine("c", Some(1)).await?;
    let client = engine.client();
    let h = client.start::<Counter>("c", ()).await?;
    h.increment(1).await?;
    let mut lat = Vec::with_capacity(200);
    for _ in 0..200 {
        let t = Instant::now();
        let v = h.value().await?;
        lat.push(t.elapsed());
        assert_eq!(v, 1);
    }
    lat.sort();
    let (p50, p99) = (percentile(&lat, 0.5), percentile(&lat, 0.99));
    b.row(
        "(c) 200 sequential queries, cached run",
        format!("p50 {:.1} us  p99 {:.1} us", us(p50), us(p99)),
    );
    b.record("c_p50_us", us(p50));
    b.record("c_p99_us", us(p99));

    // Read your writes: a signal with an id is acknowledged once in the run's inbox; the
    // query right after it must see it, before the task that applies it may have run.
    let mut lat = Vec::with_capacity(200);
    for i in 0..200u64 {
        h.bump().signal_id(format!("c-{i}")).await?;
        let t = Instant::now();
        let v = h.value().await?;
        lat.push(t.elapsed());
        assert_eq!(v, i + 2);
    }
    lat.sort();
    let (p50, p99) = (percentile(&lat, 0.5), percentile(&lat, 0.99));
    b.row(
        "(c) a query right after a signal with an id, cached run",
        format!("p50 {:.1} us  p99 {:.1} us", us(p50), us(p99)),
    );
    b.record("c_after_signal_id_p50_us", us(p50));

    // A run with a 1,000-event history, then evicted (cache of one: another run takes it).
    let big = client.start::<Counter>("c-big", ()).await?;
    let mut len = big.history().await?.len();
    while len < 1_000 {
        let burst = (1_000 - len).div_ceil(2).max(1);
        let mut joins = Vec::new();
        for _ in 0..burst {
            let big = big.clone();
            joins.push(tokio::spawn(async move { big.bump().await }));
        }
        for j in joins {
            j.await.expect("a bench task panicked")?;
        }
        loop {
            let applied = big.value().await?;
            let now = big.history().await?.len();
            if applied as usize >= 1 && now >= len + burst {
                len = now;
                break;
            }
            tokio::time::sleep(Duration::from_millis(2)).await;
        }
    }
    let other = client.start::<Counter>("c-other", ()).await?;
    other.increment(1).await?;
    let mut lat = Vec::with_capacity(50);
    for _ in 0..50 {
        let t = Instant::now();
        big.value().await?;
        lat.push(t.elapsed());
    }
    lat.sort();
    let p50 = percentile(&lat, 0.5);
    b.row(
        &format!("(c) queries on an evicted run, {len}-event history"),
        format!("p50 {:.3} ms", ms(p50)),
    );
    b.record("c_evicted_p50_ms", ms(p50));
    engine.shutdown().await;
    Ok(())
}

/// Runs a workflow of 100 sequential no-op activities: its time from start to result.
async fn activity_chain(client: &Client, id: &str) -> Result<Duration, WfError> {
    let t = Instant::now();
    let last = client.start::<Chain>(id, 100).await?.result().await?;
    let total = t.elapsed();
    assert_eq!(last, 99);
    Ok(total)
}

async fn bench_d(b: &mut Bench) -> Result<(), WfError> {
    let (engine, path) = b.engine("d", None).await?;
    let client = engine.client();
    // Warm up the path once.
    client.start::<Chain>("d-warm", 3).await?.result().await?;
    let cold = activity_chain(&client, "d-cold").await?;
    warm_wal(&client, &path, !b.on_file()).await?;
    let total = activity_chain(&client, "d").await?;
    b.row(
        "(d) one workflow, 100 sequential no-op activities",
        format!("{:>10.1} ms", ms(total)),
    );
    if b.on_file() {
        b.row(
            "(d)   the same on a new database file (WAL growing)",
            format!("{:>10.1} ms", ms(cold)),
        );
    }
    b.record("d_ms", ms(total));
    engine.shutdown().await;
    Ok(())
}

async fn bench_e(b: &mut Bench) -> Result<(), WfError> {
    let target = if b.args.quick { 20_000 } else { 100_000 };
    let (engine, path) = b.engine("e", None).await?;
    let client = engine.client();
    let h = client.start::<Counter>("e", ()).await?;
    // Signals in bursts: each workflow task records a burst of SignalReceived events.
    let mut sent = 0usize;
    while sent < target {
        let burst = 2_000.min(target - sent);
        let mut joins = Vec::new();
        for t in 0..16 {
            let h = h.clone();
            joins.push(tokio::spawn(async move {
                let mut i = t;
                while i < burst {
                    h.bump().await?;
                    i += 16;
                }
                Ok::<(), WfError>(())
            }));
        }
        for j in joins {
            j.await.expect("a bench task panicked")?;
        }
        sent += burst;
    }
    while h.value().await? < target as u64 {
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let events = h.history().await?.len();
    engine.shutdown().await;
    // A fresh engine without workers answers the query by replaying the whole history.
    let b2 = Engine::builder().client_only().workflow::<Counter>();
    let reader = if let Some(url) = &b.args.postgres {
        Some(b2.postgres_with(url, pg::options(b.n)).build().await?)
    } else if b.args.memory {
        None
    } else {
        Some(b2.sqlite(&path).build().await?)
    };
    let Some(reader) = reader else {
        b.row(
            "(e) replay (needs the SQLite store)",
            "skipped with --memory".into(),
        );
        return Ok(());
    };
    let hr = reader.client().handle::<Counter>("e");
    let mut best = Duration::MAX;
    for _ in 0..3 {
        let t = Instant::now();
        let v = hr.value().await?;
        best = best.min(t.elapsed());
        assert_eq!(v, target as u64);
    }
    let rate = events as f64 / best.as_secs_f64();
    b.row(
        &format!("(e) replay a {events}-event history (read + decode + run)"),
        format!("{rate:>10.0} events/s"),
    );
    b.record("e_events_per_s", rate);
    Ok(())
}

/// (f) in a process of its own when other workloads ran here first: the peak RSS must be this
/// workload's, and memory the allocator kept from earlier ones (the 100,000-event replay of (e)
/// above all) would count in this process.
async fn bench_f_alone(b: &mut Bench) -> Result<(), WfError> {
    if b.n == 0 {
        return bench_f(b).await;
    }
    // The bench cannot go on without its child process: a failure to run it ends the bench.
    let failed = |e: String| -> ! { panic!("(f) in a child process: {e}") };
    let exe = std::env::current_exe().unwrap_or_else(|e| failed(e.to_string()));
    let mut cmd = tokio::process::Command::new(exe);
    cmd.args(["--only", "f"]);
    if b.args.quick {
        cmd.arg("--quick");
    }
    if b.args.memory {
        cmd.arg("--memory");
    }
    if let Some(url) = &b.args.postgres {
        cmd.args(["--store", "postgres", "--postgres-url", url]);
    }
    if let Some(n) = b.args.runs {
        cmd.args(["--runs", &n.to_string()]);
    }
    let out = cmd.output().await.unwrap_or_else(|e| failed(e.to_string()));
    b.child_rows(&out, "(f)", &["f_rss_mb", "f_start_per_s", "f_wf_per_s"])
        .unwrap_or_else(|e| failed(e));
    Ok(())
}

async fn bench_f(b: &mut Bench) -> Result<(), WfError> {
    let n = b
        .args
        .runs
        .unwrap_or(if b.args.quick { 10_000 } else { 100_000 });
    // Measure this workload's peak, not the earlier ones' (Linux: "5" resets VmHWM).
    let _ = std::fs::write("/proc/self/clear_refs", "5");
    let (engine, path) = b.engine("f", None).await?;
    let client = engine.client();
    let t = Instant::now();
    run_all(&client, n, "f", Phase::Start).await?;
    let started = t.elapsed();
    let (db_mb, wal_mb) = match &b.args.postgres {
        Some(url) => (pg::schema_mb(url, &pg::options(b.n).schema).await, 0.0),
        None => (file_mb(&path, ""), file_mb(&path, "-wal")),
    };
    let t = Instant::now();
    run_all(&client, n, "f", Phase::Signal).await?;
    run_all(&client, n, "f", Phase::Result).await?;
    let finished = t.elapsed();
    let rate = n as f64 / finished.as_secs_f64();
    let start_rate = n as f64 / started.as_secs_f64();
    let rss = peak_rss_mb();
    b.row(
        &format!("(f) {n} waiting workflows: peak RSS, store size"),
        format!("{rss:>7.1} MB  {db_mb:>7.1} MB + WAL {wal_mb:.1} MB"),
    );
    b.row(
        &format!("(f) {n} waiting workflows: start all"),
        format!(
            "{start_rate:>10.0} workflows/s  ({:.1} s)",
            started.as_secs_f64()
        ),
    );
    b.row(
        &format!("(f) {n} waiting workflows: signal all, await all"),
        format!(
            "{rate:>10.0} workflows/s  ({:.1} s)",
            finished.as_secs_f64()
        ),
    );
    b.record("f_rss_mb", rss);
    b.record("f_start_per_s", start_rate);
    b.record("f_wf_per_s", rate);
    engine.shutdown().await;
    Ok(())
}

/// Sends `total` signals to the 100 workflows `{prefix}-{0..100}` from `senders` concurrent
/// client tasks (signal `i` to workflow `i % 100`); signals/s.
async fn signal_burst(
    client: &Client,
    prefix: &str,
    total: usize,
    senders: usize,
) -> Result<f64, WfError> {
    for i in 0..100 {
        client.start::<Counter>(format!("{prefix}-{i}"), ()).await?;
    }
    let t = Instant::now();
    let mut joins = Vec::new();
    for k in 0..senders {
        let client = client.clone();
        let prefix = prefix.to_string();
        joins.push(tokio::spawn(async move {
            let mut i = k;
            while i < total {
                client
                    .handle::<Counter>(format!("{prefix}-{}", i % 100))
                    .bump()
                    .await?;
                i += senders;
            }
            Ok::<(), WfError>(())
        }));
    }
    for j in joins {
        j.await.expect("a bench task panicked")?;
    }
    let rate = total as f64 / t.elapsed().as_secs_f64();
    // Every signal was recorded once.
    let n = client
        .handle::<Counter>(format!("{prefix}-0"))
        .value()
        .await?;
    assert_eq!(n as usize, total / 100);
    Ok(rate)
}

/// Concurrent senders in (g): ingest means many producers; 1,000 is 10 in flight per workflow.
const G_SENDERS: usize = 1_000;

async fn bench_g(b: &mut Bench) -> Result<(), WfError> {
    let total = if b.args.quick { 20_000 } else { 100_000 };
    let (engine, _) = b.engine("g", None).await?;
    let client = engine.client();
    let rate = signal_burst(&client, "g", total, G_SENDERS).await?;
    b.row(
        &format!("(g) {total} signals to 100 workflows, {G_SENDERS} senders"),
        format!("{rate:>10.0} signals/s"),
    );
    b.record("g_signals_per_s", rate);
    // The same with 64 senders (under one signal in flight per workflow): each signal is then
    // its own workflow task and commit entry.
    let rate = signal_burst(&client, "g64", total, 64).await?;
    b.row(
        "(g) the same, 64 senders",
        format!("{rate:>10.0} signals/s"),
    );
    engine.shutdown().await;
    Ok(())
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args = match args::parse_args() {
        Ok(a) => a,
        Err(e) => {
            eprintln!("{e}");
            std::process::exit(2);
        }
    };
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()?;
    if let Some(path) = args.cross_process_child {
        return Ok(rt.block_on(cross::child(path))?);
    }
    if let (Some(schema), Some(url)) = (args.pg_worker_child.clone(), args.postgres.clone()) {
        return Ok(rt.block_on(pg::worker_child(url, schema))?);
    }
    if let Some((place, id, n)) = args.stream_reader_child.clone() {
        return Ok(rt.block_on(streams::reader_child(place, id, n, args.postgres))?);
    }
    if let Some(url) = args.http_client {
        return Ok(rt.block_on(http::client(url, args.http_ca, args.quick))?);
    }
    rt.block_on(async move {
        let dir = std::env::temp_dir().join(format!("wf-bench-{}", std::process::id()));
        std::fs::create_dir_all(&dir)?;
        let mut b = Bench {
            args,
            dir: dir.clone(),
            rows: Vec::new(),
            json: Vec::new(),
            n: 0,
        };
        println!(
            "wf bench — store: {}, sizes: {}",
            if b.args.postgres.is_some() {
                "PostgreSQL (synchronous_commit=on)"
            } else if b.args.memory {
                "in-memory"
            } else {
                "SQLite (WAL, synchronous=FULL)"
            },
            if b.args.quick { "quick" } else { "full" }
        );
        type Step = for<'a> fn(
            &'a mut Bench,
        ) -> std::pin::Pin<
            Box<dyn std::future::Future<Output = Result<(), WfError>> + 'a>,
        >;
        let steps: [(&str, Step); 11] = [
            ("a", |b| Box::pin(bench_a(b))),
            ("b", |b| Box::pin(bench_b(b))),
            ("c", |b| Box::pin(bench_c(b))),
            ("d", |b| Box::pin(bench_d(b))),
            ("e", |b| Box::pin(bench_e(b))),
            ("g", |b| Box::pin(bench_g(b))),
            ("q", |b| Box::pin(flow::bench_q(b))),
            ("s", |b| Box::pin(streams::bench_s(b))),
            ("f", |b| Box::pin(bench_f_alone(b))),
            ("x", |b| Box::pin(cross::bench_x(b))),
            ("http", |b| Box::pin(http::bench_http(b))),
        ];
        for (name, step) in steps {
            let run = match name {
                // Between processes means a file.
                "x" => b.on_file() && (b.wants("x") || b.args.cross_process),
                // Only when asked for: a server and a second process.
                "http" => b
                    .args
                    .only
                    .as_ref()
                    .is_some_and(|o| o.iter().any(|x| x == "http")),
                _ => b.wants(name),
            };
            if run {
                step(&mut b).await?;
            }
        }
        let _ = std::fs::remove_dir_all(&dir);
        if let Some(url) = &b.args.postgres {
            pg::drop_schemas(url).await;
        }
        println!("{}", json_line(&b.json));
        Ok::<(), Box<dyn std::error::Error>>(())
    })
}
