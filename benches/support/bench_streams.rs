//! The bench's workload (s): durable streams — how fast entries are written, and how long one
//! takes from its writer to a reader.
//!
//! Written per second:
//! - one activity writing N entries one after another (`ctx.stream(..).write(..).await`: each
//!   write is a commit of its own, awaited before the next), timed inside the activity;
//! - eight activities of eight runs doing so at once (from the first write's start to the
//!   last one's end);
//! - one workflow task writing N entries (`ctx.stream(..).write(..)`: they commit together
//!   with the task), from the start of the run to its result.
//!
//! Write to reader: a [`Probe`] run writes entries that each carry the wall-clock time read
//! just before the write is issued — first in the workflow, one entry per workflow task (each
//! task started by a signal, the signals 3 ms apart), then in an activity, one write every
//! 3 ms. A reader following the stream subtracts that time from the wall clock when the entry
//! reaches it. The delay measured is therefore: the rest of the workflow task or of the write
//! call, the commit (an fsync on SQLite; a `COMMIT` with `synchronous_commit=on` on
//! PostgreSQL), the reader's wake-up (in process; from another engine: the writer's poke, or
//! PostgreSQL's `NOTIFY`), its read of the store, and the decoding — over HTTP also the
//! server's read, the server-sent event over loopback and the remote client's parsing. The
//! signal that starts a workflow task is not in it. Both processes read one clock.
//!
//! The reader is, in turn: in this process (`handle.stream` on the engine's client); in another
//! process (this binary again with `--stream-reader-child`: a client-only engine on the same
//! SQLite file or PostgreSQL schema; skipped on the in-memory store); and over HTTP (the child
//! through `Client::connect` to `wf_http::serve` on 127.0.0.1:0, which reads the stream as
//! server-sent events). The child prints its rows and a JSON line, as (http)'s does.

use super::cross::{p50_p99, wall_us};
use std::time::{Duration, Instant};
use wf_sdk::http::ServeOptions;
use wf_sdk::postgres::PostgresOptions;
use wf_sdk::prelude::*;

/// The stream every run of the workload writes.
const STREAM: &str = "out";

/// The pause between two writes of the latency runs.
const PAUSE: Duration = Duration::from_millis(3);

/// Who wrote an entry.
#[derive(Serialize, Deserialize, Clone, Copy, PartialEq, Eq, Debug)]
pub enum Source {
    /// The probe's first entry, which tells that the reader is following.
    Warm,
    /// The workflow, in a workflow task.
    Workflow,
    /// An activity.
    Activity,
}

/// One entry: who wrote it, and the wall-clock time just before the write was issued.
#[derive(Serialize, Deserialize, Clone, Copy, Debug)]
pub struct Stamp {
    source: Source,
    sent_us: i64,
}

/// Reads the wall clock: fine for a measurement, never in a real workflow (a replay would
/// write other values; the bench reads what the live run wrote).
fn stamp(source: Source) -> Stamp {
    Stamp {
        source,
        sent_us: wall_us(),
    }
}

/// The writes of the latency runs, and the throughput runs' activities.
pub struct Emit;

#[activities]
impl Emit {
    /// Writes `n` entries, `pause_ms` apart.
    #[activity]
    pub async fn paced(
        &self,
        ctx: ActivityContext,
        n: u32,
        pause_ms: u64,
    ) -> Result<(), ActivityError> {
        for _ in 0..n {
            ctx.stream(STREAM).write(&stamp(Source::Activity)).await?;
            tokio::time::sleep(Duration::from_millis(pause_ms)).await;
        }
        Ok(())
    }

    /// Writes `n` entries one after another: the wall-clock µs before the first and after the
    /// last.
    #[activity]
    pub async fn flood(&self, ctx: ActivityContext, n: u32) -> Result<(i64, i64), ActivityError> {
        let start = wall_us();
        for _ in 0..n {
            ctx.stream(STREAM).write(&stamp(Source::Activity)).await?;
        }
        Ok((start, wall_us()))
    }
}

/// The latency runs: the warm entry, then an entry per `tick` signal until `n`, then `n`
/// entries from an activity, then the close.
#[derive(Default)]
pub struct Probe {
    ticks: u32,
}

#[workflow(name = "stream_probe")]
impl Probe {
    #[run]
    async fn run(ctx: &mut WorkflowContext<Self>, n: u32) -> Result<(), WorkflowError> {
        ctx.stream(STREAM).write(&stamp(Source::Warm))?;
        for i in 0..n {
            ctx.wait_condition(move |s| s.ticks > i).await;
            ctx.stream(STREAM).write(&stamp(Source::Workflow))?;
        }
        let pause_ms = PAUSE.as_millis() as u64;
        ctx.activity(Emit::paced, (n, pause_ms))
            .start_to_close(Duration::from_secs(600))
            .await?;
        ctx.stream(STREAM).close()?;
        Ok(())
    }

    #[signal]
    fn tick(&mut self) {
        self.ticks += 1;
    }
}

/// A throughput run: an activity writing `n` entries one after another; its span.
#[derive(Default)]
pub struct Flood;

#[workflow(name = "stream_flood")]
impl Flood {
    #[run]
    async fn run(ctx: &mut WorkflowContext<Self>, n: u32) -> Result<(i64, i64), WorkflowError> {
        let span = ctx
            .activity(Emit::flood, n)
            .start_to_close(Duration::from_secs(600))
            .await?;
        Ok(span)
    }
}

/// A throughput run: `n` entries written in the first workflow task.
#[derive(Default)]
pub struct Burst;

#[workflow(name = "stream_burst")]
impl Burst {
    #[run]
    async fn run(ctx: &mut WorkflowContext<Self>, n: u32) -> Result<(), WorkflowError> {
        for _ in 0..n {
            ctx.stream(STREAM).write(&stamp(Source::Workflow))?;
        }
        ctx.stream(STREAM).close()?;
        Ok(())
    }
}

/// The delays of one probe run as a reader saw them, sorted: the workflow's entries, the
/// activity's.
struct Delays {
    workflow: Vec<Duration>,
    activity: Vec<Duration>,
}

/// Follows the probe run `id` through `client`: the warm entry (then `ready` is called), then
/// every entry until the close, each one's delay.
async fn read_delays(
    client: &Client,
    id: &str,
    n: usize,
    ready: impl FnOnce(),
) -> Result<Delays, WfError> {
    let mut reader = client.handle::<Probe>(id).stream::<Stamp>(STREAM);
    match reader.next().await {
        Some(Ok((_, s))) if s.source == Source::Warm => ready(),
        other => panic!("(s) the probe's first entry: {other:?}"),
    }
    let mut delays = Delays {
        workflow: Vec::with_capacity(n),
        activity: Vec::with_capacity(n),
    };
    while let Some(entry) = reader.next().await {
        let (_, s) = entry?;
        let delay = Duration::from_micros((wall_us() - s.sent_us).max(0) as u64);
        match s.source {
            Source::Workflow => delays.workflow.push(delay),
            Source::Activity => delays.activity.push(delay),
            Source::Warm => {}
        }
    }
    assert_eq!(delays.workflow.len(), n, "(s) the workflow's entries");
    assert_eq!(delays.activity.len(), n, "(s) the activity's entries");
    delays.workflow.sort();
    delays.activity.sort();
    Ok(delays)
}

/// Sends the probe run its `n` ticks, `PAUSE` apart, and waits for its end.
async fn drive(h: &WorkflowHandle<Probe>, n: usize) -> Result<(), WfError> {
    for _ in 0..n {
        h.tick().await?;
        tokio::time::sleep(PAUSE).await;
    }
    h.result().await
}

/// The JSON keys of the readers: p50 and p99 of the workflow's entries, then the activity's.
const LOCAL_KEYS: [&str; 4] = [
    "s_local_wf_p50_ms",
    "s_local_wf_p99_ms",
    "s_local_act_p50_ms",
    "s_local_act_p99_ms",
];
const CROSS_KEYS: [&str; 4] = [
    "s_cross_wf_p50_ms",
    "s_cross_wf_p99_ms",
    "s_cross_act_p50_ms",
    "s_cross_act_p99_ms",
];
const HTTP_KEYS: [&str; 4] = [
    "s_http_wf_p50_ms",
    "s_http_wf_p99_ms",
    "s_http_act_p50_ms",
    "s_http_act_p99_ms",
];

/// A reader's two rows, and their figures under `keys`.
type Report = (Vec<(String, String)>, Vec<(&'static str, f64)>);

fn report(delays: &Delays, reader: &str, keys: [&'static str; 4]) -> Report {
    let (mut rows, mut figures) = (Vec::new(), Vec::new());
    for (what, sorted, k) in [
        ("workflow", &delays.workflow, 0),
        ("activity", &delays.activity, 2),
    ] {
        rows.push((
            format!("(s) {what} write to reader, {reader}"),
            p50_p99(sorted),
        ));
        figures.push((keys[k], super::ms(super::percentile(sorted, 0.5))));
        figures.push((keys[k + 1], super::ms(super::percentile(sorted, 0.99))));
    }
    (rows, figures)
}

pub async fn bench_s(b: &mut super::Bench) -> Result<(), WfError> {
    let n = if b.args.quick { 100 } else { 400 };
    let flood = if b.args.quick { 500 } else { 2_000 };
    let (engine, path) = b
        .engine_with("s", None, |e| {
            e.workflow::<Probe>()
                .workflow::<Flood>()
                .workflow::<Burst>()
                .activities(Emit)
        })
        .await?;
    let client = engine.client();
    super::warm_wal(&client, &path, !b.on_file()).await?;

    // Written per second.
    let (start, end) = client
        .start::<Flood>("s-flood", flood)
        .await?
        .result()
        .await?;
    let rate = f64::from(flood) / ((end - start).max(1) as f64 / 1e6);
    b.row(
        &format!("(s) {flood} writes, one activity, one after another"),
        format!("{rate:>10.0} entries/s"),
    );
    b.record("s_activity_entries_per_s", rate);
    let mut runs = Vec::new();
    for i in 0..8 {
        runs.push(
            client
                .start::<Flood>(format!("s-flood8-{i}"), flood / 8)
                .await?,
        );
    }
    let (mut first, mut last) = (i64::MAX, i64::MIN);
    for h in runs {
        let (start, end) = h.result().await?;
        (first, last) = (first.min(start), last.max(end));
    }
    let rate = f64::from(flood) / ((last - first).max(1) as f64 / 1e6);
    b.row(
        &format!("(s) {flood} writes, 8 activities at once"),
        format!("{rate:>10.0} entries/s"),
    );
    b.record("s_activities8_entries_per_s", rate);
    let t = Instant::now();
    client
        .start::<Burst>("s-burst", flood)
        .await?
        .result()
        .await?;
    let rate = f64::from(flood) / t.elapsed().as_secs_f64();
    b.row(
        &format!("(s) {flood} writes in one workflow task, start to result"),
        format!("{rate:>10.0} entries/s"),
    );
    b.record("s_workflow_task_entries_per_s", rate);

    // Write to reader, in this process.
    let h = client.start::<Probe>("s-local", n as u32).await?;
    let (ready, readied) = tokio::sync::oneshot::channel();
    let reading = tokio::spawn({
        let client = client.clone();
        async move {
            read_delays(&client, "s-local", n, move || {
                let _ = ready.send(());
            })
            .await
        }
    });
    let _ = readied.await;
    drive(&h, n).await?;
    let delays = reading.await.expect("the reader task panicked")?;
    let (rows, figures) = report(&delays, "in this process", LOCAL_KEYS);
    for (name, value) in rows {
        b.row(&name, value);
    }
    for (key, value) in figures {
        b.record(key, value);
    }

    // In another process on the same store.
    let place = match &b.args.postgres {
        Some(_) => Some(format!("postgres:{}", super::pg::options(b.n).schema)),
        None if b.on_file() => Some(path.display().to_string()),
        None => None,
    };
    match place {
        Some(place) => child_reader(b, &client, &place, "s-cross", n, &CROSS_KEYS).await?,
        None => b.row(
            "(s) write to reader, another process",
            "skipped with --memory".into(),
        ),
    }

    // Over HTTP.
    let server = wf_sdk::http::serve(
        &engine,
        "127.0.0.1:0",
        ServeOptions::default().token(super::http::TOKEN),
    )
    .await?;
    let url = format!("http://{}", server.local_addr());
    child_reader(b, &client, &url, "s-http", n, &HTTP_KEYS).await?;
    server.shutdown().await?;
    engine.shutdown().await;
    Ok(())
}

/// Starts probe run `id`, a reader process on `place` for it, drives the run once the reader
/// follows, and prints the reader's rows.
async fn child_reader(
    b: &mut super::Bench,
    client: &Client,
    place: &str,
    id: &str,
    n: usize,
    keys: &[&'static str; 4],
) -> Result<(), WfError> {
    // The bench cannot go on without its child process: a failure to run it ends the bench.
    let failed = |e: String| -> ! { panic!("(s) the reader process: {e}") };
    let h = client.start::<Probe>(id, n as u32).await?;
    let exe = std::env::current_exe().unwrap_or_else(|e| failed(e.to_string()));
    let mut cmd = tokio::process::Command::new(exe);
    cmd.arg("--stream-reader-child")
        .args([place, id, &n.to_string()])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::inherit())
        .kill_on_drop(true);
    if let Some(url) = &b.args.postgres {
        cmd.args(["--store", "postgres", "--postgres-url", url]);
    }
    let mut child = cmd.spawn().unwrap_or_else(|e| failed(e.to_string()));
    let stdout = child.stdout.take().expect("piped");
    let mut lines = tokio::io::AsyncBufReadExt::lines(tokio::io::BufReader::new(stdout));
    match lines.next_line().await {
        Ok(Some(line)) if line == "ready" => {}
        other => failed(format!("no ready line: {other:?}")),
    }
    drive(&h, n).await?;
    let mut rest = Vec::new();
    while let Ok(Some(line)) = lines.next_line().await {
        rest.extend_from_slice(line.as_bytes());
        rest.push(b'\n');
    }
    let mut out = child
        .wait_with_output()
        .await
        .unwrap_or_else(|e| failed(e.to_string()));
    out.stdout = rest;
    b.child_rows(&out, "(s)", keys)
        .unwrap_or_else(|e| failed(e));
    Ok(())
}

/// The reader process: follows probe run `id` from `place` (a SQLite file, `postgres:SCHEMA`
/// on `postgres`, or the server's URL), says `ready` once it has the warm entry, and prints
/// its rows and a JSON line once the stream is closed.
pub async fn reader_child(
    place: String,
    id: String,
    n: usize,
    postgres: Option<String>,
) -> Result<(), WfError> {
    let (client, engine, reader, keys) = if place.starts_with("http") {
        let client = Client::connect(place).token(super::http::TOKEN).await?;
        (client, None, "over HTTP (SSE)", HTTP_KEYS)
    } else {
        let b = Engine::builder().client_only().workflow::<Probe>();
        let b = match (place.strip_prefix("postgres:"), &postgres) {
            (Some(schema), Some(url)) => {
                let options = PostgresOptions {
                    schema: schema.to_string(),
                    ..Default::default()
                };
                b.postgres_with(url, options)
            }
            _ => b.sqlite(&place),
        };
        let engine = b.build().await?;
        let reader = "another process";
        (engine.client(), Some(engine), reader, CROSS_KEYS)
    };
    let delays = read_delays(&client, &id, n, || println!("ready")).await?;
    let (rows, figures) = report(&delays, reader, keys);
    for (name, value) in rows {
        println!("{name:<58} {value}");
    }
    println!("{}", super::json_line(&figures));
    if let Some(engine) = engine {
        engine.shutdown().await;
    }
    Ok(())
}
