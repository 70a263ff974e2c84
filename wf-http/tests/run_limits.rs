//! Run timeouts and the workflow retry policy over HTTP: the start body's fields, the
//! `timed_out` status and attempt in describe, the `timed_out` error of `result`, and the remote
//! client sending `StartOptions` for you. (The served engine runs on the system clock, so the
//! timeouts here are short; the tests wait for states, never for durations.)

#[macro_use]
mod common;

use common::{served, until, Nap, TOKEN};
use serde_json::json;
use std::time::Duration;
use wf_http::ServeOptions;
use wf_sdk::prelude::*;
use wf_sdk::{activity::RetryPolicy, client::StartOptions};

both_ways!(
    #[tokio::test]
    a_start_body_sets_the_run_timeout_and_the_retry_policy
);
async fn a_start_body_sets_the_run_timeout_and_the_retry_policy(net: common::Net) {
    let (_engine, server) = served(net, ServeOptions::default().token(TOKEN)).await;
    let http = net.http(&server, Some(TOKEN));
    let r = http
        .post(
            "/nap/runs",
            json!({
                "id": "nap-1",
                "input": 5,
                "run_timeout_ms": 100,
                "execution_timeout_ms": 3_600_000,
                "retry_policy": {"initial_interval_ms": 10, "maximum_attempts": 2},
            }),
        )
        .await;
    assert_eq!(r.status, 201, "{:?}", r.body);
    // Attempt 1 times out, attempt 2 (the last) too.
    let d = until(&http, "/nap/runs/nap-1", |b| {
        b["status"] == "timed_out" && b["attempt"] == 2
    })
    .await;
    assert_eq!(d["workflow_id"], "nap-1");
    let r = http.get("/nap/runs/nap-1/result").await;
    assert_eq!(r.status, 422, "{:?}", r.body);
    assert_eq!(r.body["error"], "timed_out");
    assert!(
        r.body["message"]
            .as_str()
            .unwrap_or_default()
            .contains("run timeout of 100ms"),
        "{:?}",
        r.body
    );
    let r = http.get("/nap/runs/nap-1/history").await;
    let events = r.body["events"].as_array().cloned().unwrap_or_default();
    assert_eq!(
        events.last().unwrap()["type"],
        "WorkflowTimedOut",
        "{events:?}"
    );
    let r = http.get("/nap/runs?status=timed_out").await;
    assert_eq!(r.status, 200, "{:?}", r.body);
    let listed = r.body["runs"].as_array().cloned().unwrap_or_default();
    assert_eq!(listed.len(), 2, "{listed:?}");

    let r = http
        .post(
            "/nap/runs",
            json!({"id": "nap-2", "input": 5, "run_timeout_ms": 0}),
        )
        .await;
    assert_eq!(r.status, 400, "{:?}", r.body);
    server.shutdown().await.unwrap();
}

both_ways!(
    #[tokio::test]
    the_remote_client_sends_the_limits_and_gets_timed_out
);
async fn the_remote_client_sends_the_limits_and_gets_timed_out(net: common::Net) {
    let (_engine, server) = served(net, ServeOptions::default().token(TOKEN)).await;
    let client = net.connect(&server).token(TOKEN).await.expect("connect");
    let options = StartOptions::new()
        .run_timeout(Duration::from_millis(50))
        .retry_policy(RetryPolicy {
            initial_interval: Duration::from_millis(10),
            maximum_attempts: 2,
            ..RetryPolicy::default()
        });
    let h = client
        .start_with::<Nap>("nap-remote", 5, options)
        .await
        .unwrap();
    let err = h.result().await.unwrap_err();
    assert!(
        matches!(&err, WfError::TimedOut(m) if m.contains("run timeout")),
        "{err:?}"
    );
    let d = h.describe().await.unwrap();
    assert_eq!((d.status, d.attempt), (RunStatus::TimedOut, 2));
    server.shutdown().await.unwrap();
}
