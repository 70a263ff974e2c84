//! The `otel` feature end to end: spans of a run reach an OTLP/HTTP collector. The collector
//! is a small HTTP server of this test that keeps every request body; OTLP's protobuf keeps
//! strings as their bytes, so the span names and the workflow id are found in them.
#![cfg(feature = "otel")]

mod common;

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpListener;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use wf_sdk::otel::Otel;
use wf_sdk::prelude::*;

#[derive(Default)]
pub struct Traced {
    go: bool,
}

#[workflow(name = "traced")]
impl Traced {
    #[run]
    async fn run(ctx: &mut WorkflowContext<Self>) -> Result<(), WorkflowError> {
        ctx.wait_condition(|s| s.go).await;
        Ok(())
    }

    #[signal]
    fn go(&mut self) {
        self.go = true;
    }
}

/// The requests a collector got: path and body.
type Requests = Arc<Mutex<Vec<(String, Vec<u8>)>>>;

/// Serves `POST`s on a thread: answers 200 to each and keeps its path and body.
fn collector() -> (String, Requests) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}/v1/traces", listener.local_addr().unwrap());
    let seen = Requests::default();
    let keep = seen.clone();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { return };
            let keep = keep.clone();
            std::thread::spawn(move || {
                let mut reader = BufReader::new(stream.try_clone().unwrap());
                loop {
                    let mut request_line = String::new();
                    if reader.read_line(&mut request_line).unwrap_or(0) == 0 {
                        return;
                    }
                    let mut length = 0;
                    loop {
                        let mut header = String::new();
                        reader.read_line(&mut header).unwrap();
                        if header.trim().is_empty() {
                            break;
                        }
                        let lower = header.to_ascii_lowercase();
                        if let Some(v) = lower.strip_prefix("content-length:") {
                            length = v.trim().parse().unwrap();
                        }
                    }
                    let mut body = vec![0; length];
                    reader.read_exact(&mut body).unwrap();
                    let path = request_line.split(' ').nth(1).unwrap_or("").to_string();
                    keep.lock().unwrap().push((path, body));
                    let ok = "HTTP/1.1 200 OK\r\ncontent-type: application/x-protobuf\r\ncontent-length: 0\r\n\r\n";
                    if stream.write_all(ok.as_bytes()).is_err() {
                        return;
                    }
                }
            });
        }
    });
    (url, seen)
}

fn contains(haystack: &[u8], needle: &str) -> bool {
    haystack
        .windows(needle.len())
        .any(|w| w == needle.as_bytes())
}

#[tokio::test]
async fn spans_reach_an_otlp_collector() {
    let (url, seen) = collector();
    let otel = Otel::otlp("wf-otel-test", Some(&url)).unwrap();
    otel.install(tracing::Level::DEBUG).unwrap();

    let engine = Engine::builder()
        .memory()
        .workflow::<Traced>()
        .build()
        .await
        .unwrap();
    let h = engine.client().start::<Traced>("otel-1", ()).await.unwrap();
    h.go().await.unwrap();
    tokio::time::timeout(Duration::from_secs(60), h.result())
        .await
        .expect("the run finishes")
        .unwrap();
    engine.shutdown().await;
    otel.shutdown().unwrap();

    let seen = seen.lock().unwrap();
    assert!(!seen.is_empty(), "the collector got no request");
    assert!(seen.iter().all(|(path, _)| path == "/v1/traces"));
    let all: Vec<u8> = seen.iter().flat_map(|(_, b)| b.clone()).collect();
    for needle in [
        "wf-otel-test",
        "workflow_task",
        "activation",
        "signal",
        "commit",
        "otel-1",
        "traced",
    ] {
        assert!(
            contains(&all, needle),
            "no {needle:?} in what the collector got"
        );
    }
}
