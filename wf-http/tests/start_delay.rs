//! Start delay over HTTP: the start body's `start_delay_ms`, describe's `start_at_ms`, and the
//! remote client sending `StartOptions::start_delay` and reading `Description::start_at`. The
//! delay is an hour: the tests look at the waiting run, never wait it out.

#[macro_use]
mod common;

use common::{served, Nap, TOKEN};
use serde_json::json;
use std::time::Duration;
use wf_http::ServeOptions;
use wf_sdk::client::StartOptions;

const HOUR_MS: u64 = 3_600_000;

both_ways!(
    #[tokio::test]
    a_start_body_delays_the_run_and_describe_says_until_when
);
async fn a_start_body_delays_the_run_and_describe_says_until_when(net: common::Net) {
    let (_engine, server) = served(net, ServeOptions::default().token(TOKEN)).await;
    let http = net.http(&server, Some(TOKEN));
    let r = http
        .post(
            "/nap/runs",
            json!({"id": "nap-1", "input": 1, "start_delay_ms": HOUR_MS}),
        )
        .await;
    assert_eq!(r.status, 201, "{:?}", r.body);
    let d = http.get("/nap/runs/nap-1").await;
    assert_eq!(d.status, 200, "{:?}", d.body);
    assert_eq!(d.body["status"], "running");
    let started = d.body["started_at_ms"].as_u64().expect("started_at_ms");
    assert_eq!(d.body["start_at_ms"].as_u64(), Some(started + HOUR_MS));
    assert_eq!(d.body["history_length"], 1, "{:?}", d.body);
    // An undelayed start says nothing of a start time.
    let r = http
        .post("/nap/runs", json!({"id": "nap-2", "input": 1}))
        .await;
    assert_eq!(r.status, 201, "{:?}", r.body);
    let d = http.get("/nap/runs/nap-2").await;
    assert!(d.body["start_at_ms"].is_null(), "{:?}", d.body);
    server.shutdown().await.unwrap();
}

both_ways!(
    #[tokio::test]
    the_remote_client_sends_the_start_delay
);
async fn the_remote_client_sends_the_start_delay(net: common::Net) {
    let (_engine, server) = served(net, ServeOptions::default().token(TOKEN)).await;
    let client = net.connect(&server).token(TOKEN).await.expect("connect");
    let options = StartOptions::new().start_delay(Duration::from_millis(HOUR_MS));
    let h = client
        .start_with::<Nap>("nap-remote", 1, options)
        .await
        .unwrap();
    let d = h.describe().await.unwrap();
    assert_eq!(
        d.start_at,
        Some(d.started_at + Duration::from_millis(HOUR_MS))
    );
    assert_eq!(d.history_length, 1, "{d:?}");
    server.shutdown().await.unwrap();
}

both_ways!(
    #[tokio::test]
    debounced_starts_over_http_answer_the_waiting_run
);
async fn debounced_starts_over_http_answer_the_waiting_run(net: common::Net) {
    let (_engine, server) = served(net, ServeOptions::default().token(TOKEN)).await;
    let http = net.http(&server, Some(TOKEN));
    let body = |id: &str, hours: u32| json!({"id": id, "input": hours, "debounce_key": "k", "debounce_window_ms": HOUR_MS});
    let r = http.post("/nap/runs", body("nap-a", 1)).await;
    assert_eq!(r.status, 201, "{:?}", r.body);
    let r = http.post("/nap/runs", body("nap-b", 2)).await;
    assert_eq!(r.status, 200, "{:?}", r.body);
    assert_eq!(r.body["workflow_id"], "nap-a", "{:?}", r.body);
    assert_eq!(r.body["started"], false, "{:?}", r.body);
    let r = http.get("/nap/runs/nap-b").await;
    assert_eq!(r.status, 404, "{:?}", r.body);
    let r = http
        .post(
            "/nap/runs",
            json!({"id": "nap-c", "input": 1, "debounce_key": "k"}),
        )
        .await;
    assert_eq!(r.status, 400, "{:?}", r.body);

    // The remote client's handle follows the waiting run.
    let client = net.connect(&server).token(TOKEN).await.expect("connect");
    let options = StartOptions::new().debounce("k", Duration::from_millis(HOUR_MS));
    let h = client.start_with::<Nap>("nap-d", 3, options).await.unwrap();
    assert_eq!(h.workflow_id(), "nap-a");
    assert!(h.start_outcome().is_some_and(|s| !s.started));
    server.shutdown().await.unwrap();
}
