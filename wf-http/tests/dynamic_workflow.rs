//! Over HTTP: a type only a dynamic workflow type runs is started with `POST /{type}/runs`,
//! messaged through its handlers, and an update admitted (`"wait": "admitted"`) is awaited by
//! its id later, by the route and by the remote client.

#[macro_use]
mod common;

use common::Http;
use serde_json::json;
use std::time::Duration;
use wf_sdk::prelude::*;
use wf_sdk::{client::UpdateStage, payload::Payload};

#[derive(Default)]
pub struct Anything {
    kind: String,
    lines: Vec<String>,
    done: bool,
}

#[workflow(dynamic)]
impl Anything {
    #[init]
    fn new(name: &str, _input: &Payload) -> Self {
        Anything {
            kind: name.to_string(),
            ..Default::default()
        }
    }

    #[run]
    async fn run(
        ctx: &mut WorkflowContext<Self>,
        name: String,
        input: Payload,
    ) -> Result<String, WorkflowError> {
        if name == "invoice" {
            let (total,): (u32,) = input.decode()?;
            return Ok(format!("invoice: {}", total * 2));
        }
        ctx.wait_condition(|s| s.done).await;
        Ok(ctx.state(|s| format!("{}: {}", s.kind, s.lines.join(", "))))
    }

    #[signal]
    fn finish(&mut self) {
        self.done = true;
    }

    #[update]
    fn add(&mut self, line: String) -> Result<usize, UpdateError> {
        self.lines.push(line);
        Ok(self.lines.len())
    }

    #[validator(add)]
    fn check_add(&self, line: &String) -> Result<(), Rejection> {
        if line.is_empty() {
            return Err(Rejection::new("an empty line adds nothing"));
        }
        Ok(())
    }

    #[signal(dynamic)]
    fn any_signal(&mut self, name: String, _args: Payload) {
        self.lines.push(name);
    }

    #[query(dynamic)]
    fn any_query(&self, name: String, _args: Payload) -> String {
        format!("{name} of {}", self.kind)
    }
}

async fn setup(net: common::Net) -> (Engine, wf_http::Server, Http) {
    let engine = Engine::builder()
        .memory()
        .poll_interval(Duration::from_millis(20))
        .workflow::<Anything>()
        .build()
        .await
        .expect("engine");
    let server = net.serve(&engine, wf_http::ServeOptions::default()).await;
    let http = net.http(&server, None);
    (engine, server, http)
}

both_ways!(
    #[tokio::test]
    a_type_only_the_dynamic_workflow_runs_is_served
);
async fn a_type_only_the_dynamic_workflow_runs_is_served(net: common::Net) {
    let (_engine, server, http) = setup(net).await;
    let r = http
        .post("/invoice/runs", json!({"id": "inv-1", "input": [21]}))
        .await;
    assert_eq!(r.status, 201, "{:?}", r.body);
    let r = http.get("/invoice/runs/inv-1/result?wait_ms=5000").await;
    assert_eq!((r.status, &r.body["value"]), (200, &json!("invoice: 42")));
    let r = http.get("/invoice/runs/inv-1").await;
    assert_eq!(r.body["workflow_type"], "invoice", "{:?}", r.body);

    let r = http.post("/chat/runs", json!({"id": "chat-1"})).await;
    assert_eq!(r.status, 201, "{:?}", r.body);
    let r = http
        .post("/chat/runs/chat-1/signal", json!({"name": "hello"}))
        .await;
    assert_eq!(
        (r.status, &r.body),
        (202, &json!({"status": "delivered", "handler": true}))
    );
    let r = http
        .post("/chat/runs/chat-1/query", json!({"name": "who"}))
        .await;
    assert_eq!(r.body["value"], "who of chat", "{:?}", r.body);
    let r = http
        .post("/chat/runs/chat-1/signal", json!({"name": "finish"}))
        .await;
    assert_eq!(r.status, 202, "{:?}", r.body);
    let r = http.get("/chat/runs/chat-1/result?wait_ms=5000").await;
    assert_eq!(r.body["value"], "chat: hello", "{:?}", r.body);
    server.shutdown().await.unwrap();
}

both_ways!(
    #[tokio::test]
    an_update_admitted_over_http_is_awaited_by_its_id
);
async fn an_update_admitted_over_http_is_awaited_by_its_id(net: common::Net) {
    let (_engine, server, http) = setup(net).await;
    let r = http.post("/chat/runs", json!({"id": "chat-2"})).await;
    assert_eq!(r.status, 201, "{:?}", r.body);
    let admit = |update_id: &str, line: &str| json!({"name": "add", "args": [line], "update_id": update_id, "wait": "admitted"});
    let r = http
        .post("/chat/runs/chat-2/update", admit("u-1", "one"))
        .await;
    assert_eq!(r.status, 200, "{:?}", r.body);
    assert_eq!(r.body["update_id"], "u-1");
    assert!(r.body["value"].is_null(), "{:?}", r.body);
    let r = http
        .get("/chat/runs/chat-2/updates/u-1?wait=completed&wait_ms=5000")
        .await;
    assert_eq!(
        (r.status, &r.body["value"]),
        (200, &json!(1)),
        "{:?}",
        r.body
    );
    // Admitted, then rejected by the validator: the wait for acceptance gets the rejection.
    let r = http
        .post("/chat/runs/chat-2/update", admit("u-2", ""))
        .await;
    assert_eq!(r.status, 200, "{:?}", r.body);
    let r = http
        .get("/chat/runs/chat-2/updates/u-2?wait=accepted&wait_ms=5000")
        .await;
    assert_eq!(
        (r.status, &r.body["error"]),
        (422, &json!("rejected")),
        "{:?}",
        r.body
    );
    // An update id nobody sent is not found, and the answer names it.
    let r = http
        .get("/chat/runs/chat-2/updates/never-sent?wait=completed&wait_ms=100")
        .await;
    assert_eq!(r.status, 404, "{:?}", r.body);
    assert_eq!(r.body["update_id"], "never-sent", "{:?}", r.body);
    assert!(
        r.body["message"].as_str().unwrap().contains("never-sent"),
        "{:?}",
        r.body
    );
    let r = http
        .post(
            "/chat/runs/chat-2/update",
            json!({"name": "add", "args": ["x"], "wait": "soon"}),
        )
        .await;
    assert_eq!(r.status, 400, "{:?}", r.body);
    server.shutdown().await.unwrap();
}

both_ways!(
    #[tokio::test]
    the_remote_client_admits_updates_and_starts_untyped_runs
);
async fn the_remote_client_admits_updates_and_starts_untyped_runs(net: common::Net) {
    let (_engine, server, _http) = setup(net).await;
    let client = net.connect(&server).await.expect("connect");
    client.start_untyped("chat", "chat-3", &()).await.unwrap();
    let h = client.handle::<Anything>("chat-3");
    let admitted = h.add("one".into()).update_id("r-1").admit().await.unwrap();
    admitted.accepted().await.unwrap();
    assert_eq!(admitted.result().await.unwrap(), 1);
    let rejected = h.add(String::new()).admit().await.unwrap();
    match rejected.result().await {
        Err(WfError::Rejected(msg)) => assert!(msg.contains("empty line"), "{msg}"),
        other => panic!("expected Rejected, got {other:?}"),
    }
    let (id, _) = client
        .update_raw(
            "chat-3",
            "add",
            Payload::encode(&("two",)).unwrap(),
            Some("r-2".into()),
            UpdateStage::Admitted,
        )
        .await
        .unwrap();
    assert_eq!(h.update_handle::<usize>(&id).result().await.unwrap(), 2);
    match h.update_handle::<usize>("never-sent").result().await {
        Err(WfError::NotFound { update_id, .. }) => {
            assert_eq!(update_id.as_deref(), Some("never-sent"))
        }
        other => panic!("expected NotFound, got {other:?}"),
    }
    h.finish().await.unwrap();
    assert_eq!(h.result().await.unwrap(), "chat: one, two");
    server.shutdown().await.unwrap();
}
