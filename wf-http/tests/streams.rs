//! A run's streams over HTTP: `GET /{type}/runs/{id}/streams/{name}` as server-sent events
//! read with a raw HTTP client (ids, JSON data, the end event, `?from=` and `Last-Event-ID`,
//! a reader that starts before the writes, 404 / 400 / roles), the remote client's
//! `handle.stream::<T>(..)` over it, the list of a run's streams (`GET .../streams`, the
//! remote `handle.streams()`), and published events (`GET .../published/{key}` and the
//! remote `client.get_event`).

#[macro_use]
mod common;

use common::sse::{Sse, SseReader};
use common::{Http, Net, TOKEN};
use serde_json::json;
use std::time::Duration;
use tokio::net::TcpStream;
use wf_http::{ConnectExt, Role, ServeOptions, Server, Tokens};
use wf_sdk::prelude::*;

const READ: &str = "read-token";

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

/// Writes `n` tokens to stream `tokens`, the i-th once `allowed` passed i, publishes event
/// `stage`, then closes the stream and waits for `finish` (so the run outlives the close).
#[derive(Default)]
pub struct Writer {
    allowed: u32,
    finish: bool,
}

#[workflow(name = "http_stream_writer")]
impl Writer {
    #[run]
    async fn run(ctx: &mut WorkflowContext<Self>, n: u32) -> Result<u32, WorkflowError> {
        for i in 0..n {
            ctx.wait_condition(move |s| s.allowed > i).await;
            ctx.stream("tokens").write(&token(i))?;
        }
        ctx.set_event("stage", "written")?;
        ctx.stream("tokens").close()?;
        ctx.wait_condition(|s| s.finish).await;
        Ok(n)
    }

    #[signal]
    fn allow(&mut self, up_to: u32) {
        self.allowed = up_to;
    }

    #[signal]
    fn finish(&mut self) {
        self.finish = true;
    }
}

/// Writes `n` entries to stream `open` and completes without closing it.
#[derive(Default)]
pub struct Unclosed;

#[workflow(name = "http_stream_unclosed")]
impl Unclosed {
    #[run]
    async fn run(ctx: &mut WorkflowContext<Self>, n: u32) -> Result<(), WorkflowError> {
        for i in 0..n {
            ctx.stream("open").write(&i)?;
        }
        Ok(())
    }
}

async fn served(net: Net) -> (Engine, Server) {
    let engine = Engine::builder()
        .memory()
        .poll_interval(Duration::from_millis(20))
        .workflow::<Writer>()
        .workflow::<Unclosed>()
        .build()
        .await
        .expect("engine");
    let tokens = Tokens::new()
        .with(Role::Admin, TOKEN)
        .with(Role::Read, READ);
    let server = net
        .serve(&engine, ServeOptions::default().tokens(tokens))
        .await;
    (engine, server)
}

fn entry(offset: u64, i: u32) -> Sse {
    Sse {
        id: Some(offset.to_string()),
        event: None,
        data: json!({ "index": i, "text": format!("t{i}") }).to_string(),
    }
}

fn end(closed: Option<u64>) -> Sse {
    let data = match closed {
        Some(offset) => json!({ "closed": true, "offset": offset }),
        None => json!({ "closed": false }),
    };
    Sse {
        id: None,
        event: Some("end".into()),
        data: data.to_string(),
    }
}

const PATH: &str = "/http_stream_writer/runs/w-1/streams/tokens";

#[tokio::test]
async fn entries_come_as_events_with_offsets_and_json_then_the_end() {
    let (engine, server) = served(Net::Http).await;
    let h = engine
        .client()
        .start::<Writer>("w-1", 3)
        .await
        .expect("start");
    // The reader starts before any write.
    let mut reader = SseReader::open(&server, PATH, TOKEN, None).await;
    assert_eq!(reader.status, 200);
    assert_eq!(
        reader.headers["content-type"].to_str().unwrap(),
        "text/event-stream"
    );
    let run_id = h.describe().await.expect("describe").run_id;
    assert_eq!(reader.headers["wf-run-id"].to_str().unwrap(), run_id);
    h.allow(1).await.expect("signal");
    assert_eq!(reader.next().await, Some(entry(0, 0)));
    h.allow(3).await.expect("signal");
    assert_eq!(
        reader.rest().await,
        vec![entry(1, 1), entry(2, 2), end(Some(3))]
    );

    // Read again after the writes: from 0, from 2, and resumed after id 0 (Last-Event-ID
    // wins over `from`).
    let all = SseReader::open(&server, PATH, TOKEN, None)
        .await
        .rest()
        .await;
    assert_eq!(
        all,
        vec![entry(0, 0), entry(1, 1), entry(2, 2), end(Some(3))]
    );
    let tail = SseReader::open(&server, &format!("{PATH}?from=2"), TOKEN, None)
        .await
        .rest()
        .await;
    assert_eq!(tail, vec![entry(2, 2), end(Some(3))]);
    let resumed = SseReader::open(&server, &format!("{PATH}?from=0"), TOKEN, Some("0"))
        .await
        .rest()
        .await;
    assert_eq!(resumed, vec![entry(1, 1), entry(2, 2), end(Some(3))]);
    h.finish().await.expect("signal");
    engine.shutdown().await;
}

#[tokio::test]
async fn a_reader_resumed_mid_stream_sees_each_entry_once() {
    let (engine, server) = served(Net::Http).await;
    let h = engine
        .client()
        .start::<Writer>("w-1", 4)
        .await
        .expect("start");
    h.allow(2).await.expect("signal");
    let mut first = SseReader::open(&server, PATH, TOKEN, None).await;
    let mut seen = vec![first.next().await.unwrap(), first.next().await.unwrap()];
    drop(first);
    let last: u64 = seen[1].id.as_deref().unwrap().parse().unwrap();
    let mut second = SseReader::open(&server, PATH, TOKEN, Some(&last.to_string())).await;
    h.allow(4).await.expect("signal");
    seen.push(second.next().await.unwrap());
    seen.extend(second.rest().await);
    assert_eq!(
        seen,
        vec![
            entry(0, 0),
            entry(1, 1),
            entry(2, 2),
            entry(3, 3),
            end(Some(4))
        ]
    );
    h.finish().await.expect("signal");
    engine.shutdown().await;
}

#[tokio::test]
async fn a_stream_left_open_ends_with_its_run() {
    let (engine, server) = served(Net::Http).await;
    let h = engine
        .client()
        .start::<Unclosed>("u-1", 2)
        .await
        .expect("start");
    h.result().await.expect("completes");
    let events = SseReader::open(&server, "/_/runs/u-1/streams/open", TOKEN, None)
        .await
        .rest()
        .await;
    let data: Vec<&str> = events.iter().map(|e| e.data.as_str()).collect();
    assert_eq!(data, vec!["0", "1", r#"{"closed":false}"#]);
    assert_eq!(events[2].event.as_deref(), Some("end"));
    engine.shutdown().await;
}

#[tokio::test]
async fn unknown_runs_bad_names_and_roles() {
    let (engine, server) = served(Net::Http).await;
    let h = engine
        .client()
        .start::<Writer>("w-1", 1)
        .await
        .expect("start");
    h.allow(1).await.expect("signal");
    let http = Http::new(Net::Http, server.local_addr(), Some(TOKEN));
    let unknown = http.get("/_/runs/nobody/streams/tokens").await;
    assert_eq!(unknown.status, 404, "{:?}", unknown.body);
    let bad = http.get("/_/runs/w-1/streams/a%01b").await;
    assert_eq!(bad.status, 400, "{:?}", bad.body);
    assert_eq!(bad.body["error"], "invalid_args");
    let anonymous = Http::new(Net::Http, server.local_addr(), None)
        .get(PATH)
        .await;
    assert_eq!(anonymous.status, 401);
    let stranger = Http::new(Net::Http, server.local_addr(), Some("nobody"))
        .get(PATH)
        .await;
    assert_eq!(stranger.status, 401);
    // A read token reads the stream (and may not signal).
    let events = SseReader::open(&server, PATH, READ, None)
        .await
        .rest()
        .await;
    assert_eq!(events, vec![entry(0, 0), end(Some(1))]);
    let reader = Http::new(Net::Http, server.local_addr(), Some(READ));
    let signal = reader
        .post(
            "/http_stream_writer/runs/w-1/signal",
            json!({ "name": "finish", "args": [] }),
        )
        .await;
    assert_eq!(signal.status, 403);
    h.finish().await.expect("signal");
    engine.shutdown().await;
}

both_ways!(
    #[tokio::test]
    a_runs_streams_are_listed_as_json_and_by_the_remote_client
);
async fn a_runs_streams_are_listed_as_json_and_by_the_remote_client(net: Net) {
    let (engine, server) = served(net).await;
    let h = engine
        .client()
        .start::<Writer>("w-1", 2)
        .await
        .expect("start");
    let http = net.http(&server, Some(READ));
    let listed = http.get("/http_stream_writer/runs/w-1/streams").await;
    let run_id = h.describe().await.expect("describe").run_id;
    assert_eq!(
        (listed.status, listed.body.clone()),
        (200, json!({ "run_id": run_id, "streams": [] })),
        "nothing written yet"
    );
    h.allow(1).await.expect("signal");
    let mut reader = h.stream::<Token>("tokens");
    assert_eq!(reader.next().await.expect("an entry").expect("read").0, 0);
    let listed = http
        .get(&format!("/_/runs/w-1/streams?run_id={run_id}"))
        .await;
    assert_eq!(
        listed.body,
        json!({ "run_id": run_id, "streams": [{ "name": "tokens", "entries": 1, "closed": false }] })
    );
    h.allow(2).await.expect("signal");
    // Read to the close: the list below sees it.
    let rest = reader.collect().await.expect("read");
    assert_eq!(rest, vec![(1, token(1))]);
    let remote = net.connect(&server).token(READ).await.expect("connect");
    let list = remote
        .handle::<Writer>("w-1")
        .streams()
        .await
        .expect("the list");
    assert_eq!(list.run_id, run_id);
    assert_eq!(
        list.streams,
        vec![wf_sdk::client::StreamInfo {
            name: "tokens".into(),
            entries: 2,
            closed: true
        }]
    );
    let missing = remote.handle::<Writer>("nobody").streams().await;
    assert!(
        matches!(missing, Err(WfError::NotFound { .. })),
        "{missing:?}"
    );
    let anonymous = net
        .http(&server, None)
        .get("/http_stream_writer/runs/w-1/streams")
        .await;
    assert_eq!(anonymous.status, 401);
    h.finish().await.expect("signal");
    engine.shutdown().await;
}

both_ways!(
    #[tokio::test]
    the_remote_client_reads_streams_and_published_events
);
async fn the_remote_client_reads_streams_and_published_events(net: Net) {
    let (engine, server) = served(net).await;
    let remote = net.connect(&server).token(READ).await.expect("connect");
    let h = engine
        .client()
        .start::<Writer>("w-1", 300)
        .await
        .expect("start");
    let remote_h = remote.handle::<Writer>("w-1");
    // Started before the writes: it follows them, over pages and reconnections.
    let follower = tokio::spawn(remote_h.stream::<Token>("tokens").collect());
    let stage = tokio::spawn({
        let remote = remote.clone();
        async move {
            remote
                .get_event::<String>("w-1", "stage", Duration::from_secs(30))
                .await
        }
    });
    h.allow(100).await.expect("signal");
    let mut early = remote_h.stream::<Token>("tokens");
    assert_eq!(
        early.next().await.expect("an entry").expect("read"),
        (0, token(0))
    );
    drop(early);
    h.allow(300).await.expect("signal");
    let all = follower.await.expect("join").expect("read");
    let expected: Vec<(u64, Token)> = (0..300).map(|i| (u64::from(i), token(i))).collect();
    assert_eq!(all, expected);
    assert_eq!(
        stage.await.expect("join").expect("event"),
        Some("written".to_string())
    );
    let tail = remote_h
        .stream::<Token>("tokens")
        .from(298)
        .collect()
        .await
        .expect("read");
    assert_eq!(tail, expected[298..].to_vec());
    let never: Option<String> = remote
        .get_event("w-1", "never", Duration::from_millis(50))
        .await
        .expect("event");
    assert_eq!(never, None);
    let missing = remote
        .handle::<Writer>("nobody")
        .stream::<Token>("tokens")
        .collect()
        .await;
    assert!(
        matches!(missing, Err(WfError::NotFound { .. })),
        "{missing:?}"
    );
    let bad = remote_h.stream::<Token>("bad\u{1}name").collect().await;
    assert!(matches!(bad, Err(WfError::InvalidArgument(_))), "{bad:?}");

    // The published-event route, as JSON.
    let http = net.http(&server, Some(READ));
    let got = http.get("/_/runs/w-1/published/stage?timeout_ms=10").await;
    assert_eq!(
        (got.status, got.body.clone()),
        (200, json!({ "value": "written" }))
    );
    let pending = http.get("/_/runs/w-1/published/never?timeout_ms=10").await;
    assert_eq!(pending.status, 202);
    assert_eq!(pending.body, json!({ "status": "pending" }));
    h.finish().await.expect("signal");
    engine.shutdown().await;
}

/// A TCP proxy to `upstream` that closes the first `cuts` connections asking for a stream as
/// soon as the server answers anything on them; the count of cuts made is shared.
async fn cutting_proxy(
    upstream: std::net::SocketAddr,
    cuts: usize,
) -> (
    std::net::SocketAddr,
    std::sync::Arc<std::sync::atomic::AtomicUsize>,
) {
    use std::sync::atomic::{AtomicUsize, Ordering};
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let made = std::sync::Arc::new(AtomicUsize::new(0));
    let counter = made.clone();
    tokio::spawn(async move {
        while let Ok((mut down, _)) = listener.accept().await {
            let made = counter.clone();
            tokio::spawn(async move {
                let mut up = TcpStream::connect(upstream).await.unwrap();
                let mut request = vec![0u8; 8192];
                let n = down.read(&mut request).await.unwrap_or(0);
                let asks_stream = String::from_utf8_lossy(&request[..n]).contains("/streams/");
                let cut = asks_stream
                    && made
                        .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |m| {
                            (m < cuts).then_some(m + 1)
                        })
                        .is_ok();
                if up.write_all(&request[..n]).await.is_err() {
                    return;
                }
                if cut {
                    let mut answer = [0u8; 1];
                    let _ = up.read(&mut answer).await;
                    return; // both connections dropped: the client sees the answer break
                }
                let _ = tokio::io::copy_bidirectional(&mut down, &mut up).await;
            });
        }
    });
    (addr, made)
}

#[tokio::test]
async fn the_remote_reader_reopens_a_broken_event_stream() {
    let (engine, server) = served(Net::Http).await;
    let (proxy, cuts) = cutting_proxy(server.local_addr(), 2).await;
    let remote = Client::connect(format!("http://{proxy}"))
        .token(READ)
        .await
        .expect("connect");
    let h = engine
        .client()
        .start::<Writer>("w-1", 3)
        .await
        .expect("start");
    let follower = tokio::spawn(
        remote
            .handle::<Writer>("w-1")
            .stream::<Token>("tokens")
            .collect(),
    );
    h.allow(3).await.expect("signal");
    let all = follower.await.expect("join").expect("read");
    assert_eq!(all, vec![(0, token(0)), (1, token(1)), (2, token(2))]);
    assert_eq!(cuts.load(std::sync::atomic::Ordering::SeqCst), 2);
    h.finish().await.expect("signal");
    engine.shutdown().await;
}

/// The server's per-request timeout bounds the wait for the answer's head, not an event
/// stream that then follows its run for longer.
#[tokio::test]
async fn an_event_stream_outlives_the_request_timeout() {
    let engine = Engine::builder()
        .memory()
        .workflow::<Writer>()
        .build()
        .await
        .expect("engine");
    let mut options = ServeOptions::default().token(TOKEN);
    options.request_timeout = Duration::from_millis(50);
    let server = Net::Http.serve(&engine, options).await;
    let h = engine
        .client()
        .start::<Writer>("w-1", 1)
        .await
        .expect("start");
    let reader = SseReader::open(&server, PATH, TOKEN, None).await;
    assert_eq!(reader.status, 200);
    // Well past the timeout before the write.
    tokio::time::sleep(Duration::from_millis(300)).await;
    h.allow(1).await.expect("signal");
    assert_eq!(reader.rest().await, vec![entry(0, 0), end(Some(1))]);
    h.finish().await.expect("signal");
    engine.shutdown().await;
}
