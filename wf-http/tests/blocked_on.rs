//! Why a run is idle, over HTTP: describe's `blocked_on` names the `wait_condition` a run's
//! main method is blocked on, with its source location; `POST .../query?at_event=N` answers as
//! of a history event; the remote client carries both.

#[macro_use]
mod common;
use serde_json::{json, Value};
use std::time::Duration;
use wf_sdk::prelude::*;
use wf_testkit::gate::{Gate, GateClient};

async fn setup(net: common::Net) -> (Engine, wf_http::Server, common::Http) {
    let engine = Engine::builder()
        .memory()
        .poll_interval(Duration::from_millis(20))
        .workflow::<Gate>()
        .build()
        .await
        .expect("engine");
    let server = net.serve(&engine, wf_http::ServeOptions::default()).await;
    let http = net.http(&server, None);
    (engine, server, http)
}

/// The event ids of the `bump` signals in `history` (the JSON of the history route).
fn bump_events(history: &Value) -> Vec<u64> {
    history["events"]
        .as_array()
        .expect("events")
        .iter()
        .filter(|e| e["type"] == "SignalReceived" && e["attributes"]["name"] == "bump")
        .map(|e| e["event_id"].as_u64().expect("event id"))
        .collect()
}

both_ways!(
    #[tokio::test]
    describe_and_query_at_over_http
);
async fn describe_and_query_at_over_http(net: common::Net) {
    let (engine, server, http) = setup(net).await;
    let h = engine.client().start::<Gate>("g-1", ()).await.unwrap();
    for _ in 0..3 {
        h.bump().await.unwrap();
    }
    let (file, line) = h.wait_at().await.unwrap();

    let r = http.get("/gate/runs/g-1").await;
    assert_eq!(r.status, 200, "{:?}", r.body);
    let run = &r.body["blocked_on"][0];
    assert_eq!(run["part"], "run", "{:?}", r.body["blocked_on"]);
    let wait = &run["waits"][0];
    assert_eq!(wait["kind"], "condition");
    assert_eq!(wait["location"]["file"], json!(file));
    assert_eq!(wait["location"]["line"], json!(line));

    let r = http.get("/gate/runs/g-1/history").await;
    assert_eq!(r.status, 200, "{:?}", r.body);
    let bumps = bump_events(&r.body);
    assert_eq!(bumps.len(), 3, "{:?}", r.body);
    let path = format!("/gate/runs/g-1/query?at_event={}", bumps[1]);
    let r = http.post(&path, json!({"name": "count"})).await;
    assert_eq!(
        (r.status, &r.body["value"]),
        (200, &json!(2)),
        "{:?}",
        r.body
    );
    let r = http
        .post(
            "/gate/runs/g-1/query?at_event=9999",
            json!({"name": "count"}),
        )
        .await;
    assert_eq!(r.status, 400, "{:?}", r.body);
    assert!(r.body.to_string().contains("out of range"), "{:?}", r.body);
    let r = http
        .post("/gate/runs/g-1/query?at_event=x", json!({"name": "count"}))
        .await;
    assert_eq!(r.status, 400, "{:?}", r.body);

    // The remote client: describe carries blocked_on, the typed query takes at_event.
    let remote = net.connect(&server).await.expect("connect");
    let d = remote.handle::<Gate>("g-1").describe().await.unwrap();
    let at = d.blocked_on[0].waits[0].location.clone().expect("location");
    assert_eq!((at.file, at.line), (file, line));
    let remote_gate = remote.handle::<Gate>("g-1");
    assert_eq!(remote_gate.count().at_event(bumps[0]).await.unwrap(), 1);
    assert_eq!(remote_gate.count().await.unwrap(), 3);
    let err = remote_gate.count().at_event(0).await.unwrap_err();
    assert!(matches!(err, WfError::InvalidArgument(_)), "{err}");
}
