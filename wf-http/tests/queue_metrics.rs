//! The usage of queues of workflow starts over HTTP (`GET /_workflow_queues/usage`, a read
//! route, and the remote client's `workflow_queues().usage()`), and `/metrics` after a
//! workload that must throttle: the queues' gauges (`wf_queue_waiting`, `wf_queue_running`,
//! `wf_queue_tokens`) and counters (`wf_queue_admitted_total`, `wf_queue_throttled_total`),
//! and the flow limits' counters (`wf_flow_started_total`, `wf_flow_throttled_total`). The work
//! holds until the test releases it, so every figure is exact.

#[macro_use]
mod common;

use common::Nap;
use serde_json::json;
use std::sync::atomic::Ordering;
use std::time::Duration;
use wf_http::{Role, ServeOptions};
use wf_sdk::flow::{FlowLimit, FlowScope, WorkflowQueue};
use wf_sdk::prelude::*;
use wf_testkit::held::{HeldCall as Call, Hold};

const READ: &str = "queue-read-token";

/// The value of the sample `line_start` (a metric name with its labels) in `text`.
fn sample(text: &str, line_start: &str) -> Option<f64> {
    text.lines()
        .find_map(|l| l.strip_prefix(line_start)?.strip_prefix(' ')?.parse().ok())
}

both_ways!(
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    queue_usage_and_flow_counters_reach_http_and_metrics
);
async fn queue_usage_and_flow_counters_reach_http_and_metrics(net: common::Net) {
    let (hold, release) = Hold::new();
    let engine = Engine::builder()
        .memory()
        .poll_interval(Duration::from_millis(10))
        .workflow::<Nap>()
        .workflow::<Call>()
        .activities(hold)
        .flow_limit(FlowLimit::concurrency(FlowScope::key("model"), 1))
        .workflow_queue(
            WorkflowQueue::new("naps")
                .concurrency(1)
                .rate(10, Duration::from_secs(3600)),
        )
        .build()
        .await
        .unwrap();
    let server = net
        .serve(
            &engine,
            ServeOptions::default().token_with_role(Role::Read, READ),
        )
        .await;
    let reader = net.http(&server, Some(READ));
    let client = engine.client();
    // Three naps on a queue of one: one admitted (it naps an hour), two held.
    for i in 0..3 {
        client
            .enqueue::<Nap>("naps", &format!("nap-{i}"), 1)
            .await
            .unwrap();
    }
    let r = reader.get("/_workflow_queues/usage").await;
    assert_eq!(
        (r.status, r.body),
        (
            200,
            json!([{"name": "naps", "concurrency": 1,
                "rate": {"limit": 10, "period_ms": 3_600_000},
                "configured": true, "waiting": 2, "running": 1, "tokens": 9}])
        )
    );
    let remote = net.connect(&server).token(READ).await.unwrap();
    assert_eq!(
        remote.workflow_queues().usage().await.unwrap(),
        client.workflow_queues().usage().await.unwrap()
    );

    // Three calls under a flow limit of one: two wait while the first holds its slot.
    let mut calls = Vec::new();
    for i in 0..3 {
        calls.push(client.start::<Call>(format!("call-{i}"), ()).await.unwrap());
    }
    wf_testkit::eventually("one call running, two waiting", || async {
        let usage = client.flow_limits().usage().await.unwrap();
        (usage[0].running == 1 && usage[0].waiting == 2).then_some(())
    })
    .await;
    release.store(true, Ordering::SeqCst);
    for h in calls {
        h.result().await.unwrap();
    }

    let text = String::from_utf8_lossy(&reader.get("/metrics").await.raw).into_owned();
    let naps = "{queue=\"naps\"}";
    for (name, want) in [
        ("wf_queue_waiting", 2.0),
        ("wf_queue_running", 1.0),
        ("wf_queue_tokens", 9.0),
        ("wf_queue_admitted_total", 1.0),
        ("wf_queue_throttled_total", 2.0),
    ] {
        assert_eq!(
            sample(&text, &format!("{name}{naps}")),
            Some(want),
            "{name}: {text}"
        );
    }
    assert!(
        text.contains("# TYPE wf_queue_throttled_total counter"),
        "{text}"
    );
    assert!(text.contains("# TYPE wf_queue_waiting gauge"), "{text}");
    let model = "{scope_kind=\"key\",scope=\"model\",kind=\"concurrency\"}";
    let started = sample(&text, &format!("wf_flow_started_total{model}"));
    assert_eq!(started, Some(3.0), "{text}");
    let throttled = sample(&text, &format!("wf_flow_throttled_total{model}")).unwrap_or(0.0);
    assert!(throttled >= 1.0, "two calls waited, none counted: {text}");
    server.shutdown().await.unwrap();
    engine.shutdown().await;
}
