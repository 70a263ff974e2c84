//! What the OTLP tests share: a workflow that makes spans, and a collector (a small HTTP or
//! HTTPS server on a thread) that keeps every request body; OTLP's protobuf keeps strings as
//! their bytes, so the span names and the workflow id are found in them.
// Each test file uses a part.
#![allow(dead_code)]

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpListener;
use std::sync::{Arc, Mutex};
use std::time::Duration;
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
pub type Requests = Arc<Mutex<Vec<(String, Vec<u8>)>>>;

/// Serves `POST`s on a thread, over TLS with `tls`: answers 200 to each and keeps its path
/// and body.
pub fn collector(tls: Option<Arc<rustls::ServerConfig>>) -> (String, Requests) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let scheme = if tls.is_some() { "https" } else { "http" };
    let url = format!("{scheme}://{}/v1/traces", listener.local_addr().unwrap());
    let seen = Requests::default();
    let keep = seen.clone();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(stream) = stream else { return };
            let keep = keep.clone();
            let tls = tls.clone();
            std::thread::spawn(move || match tls {
                None => answer(stream, &keep),
                Some(config) => {
                    let Ok(session) = rustls::ServerConnection::new(config) else {
                        return;
                    };
                    answer(rustls::StreamOwned::new(session, stream), &keep)
                }
            });
        }
    });
    (url, seen)
}

/// Reads requests off `stream` until it closes (or fails, as a refused handshake does).
fn answer<S: Read + Write>(stream: S, keep: &Requests) {
    let mut reader = BufReader::new(stream);
    loop {
        let mut request_line = String::new();
        if reader.read_line(&mut request_line).unwrap_or(0) == 0 {
            return;
        }
        let mut length = 0;
        loop {
            let mut header = String::new();
            if reader.read_line(&mut header).is_err() {
                return;
            }
            if header.trim().is_empty() {
                break;
            }
            let lower = header.to_ascii_lowercase();
            if let Some(v) = lower.strip_prefix("content-length:") {
                length = v.trim().parse().unwrap();
            }
        }
        let mut body = vec![0; length];
        if reader.read_exact(&mut body).is_err() {
            return;
        }
        let path = request_line.split(' ').nth(1).unwrap_or("").to_string();
        keep.lock().unwrap().push((path, body));
        let ok =
            "HTTP/1.1 200 OK\r\ncontent-type: application/x-protobuf\r\ncontent-length: 0\r\n\r\n";
        if reader.get_mut().write_all(ok.as_bytes()).is_err() {
            return;
        }
        let _ = reader.get_mut().flush();
    }
}

/// The collector's TLS: the test certificate, on rustls's `ring` provider.
pub fn collector_tls(pki: &wf_http::testing::TestPki) -> Arc<rustls::ServerConfig> {
    use rustls::pki_types::pem::PemObject;
    use rustls::pki_types::{CertificateDer, PrivateKeyDer};
    let chain = CertificateDer::pem_slice_iter(pki.server_cert_pem.as_bytes())
        .collect::<Result<Vec<_>, _>>()
        .unwrap();
    let key = PrivateKeyDer::from_pem_slice(pki.server_key_pem.as_bytes()).unwrap();
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let config = rustls::ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_no_client_auth()
        .with_single_cert(chain, key)
        .unwrap();
    Arc::new(config)
}

fn contains(haystack: &[u8], needle: &str) -> bool {
    haystack
        .windows(needle.len())
        .any(|w| w == needle.as_bytes())
}

/// What the collector must have got: the service's name, wf's span names, the run's id.
pub fn check_spans(seen: &Requests, workflow_id: &str) {
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
        workflow_id,
        "traced",
    ] {
        assert!(
            contains(&all, needle),
            "no {needle:?} in what the collector got"
        );
    }
}

/// Runs one `traced` workflow as `workflow_id` to its end on an in-memory engine.
pub async fn run_traced(workflow_id: &str) {
    let engine = Engine::builder()
        .memory()
        .workflow::<Traced>()
        .build()
        .await
        .unwrap();
    let h = engine
        .client()
        .start::<Traced>(workflow_id, ())
        .await
        .unwrap();
    h.go().await.unwrap();
    tokio::time::timeout(Duration::from_secs(60), h.result())
        .await
        .expect("the run finishes")
        .unwrap();
    engine.shutdown().await;
}
