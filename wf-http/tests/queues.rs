//! Queues of workflow starts over HTTP: the start body's `queue`, `queue_priority`,
//! `dedupe_id`, `fairness_key` and `fairness_weight`, describe's `queue` and
//! `queue_position`, and the remote client sending `StartOptions::queue` and its fairness. The queue admits one run at a time and each run naps an hour: the
//! tests look at the held runs, never wait them out.

#[macro_use]
mod common;

use common::{served, Nap, TOKEN};
use serde_json::json;
use wf_http::ServeOptions;
use wf_sdk::client::StartOptions;
use wf_sdk::flow::WorkflowQueue;

both_ways!(
    #[tokio::test]
    a_queued_start_over_http_is_held_with_its_position
);
async fn a_queued_start_over_http_is_held_with_its_position(net: common::Net) {
    let (engine, server) = served(net, ServeOptions::default().token(TOKEN)).await;
    let one = WorkflowQueue::new("naps").concurrency(1);
    engine.client().workflow_queues().set(one).await.unwrap();
    let http = net.http(&server, Some(TOKEN));
    for (id, priority) in [("nap-1", 0), ("nap-2", 5), ("nap-3", 1)] {
        let body = json!({"id": id, "input": 1, "queue": "naps", "queue_priority": priority});
        let r = http.post("/nap/runs", body).await;
        assert_eq!(r.status, 201, "{:?}", r.body);
    }
    let held = wf_testkit::eventually("nap-1 admitted", || async {
        let d = http.get("/nap/runs/nap-1").await;
        d.body["queue_position"].is_null().then_some(d.body)
    })
    .await;
    assert_eq!(held["queue"], "naps", "{held:?}");
    let d = http.get("/nap/runs/nap-3").await;
    assert_eq!(
        (d.body["queue"].clone(), d.body["queue_position"].clone()),
        (json!("naps"), json!(1))
    );
    let d = http.get("/nap/runs/nap-2").await;
    assert_eq!(d.body["queue_position"], 2, "{:?}", d.body);
    // The remote client sends the queue and the dedupe id; a second start with the id is
    // refused as a conflict.
    let client = net.connect(&server).token(TOKEN).await.expect("connect");
    let options = StartOptions::new().queue("naps").dedupe_id("once");
    let h = client
        .start_with::<Nap>("nap-remote", 1, options.clone())
        .await
        .unwrap();
    // Priority 0 goes before the held runs of priority 1 and 5.
    let d = h.describe().await.unwrap();
    assert_eq!(
        (d.queue.as_deref(), d.queue_position),
        (Some("naps"), Some(1))
    );
    let d = http.get("/nap/runs/nap-2").await;
    assert_eq!(d.body["queue_position"], 3, "{:?}", d.body);
    let refused = client.start_with::<Nap>("nap-again", 1, options).await;
    assert!(
        matches!(
            refused,
            Err(wf_sdk::prelude::WfError::AlreadyStarted { .. })
        ),
        "{:?}",
        refused.map(drop)
    );
    server.shutdown().await.unwrap();
}

both_ways!(
    #[tokio::test]
    fairness_keys_over_http_order_the_held_runs
);
async fn fairness_keys_over_http_order_the_held_runs(net: common::Net) {
    let (engine, server) = served(net, ServeOptions::default().token(TOKEN)).await;
    let one = WorkflowQueue::new("naps").concurrency(1);
    engine.client().workflow_queues().set(one).await.unwrap();
    let http = net.http(&server, Some(TOKEN));
    let start = |id: &str, key: &str| json!({"id": id, "input": 1, "queue": "naps", "fairness_key": key, "fairness_weight": 1.0});
    let r = http
        .post(
            "/nap/runs",
            json!({"id": "first", "input": 1, "queue": "naps"}),
        )
        .await;
    assert_eq!(r.status, 201, "{:?}", r.body);
    wf_testkit::eventually("the first run admitted", || async {
        let d = http.get("/nap/runs/first").await;
        d.body["queue_position"].is_null().then_some(())
    })
    .await;
    for id in ["big-0", "big-1", "big-2"] {
        let r = http.post("/nap/runs", start(id, "big")).await;
        assert_eq!(r.status, 201, "{:?}", r.body);
    }
    let r = http.post("/nap/runs", start("small-0", "small")).await;
    assert_eq!(r.status, 201, "{:?}", r.body);
    // The keys take turns: small-0 goes second, not behind the backlog of big.
    let d = http.get("/nap/runs/small-0").await;
    assert_eq!(d.body["queue_position"], 2, "{:?}", d.body);
    let client = net.connect(&server).token(TOKEN).await.expect("connect");
    let options = StartOptions::new()
        .queue("naps")
        .fairness_key("small")
        .fairness_weight(1.0);
    let h = client
        .start_with::<Nap>("small-1", 1, options)
        .await
        .unwrap();
    let d = h.describe().await.unwrap();
    assert_eq!(
        d.queue_position,
        Some(4),
        "big-0, small-0, big-1, then small-1"
    );
    // The list shows each run's queue and a held run's position, over HTTP and the client.
    let listed = http.get("/nap/runs").await;
    let runs = listed.body["runs"]
        .as_array()
        .expect("a list of runs")
        .clone();
    let of = |id: &str| {
        runs.iter()
            .find(|r| r["workflow_id"] == id)
            .cloned()
            .unwrap()
    };
    assert_eq!(of("small-1")["queue"], "naps", "{runs:?}");
    assert_eq!(of("small-1")["queue_position"], 4, "{runs:?}");
    assert!(of("first")["queue_position"].is_null(), "{runs:?}");
    let listed = client
        .list(wf_sdk::client::ListFilter::default())
        .await
        .unwrap();
    let big1 = listed.iter().find(|r| r.workflow_id == "big-1").unwrap();
    assert_eq!(
        (big1.queue.as_deref(), big1.queue_position),
        (Some("naps"), Some(3))
    );
    let zero = json!({"id": "z", "input": 1, "queue": "naps", "fairness_weight": 0.0});
    let r = http.post("/nap/runs", zero).await;
    assert_eq!(r.status, 400, "{:?}", r.body);
    let unqueued = StartOptions::new().fairness_key("small");
    let refused = client.start_with::<Nap>("nowhere", 1, unqueued).await;
    assert!(
        matches!(refused, Err(wf_sdk::prelude::WfError::InvalidArgument(_))),
        "{:?}",
        refused.map(drop)
    );
    server.shutdown().await.unwrap();
}

both_ways!(
    #[tokio::test]
    an_operator_sets_a_queue_over_http
);
async fn an_operator_sets_a_queue_over_http(net: common::Net) {
    let (engine, server) = served(net, ServeOptions::default().token(TOKEN)).await;
    let http = net.http(&server, Some(TOKEN));
    let body = json!({"name": "a/b", "concurrency": 2, "rate": {"limit": 5, "period_ms": 1000}});
    let r = http.post("/_workflow_queues", body.clone()).await;
    assert_eq!(r.status, 200, "{:?}", r.body);
    assert_eq!(r.body, body);
    let listed = engine.client().workflow_queues().list().await.unwrap();
    let want = WorkflowQueue::new("a/b")
        .concurrency(2)
        .rate(5, std::time::Duration::from_secs(1));
    assert_eq!(listed, std::slice::from_ref(&want));
    let r = http.get("/_workflow_queues").await;
    assert_eq!(r.body, json!([body]));
    let bad = http
        .post("/_workflow_queues", json!({"name": "q", "concurrency": 0}))
        .await;
    assert_eq!(bad.status, 400, "{:?}", bad.body);
    // The remote client calls the same routes.
    let client = net.connect(&server).token(TOKEN).await.expect("connect");
    let queues = client.workflow_queues();
    assert_eq!(queues.list().await.unwrap(), [want]);
    assert!(queues.remove("a/b").await.unwrap());
    assert!(!queues.remove("a/b").await.unwrap());
    let r = http
        .raw("DELETE", "/_workflow_queues/nothing", None, Vec::new())
        .await;
    assert_eq!(r.body, json!({"removed": false}));
    server.shutdown().await.unwrap();
}
