//! Updates whose wait runs out, over HTTP: the server is only a client of the store (no
//! worker yet), so an update cannot be taken; the route answers 504 `timeout` naming the
//! update id, the update stays queued, and once a worker runs the same update id answers 200
//! with the value. The remote typed client's `.timeout(d)` goes the same way.

#[macro_use]
mod common;

use common::{AgentInput, AgentRun, AgentRunClient, Tools, TOKEN};
use serde_json::json;
use std::sync::Arc;
use std::time::Duration;
use wf_http::ServeOptions;
use wf_sdk::prelude::*;
use wf_sdk::{history::EventKind, store::MemoryStore};

/// An engine on `store` with no worker (a client of the store), serving HTTP; its updates wait
/// 300 ms unless told otherwise.
async fn client_only_server(
    net: common::Net,
    store: Arc<MemoryStore>,
) -> (Engine, wf_http::Server) {
    let engine = Engine::builder()
        .store(store)
        .poll_interval(Duration::from_millis(20))
        .workflow::<AgentRun>()
        .client_only()
        .update_timeout(Duration::from_millis(300))
        .build()
        .await
        .expect("engine");
    let server = net
        .serve(&engine, ServeOptions::default().token(TOKEN))
        .await;
    (engine, server)
}

async fn worker(store: Arc<MemoryStore>) -> Engine {
    Engine::builder()
        .store(store)
        .poll_interval(Duration::from_millis(20))
        .workflow::<AgentRun>()
        .activities(Tools)
        .build()
        .await
        .expect("worker")
}

fn accepted_ids(history: &[wf_sdk::history::HistoryEvent]) -> Vec<String> {
    history
        .iter()
        .filter_map(|e| match &e.kind {
            EventKind::UpdateAccepted { update_id, .. } => Some(update_id.clone()),
            _ => None,
        })
        .collect()
}

both_ways!(
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    update_route_answers_504_then_the_same_id_returns_the_value
);
async fn update_route_answers_504_then_the_same_id_returns_the_value(net: common::Net) {
    let store = Arc::new(MemoryStore::new());
    let (engine, server) = client_only_server(net, store.clone()).await;
    let http = net.http(&server, Some(TOKEN));
    let r = http
        .post(
            "/agent_run/runs",
            json!({"id": "t-1", "input": {"goal": "ship", "step": 0}}),
        )
        .await;
    assert_eq!(r.status, 201, "{:?}", r.body);
    let path = "/agent_run/runs/t-1/update";

    // Its own timeout: 504 naming the id.
    let r = http
        .post(
            path,
            json!({"name": "set_step", "args": [5], "update_id": "s-1", "timeout_ms": 100}),
        )
        .await;
    assert_eq!(
        (r.status, r.body["error"].as_str()),
        (504, Some("timeout")),
        "{:?}",
        r.body
    );
    assert_eq!(r.body["update_id"], "s-1");
    // Waiting only for acceptance runs out the same way.
    let r = http
        .post(
            path,
            json!({"name": "set_step", "args": [6], "update_id": "s-2", "wait": "accepted",
                   "timeout_ms": 100}),
        )
        .await;
    assert_eq!(
        (r.status, r.body["error"].as_str()),
        (504, Some("timeout")),
        "{:?}",
        r.body
    );
    assert_eq!(r.body["update_id"], "s-2");
    // The engine's default (300 ms here): the message names the id the engine gave it.
    let r = http
        .post(path, json!({"name": "set_step", "args": [7]}))
        .await;
    assert_eq!(
        (r.status, r.body["error"].as_str()),
        (504, Some("timeout")),
        "{:?}",
        r.body
    );
    let message = r.body["message"].as_str().unwrap();
    assert!(
        message.contains("update id") && message.contains("stays queued"),
        "{message}"
    );

    // A worker comes: the queued updates are applied in order; the same ids answer.
    let _worker = worker(store).await;
    let r = http
        .post(
            path,
            json!({"name": "set_step", "args": [5], "update_id": "s-1", "timeout_ms": 10000}),
        )
        .await;
    assert_eq!(r.status, 200, "{:?}", r.body);
    assert_eq!(r.body["update_id"], "s-1");
    assert_eq!(r.body["value"], 0, "set_step returns the step before");
    let r = http
        .get("/agent_run/runs/t-1/updates/s-2?wait=completed&wait_ms=10000")
        .await;
    assert_eq!(
        (r.status, &r.body["value"]),
        (200, &json!(5)),
        "{:?}",
        r.body
    );
    let history = engine.client().history("t-1").await.unwrap();
    let ids = accepted_ids(&history);
    assert_eq!(ids.iter().filter(|id| *id == "s-1").count(), 1, "{ids:?}");
    assert_eq!(ids.iter().filter(|id| *id == "s-2").count(), 1, "{ids:?}");
    assert_eq!(ids.len(), 3, "{ids:?}");
    server.shutdown().await.unwrap();
}

both_ways!(
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    remote_typed_update_times_out_then_its_id_returns_the_value
);
async fn remote_typed_update_times_out_then_its_id_returns_the_value(net: common::Net) {
    let store = Arc::new(MemoryStore::new());
    let (_engine, server) = client_only_server(net, store.clone()).await;
    let client = net.connect(&server).token(TOKEN).await.expect("connect");
    let input = AgentInput {
        goal: "g".into(),
        step: 3,
    };
    let h = client.start::<AgentRun>("t-2", input).await.unwrap();
    let err = h
        .set_step(9)
        .update_id("r-1")
        .timeout(Duration::from_millis(150))
        .await
        .unwrap_err();
    assert!(
        matches!(&err, WfError::Timeout(m) if m.contains("\"r-1\"")),
        "{err:?}"
    );
    let _worker = worker(store).await;
    let previous = h
        .set_step(9)
        .update_id("r-1")
        .timeout(Duration::from_secs(10))
        .await
        .unwrap();
    assert_eq!(previous, 3);
    assert_eq!(accepted_ids(&h.history().await.unwrap()), ["r-1"]);
    server.shutdown().await.unwrap();
}
