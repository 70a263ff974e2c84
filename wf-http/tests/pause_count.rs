//! `POST /{type}/runs/{id}/pause|unpause` (admin only; the pause records the caller's token
//! role and reason, shown by describe and the list), `GET /_count`, describe of a closed run
//! (its failure), and the remote client's `pause`, `unpause` and `count`.

#[macro_use]
mod common;

use common::served;
use serde_json::{json, Value};
use wf_http::{Role, ServeOptions, Tokens};
use wf_sdk::client::ListFilter;

const WRITE: &str = "write-token-77aa";
const ADMIN: &str = "admin-token-1b2c";

fn roles() -> ServeOptions {
    ServeOptions::default()
        .tokens(Tokens::new().with(Role::Write, WRITE))
        .token(ADMIN)
}

fn start_body(id: &str) -> Value {
    json!({"id": id, "input": {"goal": "g", "step": 0}})
}

fn signals(history: &Value) -> usize {
    history["events"]
        .as_array()
        .map(|events| {
            events
                .iter()
                .filter(|e| e.to_string().contains("SignalReceived"))
                .count()
        })
        .unwrap_or(0)
}

both_ways!(
    #[tokio::test]
    pause_holds_signals_until_unpause_and_needs_admin
);
async fn pause_holds_signals_until_unpause_and_needs_admin(net: common::Net) {
    let (_engine, server) = served(net, roles()).await;
    let write = net.http(&server, Some(WRITE));
    let admin = net.http(&server, Some(ADMIN));
    assert_eq!(
        write
            .post("/agent_run/runs", start_body("p-1"))
            .await
            .status,
        201
    );

    let r = write
        .post("/agent_run/runs/p-1/pause", json!({"reason": "no"}))
        .await;
    assert_eq!(r.status, 403, "{:?}", r.body);
    let r = admin
        .post(
            "/agent_run/runs/p-1/pause",
            json!({"reason": "incident 12"}),
        )
        .await;
    assert_eq!((r.status, &r.body), (200, &json!({"status": "paused"})));

    let d = write.get("/agent_run/runs/p-1").await.body;
    assert_eq!(d["status"], "running", "{d:?}");
    assert_eq!(d["paused"]["by"], "admin", "{d:?}");
    assert_eq!(d["paused"]["reason"], "incident 12", "{d:?}");
    let page = write.get("/agent_run/runs").await.body;
    assert_eq!(page["runs"][0]["paused"], true, "{page:?}");

    let r = write
        .post(
            "/agent_run/runs/p-1/signal",
            json!({"name": "note", "args": ["x", 1]}),
        )
        .await;
    assert_eq!(r.status, 202, "{:?}", r.body);
    tokio::time::sleep(std::time::Duration::from_millis(300)).await;
    let history = write.get("/agent_run/runs/p-1/history").await.body;
    assert_eq!(signals(&history), 0, "held while paused: {history:?}");

    let r = admin.post("/agent_run/runs/p-1/unpause", json!({})).await;
    assert_eq!((r.status, &r.body), (200, &json!({"status": "unpaused"})));
    common::until(&write, "/agent_run/runs/p-1/history", |h| signals(h) == 1).await;
    let d = write.get("/agent_run/runs/p-1").await.body;
    assert_eq!(d["paused"], Value::Null, "{d:?}");

    let r = admin.post("/agent_run/runs/nobody/pause", json!({})).await;
    assert_eq!(r.status, 404, "{:?}", r.body);
    server.shutdown().await.unwrap();
}

both_ways!(
    #[tokio::test]
    count_takes_the_list_filter_and_describe_says_how_a_run_ended
);
async fn count_takes_the_list_filter_and_describe_says_how_a_run_ended(net: common::Net) {
    let (_engine, server) = served(net, roles()).await;
    let admin = net.http(&server, Some(ADMIN));
    for i in 0..4 {
        let r = admin
            .post("/agent_run/runs", start_body(&format!("c-{i}")))
            .await;
        assert_eq!(r.status, 201);
    }
    let r = admin
        .post(
            "/agent_run/runs/c-0/terminate",
            json!({"reason": "ops ended it"}),
        )
        .await;
    assert_eq!(r.status, 200);
    let count = |q: &'static str| {
        let admin = &admin;
        async move { admin.get(&format!("/_count?{q}")).await }
    };
    assert_eq!(count("").await.body, json!({"count": 4}));
    assert_eq!(
        count("type=agent_run&status=running").await.body["count"],
        3
    );
    assert_eq!(count("status=terminated").await.body["count"], 1);
    assert_eq!(count("status=completed").await.body["count"], 0);
    assert_eq!(count("status=nonsense").await.status, 400);

    let d = admin.get("/agent_run/runs/c-0").await.body;
    assert_eq!(d["status"], "terminated", "{d:?}");
    assert_eq!(d["failure"], "ops ended it", "{d:?}");

    // The remote client: the same calls through `HttpTransport`.
    let client = net.connect(&server).token(ADMIN).await.expect("connect");
    assert_eq!(client.count(ListFilter::default()).await.unwrap(), 4);
    client.pause("c-1", "remote").await.unwrap();
    let d = client.describe("c-1").await.unwrap();
    let paused = d.paused.expect("paused");
    assert_eq!(
        (paused.by.as_str(), paused.reason.as_str()),
        ("admin", "remote")
    );
    client.unpause("c-1").await.unwrap();
    assert!(client.describe("c-1").await.unwrap().paused.is_none());
    let ended = client.describe("c-0").await.unwrap();
    assert_eq!(ended.failure.as_deref(), Some("ops ended it"));
    server.shutdown().await.unwrap();
}
