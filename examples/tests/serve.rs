//! The server of `examples/serve.rs`, over HTTP: an agent_run's steps come out of
//! `GET /agent_run/runs/ID/streams/steps?from=0` as server-sent events, one per step, read
//! the way `curl -N` reads them (a plain HTTP request, the body as it comes) while the run
//! goes, and end with the stream's close.

// serve.rs includes agent_run.rs and cart.rs, each with its demo database module.
#![allow(clippy::duplicate_mod)]

#[allow(dead_code)]
#[path = "../serve.rs"]
mod serve;

use serve::agent_run::{AgentInput, AgentRun, AgentRunClient, Status, Step, STEPS};
use std::net::SocketAddr;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use wf_sdk::http::ServeOptions;
use wf_sdk::prelude::*;

/// One server-sent event: its `id:`, `event:` and `data:` lines.
#[derive(Debug, Default)]
struct Sse {
    id: Option<u64>,
    event: Option<String>,
    data: String,
}

/// `GET path` as HTTP/1.0 (the server ends the body by closing), and the body's events.
async fn read_events(addr: SocketAddr, path: String) -> Vec<Sse> {
    let mut conn = tokio::net::TcpStream::connect(addr)
        .await
        .expect("connect to the server");
    let request =
        format!("GET {path} HTTP/1.0\r\nHost: {addr}\r\nAccept: text/event-stream\r\n\r\n");
    conn.write_all(request.as_bytes())
        .await
        .expect("send the request");
    let mut raw = Vec::new();
    conn.read_to_end(&mut raw).await.expect("read the response");
    let text = String::from_utf8(raw).expect("the events are UTF-8");
    let (head, body) = text.split_once("\r\n\r\n").expect("a response head");
    assert!(head.starts_with("HTTP/1."), "{head}");
    assert!(head.contains(" 200 "), "{head}");
    assert!(
        head.to_ascii_lowercase()
            .contains("content-type: text/event-stream"),
        "{head}"
    );
    body.split("\n\n")
        .filter(|block| !block.trim().is_empty() && !block.starts_with(':'))
        .map(|block| {
            let mut e = Sse::default();
            for line in block.lines() {
                let (field, value) = line.split_once(": ").unwrap_or((line, ""));
                match field {
                    "id" => e.id = Some(value.parse().expect("an entry's offset")),
                    "event" => e.event = Some(value.to_string()),
                    "data" => e.data.push_str(value),
                    _ => {}
                }
            }
            e
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn serve_streams_an_agents_steps_as_server_sent_events() {
    let engine = serve::engine(Engine::builder().memory())
        .await
        .expect("the served engine");
    let server = wf_sdk::http::serve(&engine, "127.0.0.1:0", ServeOptions::default())
        .await
        .expect("serve");
    let addr = server.local_addr();
    let input = AgentInput {
        goal: "ship".into(),
        step: 0,
        steps_per_run: 100,
    };
    let h = engine
        .client()
        .start::<AgentRun>("agent-sse", input)
        .await
        .expect("start");
    // Opened while the run goes: what is stored comes first, the rest as it commits.
    let reader = tokio::spawn(read_events(
        addr,
        format!("/agent_run/runs/agent-sse/streams/{STEPS}?from=0"),
    ));
    let at: Status = wf_testkit::eventually("step 3", || {
        let h = h.clone();
        async move { h.status().await.ok().filter(|s| s.step >= 3) }
    })
    .await;
    assert!(at.step >= 3);
    h.stop().await.expect("the cancel signal");
    h.result().await.expect("the agent's result");
    let steps = h.status().await.expect("status").step;

    let events = reader.await.expect("the reader panicked");
    let (end, entries) = events.split_last().expect("some events");
    assert_eq!(
        entries.len(),
        steps as usize,
        "one entry per step: {events:?}"
    );
    for (i, e) in entries.iter().enumerate() {
        assert_eq!((e.id, e.event.as_deref()), (Some(i as u64), None), "{e:?}");
        let step: Step = serde_json::from_str(&e.data).expect("an entry is a Step as JSON");
        assert_eq!(step.step, i as u32 + 1, "{e:?}");
        assert!(step.note.contains("ship"), "{e:?}");
    }
    assert_eq!(end.event.as_deref(), Some("end"), "{end:?}");
    let closed: serde_json::Value = serde_json::from_str(&end.data).expect("the end's data");
    assert_eq!(
        closed,
        serde_json::json!({ "closed": true, "offset": steps }),
        "the stream was closed after the last step"
    );
    server.shutdown().await.expect("shutdown");
    engine.shutdown().await;
}
