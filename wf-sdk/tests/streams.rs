//! Durable streams: a workflow writes ordered entries to a named stream of its run
//! (`ctx.stream(name).write(..)`, `.close()`), an activity too (`ctx.stream(name)` in its
//! context, once per entry id across retries), and readers (`handle.stream::<T>(name)`) get
//! every entry once, in order, whenever they start, with no worker serving the type, and end
//! at the close or the run's close. On the three stores.

mod common;
use common::*;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Arc;
use std::time::Duration;
use wf_sdk::prelude::*;

#[derive(Serialize, Deserialize, Debug, Clone, PartialEq)]
pub struct Token {
    pub index: u32,
    pub text: String,
}

fn token(i: u32) -> Token {
    Token {
        index: i,
        text: format!("t{i}"),
    }
}

/// Writes `n` tokens, the i-th once `allowed` passed i, then closes the stream.
#[derive(Default)]
pub struct Writer {
    allowed: u32,
}

#[workflow(name = "stream_writer")]
impl Writer {
    #[run]
    async fn run(ctx: &mut WorkflowContext<Self>, n: u32) -> Result<u32, WorkflowError> {
        for i in 0..n {
            ctx.wait_condition(move |s| s.allowed > i).await;
            ctx.stream("tokens").write(&token(i))?;
        }
        ctx.stream("tokens").close()?;
        Ok(n)
    }

    #[signal]
    fn allow(&mut self, up_to: u32) {
        self.allowed = up_to;
    }
}

/// Streams what it and its activity say: one entry, the activity's, one more, the close.
#[derive(Default)]
pub struct Narrated;

#[workflow(name = "stream_narrated")]
impl Narrated {
    #[run]
    async fn run(ctx: &mut WorkflowContext<Self>) -> Result<(), WorkflowError> {
        ctx.stream("log").write("workflow: begin")?;
        ctx.activity(Speaker::speak, 3)
            .retry(RetryPolicy {
                initial_interval: Duration::from_millis(10),
                ..RetryPolicy::default()
            })
            .await?;
        ctx.stream("log").write("workflow: end")?;
        ctx.stream("log").close()?;
        Ok(())
    }
}

/// Breaks the limits: each refused write is reported, then a write after the close fails
/// the run.
#[derive(Default)]
pub struct Misuse;

#[workflow(name = "stream_misuse")]
impl Misuse {
    #[run]
    async fn run(ctx: &mut WorkflowContext<Self>) -> Result<(), WorkflowError> {
        let big = "x".repeat(wf_sdk::limits::MAX_STREAM_ENTRY_BYTES + 1);
        let refused = ctx.stream("out").write(&big).unwrap_err();
        ctx.stream("out").write(&refused.to_string())?;
        let bad = ctx.stream("").write(&1).unwrap_err();
        ctx.stream("out").write(&bad.to_string())?;
        ctx.stream("out").close()?;
        ctx.stream("out").write("after the close")?;
        Ok(())
    }
}

/// Writes `n` entries to the stream `said`, failing its first attempt after them.
#[derive(Default)]
pub struct Speaker {
    attempts: AtomicU32,
}

#[activities]
impl Speaker {
    #[activity]
    pub async fn speak(&self, ctx: ActivityContext, n: u32) -> Result<u32, ActivityError> {
        self.attempts.fetch_add(1, Ordering::SeqCst);
        for i in 0..n {
            ctx.stream("log")
                .write(&format!("activity: line {i}"))
                .await?;
        }
        if ctx.attempt() == 1 {
            return Err(ActivityError::retryable("lost the connection"));
        }
        ctx.stream("log")
            .write_with_id("summary", "activity: done")
            .await?;
        // A second write of one id adds nothing and answers the first one's offset.
        let again = ctx
            .stream("log")
            .write_with_id("summary", "activity: done again")
            .await?;
        Ok(u32::try_from(again).unwrap_or(u32::MAX))
    }
}

async fn engine(builder: wf_sdk::engine::EngineBuilder) -> Engine {
    builder
        .workflow::<Writer>()
        .workflow::<Narrated>()
        .workflow::<Misuse>()
        .workflow::<Publisher>()
        .activities(Speaker::default())
        .build()
        .await
        .expect("the engine starts")
}

/// A reader that collects the whole stream in a task of its own.
fn collect_in_background(
    h: &WorkflowHandle<Writer>,
    from: u64,
) -> tokio::task::JoinHandle<Vec<(u64, Token)>> {
    let reader = h.stream::<Token>("tokens").from(from);
    tokio::spawn(async move { reader.collect().await.expect("the stream reads") })
}

fn expected(range: std::ops::Range<u32>) -> Vec<(u64, Token)> {
    range.map(|i| (u64::from(i), token(i))).collect()
}

async fn readers_before_during_and_after_the_writes_see_every_entry_once(backend: Backend) {
    let engine = engine(builder(backend, "stream-readers")).await;
    let client = engine.client();
    let h = client.start::<Writer>("w", 6).await.unwrap();
    let before = collect_in_background(&h, 0);
    let skipping = collect_in_background(&h, 4);
    h.allow(3).await.unwrap();
    // Three entries are there once a reader got them; then one more reader starts.
    let mut first = h.stream::<Token>("tokens");
    for i in 0..3 {
        assert_eq!(
            first.next().await.unwrap().unwrap(),
            (u64::from(i), token(i))
        );
    }
    let during = collect_in_background(&h, 0);
    h.allow(6).await.unwrap();
    assert_eq!(h.result().await.unwrap(), 6);
    let after = h.stream::<Token>("tokens").collect().await.unwrap();
    assert_eq!(after, expected(0..6));
    assert_eq!(before.await.unwrap(), expected(0..6));
    assert_eq!(during.await.unwrap(), expected(0..6));
    assert_eq!(skipping.await.unwrap(), expected(4..6));
    // The first reader goes on from where it was, and ends at the close.
    let mut rest = Vec::new();
    while let Some(entry) = first.next().await {
        rest.push(entry.unwrap());
    }
    assert_eq!(rest, expected(3..6));
    // Each write is a `StreamWritten` event of the history, the close a `StreamClosed`.
    let history = h.history().await.unwrap();
    assert_eq!(
        count(&history, |k| matches!(k, EventKind::StreamWritten { .. })),
        6
    );
    assert_eq!(
        count(&history, |k| matches!(k, EventKind::StreamClosed { .. })),
        1
    );
    engine.shutdown().await;
}

async fn a_stream_is_read_with_no_worker_and_survives_a_restart(backend: Backend) {
    let shared = shared_store(backend, "stream-no-worker");
    let first = engine(shared()).await;
    let h = first.client().start::<Writer>("w", 4).await.unwrap();
    h.allow(2).await.unwrap();
    let mut reader = h.stream::<Token>("tokens");
    for i in 0..2 {
        assert_eq!(
            reader.next().await.unwrap().unwrap(),
            (u64::from(i), token(i))
        );
    }
    // The worker goes; a client-only engine (no worker for the type) reads what is stored.
    first.shutdown().await;
    let client_only = shared().client_only().build().await.unwrap();
    let h = client_only.client().handle::<Writer>("w");
    let mut reader = h.stream::<Token>("tokens");
    for i in 0..2 {
        assert_eq!(
            reader.next().await.unwrap().unwrap(),
            (u64::from(i), token(i))
        );
    }
    // It waits for more; a new worker rebuilds the run by replay (which writes nothing
    // again) and goes on writing, and the reader follows.
    let next = tokio::spawn(async move {
        let mut got = Vec::new();
        while let Some(entry) = reader.next().await {
            got.push(entry.unwrap());
        }
        got
    });
    let second = engine(shared()).await;
    second
        .client()
        .handle::<Writer>("w")
        .allow(4)
        .await
        .unwrap();
    assert_eq!(next.await.unwrap(), expected(2..4));
    assert_eq!(
        h.stream::<Token>("tokens").collect().await.unwrap(),
        expected(0..4)
    );
    second.shutdown().await;
    client_only.shutdown().await;
}

async fn an_activity_writes_to_the_stream_once_across_retries(backend: Backend) {
    let engine = engine(builder(backend, "stream-activity")).await;
    let h = engine.client().start::<Narrated>("n", ()).await.unwrap();
    h.result().await.unwrap();
    let log = h.stream::<String>("log").collect().await.unwrap();
    let lines: Vec<(u64, &str)> = log.iter().map(|(o, s)| (*o, s.as_str())).collect();
    assert_eq!(
        lines,
        vec![
            (0, "workflow: begin"),
            (1, "activity: line 0"),
            (2, "activity: line 1"),
            (3, "activity: line 2"),
            (4, "activity: done"),
            (5, "workflow: end"),
        ],
        "the retried attempt's writes landed once"
    );
    engine.shutdown().await;
}

async fn refused_writes_record_nothing_and_say_why(backend: Backend) {
    let engine = engine(builder(backend, "stream-misuse")).await;
    let h = engine.client().start::<Misuse>("m", ()).await.unwrap();
    let failure = h.result().await.unwrap_err().to_string();
    assert!(
        failure.contains("stream \"out\" was closed: it takes no more entries"),
        "{failure}"
    );
    let out = h.stream::<String>("out").collect().await.unwrap();
    assert_eq!(out.len(), 2, "{out:?}");
    assert!(
        out[0]
            .1
            .contains("an entry of 262150 bytes is over the limit of 262144 bytes"),
        "{}",
        out[0].1
    );
    assert!(out[1].1.contains("bad stream name"), "{}", out[1].1);
    engine.shutdown().await;
}

async fn reading_an_unknown_workflow_or_a_bad_name_is_an_error(backend: Backend) {
    let engine = engine(builder(backend, "stream-unknown")).await;
    let client = engine.client();
    let mut reader = client.handle::<Writer>("nobody").stream::<Token>("tokens");
    assert!(matches!(
        reader.next().await,
        Some(Err(WfError::NotFound { .. }))
    ));
    assert!(reader.next().await.is_none(), "an error ends the stream");
    let h = client.start::<Writer>("w", 0).await.unwrap();
    h.result().await.unwrap();
    let mut bad = h.stream::<Token>("bad\nname");
    assert!(matches!(bad.next().await, Some(Err(_))));
    // A finished run's stream that was never written ends at once.
    assert!(h
        .stream::<Token>("other")
        .collect()
        .await
        .unwrap()
        .is_empty());
    // A value of another type is an error.
    let h = client.start::<Writer>("w2", 1).await.unwrap();
    h.allow(1).await.unwrap();
    h.result().await.unwrap();
    let mut wrong = h.stream::<u64>("tokens");
    assert!(matches!(
        wrong.next().await,
        Some(Err(WfError::PayloadError(_)))
    ));
    engine.shutdown().await;
}

async fn a_runs_streams_are_listed_with_their_entries_and_close(backend: Backend) {
    use wf_sdk::client::StreamInfo;
    let engine = engine(builder(backend, "stream-list")).await;
    let client = engine.client();
    let info = |name: &str, entries: u64, closed: bool| StreamInfo {
        name: name.to_string(),
        entries,
        closed,
    };
    assert!(matches!(
        client.handle::<Writer>("nobody").streams().await,
        Err(WfError::NotFound { .. })
    ));
    let empty = client.start::<Writer>("w0", 0).await.unwrap();
    empty.result().await.unwrap();
    // Closed at once: the close alone is listed, with no entry.
    assert_eq!(
        empty.streams().await.unwrap().streams,
        vec![info("tokens", 0, true)]
    );

    let h = client.start::<Writer>("w", 3).await.unwrap();
    assert!(
        h.streams().await.unwrap().streams.is_empty(),
        "nothing written yet"
    );
    h.allow(1).await.unwrap();
    let mut reader = h.stream::<Token>("tokens");
    assert_eq!(reader.next().await.unwrap().unwrap(), (0, token(0)));
    let open = h.streams().await.unwrap();
    assert_eq!(open.run_id, h.describe().await.unwrap().run_id);
    assert_eq!(open.streams, vec![info("tokens", 1, false)]);
    h.allow(3).await.unwrap();
    h.result().await.unwrap();
    assert_eq!(
        h.streams().await.unwrap().streams,
        vec![info("tokens", 3, true)]
    );

    // The activity's entries count as the workflow's do.
    let n = client.start::<Narrated>("n", ()).await.unwrap();
    n.result().await.unwrap();
    assert_eq!(
        n.streams().await.unwrap().streams,
        vec![info("log", 6, true)]
    );
    engine.shutdown().await;
}

both!(
    a_runs_streams_are_listed_with_their_entries_and_close,
    readers_before_during_and_after_the_writes_see_every_entry_once,
    a_stream_is_read_with_no_worker_and_survives_a_restart,
    an_activity_writes_to_the_stream_once_across_retries,
    refused_writes_record_nothing_and_say_why,
    reading_an_unknown_workflow_or_a_bad_name_is_an_error,
);

/// Far longer than the test's limit: what arrives in time was woken, not polled.
#[cfg(unix)]
const NO_POLL: Duration = Duration::from_secs(60);

/// A reader in another engine (another "process" on the store: the file, the schema, or the
/// shared in-memory store) polling once a minute gets each entry, and a published event, when
/// it commits: the worker's
/// pokes (SQLite, memory) or `NOTIFY` (PostgreSQL) wake it. The 10 s limit is a failure
/// detector, not a timing assertion.
#[cfg(unix)]
async fn a_reader_in_another_process_is_woken_by_each_entry(backend: Backend) {
    let place = Arc::new(shared_store(backend, "stream-woken"));
    let on_store =
        |b: wf_sdk::engine::EngineBuilder| b.poll_interval(NO_POLL).liveness_lease(NO_POLL);
    let worker = engine(on_store(place())).await;
    let reader_engine = on_store(place()).client_only().build().await.unwrap();
    let h = worker.client().start::<Writer>("w", 3).await.unwrap();
    let mut reader = reader_engine
        .client()
        .handle::<Writer>("w")
        .stream::<Token>("tokens");
    for i in 0..3 {
        h.allow(i + 1).await.unwrap();
        let entry = tokio::time::timeout(Duration::from_secs(10), reader.next())
            .await
            .unwrap_or_else(|_| panic!("entry {i}: not within 10 s though the poll is 60 s"));
        assert_eq!(entry.unwrap().unwrap(), (u64::from(i), token(i)));
    }
    let end = tokio::time::timeout(Duration::from_secs(10), reader.next()).await;
    assert!(matches!(end, Ok(None)), "the close ends the reader");
    // A published event reaches a `get_event` waiting in the other engine the same way.
    let p = worker.client().start::<Publisher>("p", ()).await.unwrap();
    let reader_client = reader_engine.client();
    let stage: Option<String> = reader_client
        .get_event("p", "stage", Duration::from_secs(10))
        .await
        .unwrap();
    assert_eq!(stage.as_deref(), Some("planned"));
    let waiting =
        tokio::spawn(async move { reader_client.get_event::<u32>("p", "answer", NO_POLL).await });
    p.go().await.unwrap();
    let answer = tokio::time::timeout(Duration::from_secs(10), waiting)
        .await
        .unwrap_or_else(|_| panic!("the event: not within 10 s though the poll is 60 s"));
    assert_eq!(answer.unwrap().unwrap(), Some(42));
    worker.shutdown().await;
    reader_engine.shutdown().await;
}

#[cfg(unix)]
both!(a_reader_in_another_process_is_woken_by_each_entry);

// ---------------------------------------------------------------------------------------------
// Published events: `ctx.set_event`, `client.get_event`

/// Publishes `stage` = "planned", waits for `go`, then publishes `stage` = "done" and
/// `answer` = 42.
#[derive(Default)]
pub struct Publisher {
    go: bool,
}

#[workflow(name = "event_publisher")]
impl Publisher {
    #[run]
    async fn run(ctx: &mut WorkflowContext<Self>) -> Result<(), WorkflowError> {
        ctx.set_event("stage", "planned")?;
        ctx.wait_condition(|s| s.go).await;
        ctx.set_event("stage", "done")?;
        ctx.set_event("answer", &42u32)?;
        Ok(())
    }

    #[signal]
    fn go(&mut self) {
        self.go = true;
    }
}

/// `get_event` waits for a value that is not set yet, gets the latest, and answers `None`
/// once its time runs out; a reader with no worker (a client-only engine) gets them too.
async fn get_event_waits_for_the_value_without_a_worker(backend: Backend) {
    let shared = shared_store(backend, "events");
    let worker = engine(shared()).await;
    let reader = shared().client_only().build().await.unwrap();
    let client = reader.client();
    let h = worker.client().start::<Publisher>("p", ()).await.unwrap();
    let waiting = tokio::spawn({
        let client = client.clone();
        async move {
            client
                .get_event::<u32>("p", "answer", Duration::from_secs(30))
                .await
        }
    });
    let stage: Option<String> = client
        .get_event("p", "stage", Duration::from_secs(30))
        .await
        .unwrap();
    assert_eq!(stage.as_deref(), Some("planned"));
    h.go().await.unwrap();
    assert_eq!(waiting.await.unwrap().unwrap(), Some(42));
    h.result().await.unwrap();
    let stage: Option<String> = client
        .get_event("p", "stage", Duration::from_secs(30))
        .await
        .unwrap();
    assert_eq!(stage.as_deref(), Some("done"), "the latest value wins");
    // A key never set: `None` once the (short) wait is over.
    let never: Option<String> = client
        .get_event("p", "never", Duration::from_millis(50))
        .await
        .unwrap();
    assert_eq!(never, None);
    // The history records each publication.
    let history = h.history().await.unwrap();
    assert_eq!(
        count(&history, |k| matches!(k, EventKind::EventSet { .. })),
        3
    );
    worker.shutdown().await;
    reader.shutdown().await;
}

both!(get_event_waits_for_the_value_without_a_worker);
