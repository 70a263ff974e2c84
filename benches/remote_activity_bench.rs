//! Activities run by a worker outside the engine, over HTTP, measured: a JSON client polls
//! `POST /_activities/poll` and answers `POST /_activities/complete`, as a worker in another
//! language does, on keep-alive connections to `wf_http::serve` on 127.0.0.1 (same process,
//! so client and server share the VM's cores). The engine runs on a SQLite file (durable, as
//! in production) and registers no activity: every attempt goes through the HTTP API.
//!
//! - (r1) one workflow, 200 activities one after another, one poller: the round trip of one
//!   activity (the poll that takes it, the complete, the workflow task that schedules the
//!   next, the wake-up of the waiting poll).
//! - (r2) 2,000 workflows of one activity each, started first: tasks per second through
//!   poll + complete with 1 and with 8 pollers.
//!
//! Prints figures; asserts nothing about time.
//!
//! ```sh
//! cargo run --release --example remote_activity_bench
//! cargo run --release --example remote_activity_bench -- --memory   # the in-memory store
//! ```

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::client::conn::http1::SendRequest;
use hyper_util::rt::TokioIo;
use serde_json::{json, Value};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::net::TcpStream;
use wf_sdk::http::{serve, ServeOptions};
use wf_sdk::prelude::*;

const TOKEN: &str = "bench-token";
const QUEUE: &str = "remote";

/// Runs `n` activities `echo` one after another on the remote queue; their sum.
#[derive(Default)]
pub struct Chain;

#[workflow]
impl Chain {
    #[run]
    async fn run(ctx: &mut WorkflowContext<Self>, n: u32) -> Result<u64, WorkflowError> {
        let mut sum = 0u64;
        for i in 0..n {
            let v: u32 = ctx
                .activity_by_name("echo", &i)
                .task_queue(QUEUE)
                .start_to_close(Duration::from_secs(60))
                .await?;
            sum += u64::from(v);
        }
        Ok(sum)
    }
}

/// One JSON keep-alive connection.
struct Json {
    authority: String,
    send: SendRequest<Full<Bytes>>,
}

impl Json {
    async fn connect(authority: &str) -> Json {
        let tcp = TcpStream::connect(authority).await.expect("connect");
        tcp.set_nodelay(true).expect("nodelay");
        let (send, conn) = hyper::client::conn::http1::handshake(TokioIo::new(tcp))
            .await
            .expect("handshake");
        tokio::spawn(conn);
        Json {
            authority: authority.to_string(),
            send,
        }
    }

    /// POSTs `body` to `path`: the status and the JSON answer (`Null` when empty).
    async fn post(&mut self, path: &str, body: &Value) -> (u16, Value) {
        let req = hyper::Request::post(path)
            .header("host", self.authority.as_str())
            .header("authorization", format!("Bearer {TOKEN}"))
            .header("content-type", "application/json")
            .body(Full::new(Bytes::from(
                serde_json::to_vec(body).expect("json"),
            )))
            .expect("request");
        self.send.ready().await.expect("connection ready");
        let res = self.send.send_request(req).await.expect("answer");
        let status = res.status().as_u16();
        let bytes = res.into_body().collect().await.expect("body").to_bytes();
        (
            status,
            serde_json::from_slice(&bytes).unwrap_or(Value::Null),
        )
    }
}

/// Polls and completes tasks (echoing the input) until `done` reaches `total`.
async fn worker(authority: String, done: Arc<AtomicUsize>, total: usize) {
    let mut http = Json::connect(&authority).await;
    let poll = json!({"task_queue": QUEUE, "names": ["echo"], "wait_ms": 200, "identity": "bench"});
    while done.load(Ordering::SeqCst) < total {
        let (status, task) = http.post("/_activities/poll", &poll).await;
        match status {
            204 => continue,
            200 => {}
            other => panic!("poll answered {other}: {task}"),
        }
        let body = json!({"token": task["token"], "result": task["input"]});
        let (status, answer) = http.post("/_activities/complete", &body).await;
        assert_eq!(status, 200, "{answer}");
        done.fetch_add(1, Ordering::SeqCst);
    }
}

/// `pollers` workers until `total` tasks are done: the elapsed time.
async fn drain(authority: &str, pollers: usize, total: usize) -> Duration {
    let done = Arc::new(AtomicUsize::new(0));
    let t = Instant::now();
    let workers: Vec<_> = (0..pollers)
        .map(|_| tokio::spawn(worker(authority.to_string(), done.clone(), total)))
        .collect();
    for w in workers {
        w.await.expect("worker");
    }
    t.elapsed()
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let memory = std::env::args().any(|a| a == "--memory");
    let dir = std::env::temp_dir().join(format!("wf-remote-bench-{}", std::process::id()));
    std::fs::create_dir_all(&dir)?;
    let builder = if memory {
        Engine::builder().memory()
    } else {
        Engine::builder().sqlite(dir.join("bench.db"))
    };
    let engine = builder.workflow::<Chain>().build().await?;
    let server = serve(&engine, "127.0.0.1:0", ServeOptions::default().token(TOKEN)).await?;
    let authority = server.local_addr().to_string();
    let store = if memory { "memory" } else { "SQLite file" };
    println!("store: {store}; JSON client in this process, keep-alive connections");

    // (r1) 200 sequential activities of one workflow, one poller.
    let n = 200u32;
    let h = engine.client().start::<Chain>("chain", n).await?;
    let elapsed = drain(&authority, 1, n as usize).await;
    assert_eq!(h.result().await?, u64::from(n) * u64::from(n - 1) / 2);
    println!(
        "(r1) {n} sequential remote activities: {:.2} ms per activity round trip",
        elapsed.as_secs_f64() * 1000.0 / f64::from(n)
    );

    // (r2) 2,000 one-activity workflows started first, then drained by 1 and by 8 pollers.
    for (round, pollers) in [(0, 1usize), (1, 8)] {
        let total = 2_000usize;
        let mut handles = Vec::with_capacity(total);
        for i in 0..total {
            let id = format!("one-{round}-{i}");
            handles.push(engine.client().start::<Chain>(&id, 1).await?);
        }
        let elapsed = drain(&authority, pollers, total).await;
        for h in handles {
            h.result().await?;
        }
        println!(
            "(r2) {total} tasks, {pollers} poller(s): {:.0} tasks/s through poll + complete",
            total as f64 / elapsed.as_secs_f64()
        );
    }
    server.shutdown().await?;
    engine.shutdown().await;
    let _ = std::fs::remove_dir_all(&dir);
    Ok(())
}
