//! Dynamic handlers over HTTP: `GET /{type}` says which roles have one, and a signal, query or
//! update of a name no named handler takes reaches it, its JSON arguments taken by position.

#[macro_use]
mod common;

use common::{until, Http};
use serde_json::{json, Value};
use std::time::Duration;
use wf_sdk::payload::Payload;
use wf_sdk::prelude::*;

#[derive(Default)]
pub struct Router {
    log: Vec<String>,
}

#[workflow(name = "router")]
impl Router {
    #[run]
    async fn run(ctx: &mut WorkflowContext<Self>) -> Result<(), WorkflowError> {
        ctx.wait_condition(|s| s.log.iter().any(|l| l == "finish"))
            .await;
        Ok(())
    }

    #[signal]
    fn note(&mut self, text: String) {
        self.log.push(format!("note {text}"));
    }

    #[signal(dynamic)]
    fn any_signal(&mut self, name: String, args: Payload) {
        match args.decode::<(String, u32)>() {
            Ok((text, n)) => self.log.push(format!("{name} {text} {n}")),
            Err(_) => self.log.push(name),
        }
    }

    #[query(dynamic)]
    fn any_query(&self, name: String, _args: Payload) -> Vec<String> {
        self.log
            .iter()
            .filter(|l| l.starts_with(&name))
            .cloned()
            .collect()
    }

    #[update(dynamic)]
    fn any_update(&mut self, name: String, args: Payload) -> Result<u32, UpdateError> {
        let (n,) = args
            .decode::<(u32,)>()
            .map_err(|e| UpdateError::new(e.to_string()))?;
        self.log.push(format!("{name} {n}"));
        Ok(n * 2)
    }

    #[validator(dynamic)]
    fn check(&self, name: &str, _args: &Payload) -> Result<(), Rejection> {
        match name {
            "forbidden" => Err(Rejection::new("forbidden is not allowed")),
            _ => Ok(()),
        }
    }
}

async fn setup(net: common::Net) -> (wf_sdk::engine::Engine, wf_http::Server, Http) {
    let engine = Engine::builder()
        .memory()
        .poll_interval(Duration::from_millis(20))
        .workflow::<Router>()
        .build()
        .await
        .expect("engine");
    let server = net.serve(&engine, wf_http::ServeOptions::default()).await;
    let http = net.http(&server, None);
    (engine, server, http)
}

both_ways!(
    #[tokio::test]
    metadata_lists_the_dynamic_handlers
);
async fn metadata_lists_the_dynamic_handlers(net: common::Net) {
    let (_engine, server, http) = setup(net).await;
    let r = http.get("/router").await;
    assert_eq!(r.status, 200);
    assert_eq!(
        r.body["dynamic"],
        json!({"signal": true, "query": true, "update": true, "update_validated": true})
    );
    let signals: Vec<&Value> = r.body["signals"].as_array().unwrap().iter().collect();
    assert_eq!(signals.len(), 1);
    assert_eq!(signals[0]["name"], "note");
    server.shutdown().await.unwrap();
}

both_ways!(
    #[tokio::test]
    unknown_names_reach_the_dynamic_handlers
);
async fn unknown_names_reach_the_dynamic_handlers(net: common::Net) {
    let (_engine, server, http) = setup(net).await;
    let r = http.post("/router/runs", json!({"id": "r-1"})).await;
    assert_eq!(r.status, 201, "{:?}", r.body);

    let r = http
        .post(
            "/router/runs/r-1/signal",
            json!({"name": "colour", "args": ["red", 3]}),
        )
        .await;
    assert_eq!(
        (r.status, &r.body),
        (202, &json!({"status": "delivered", "handler": true}))
    );
    // A named signal still takes its own name, arguments by name.
    let r = http
        .post(
            "/router/runs/r-1/signal",
            json!({"name": "note", "args": {"text": "hi"}}),
        )
        .await;
    assert_eq!(r.status, 202, "{:?}", r.body);

    let r = http
        .post(
            "/router/runs/r-1/update",
            json!({"name": "double", "args": [21]}),
        )
        .await;
    assert_eq!(r.status, 200, "{:?}", r.body);
    assert_eq!(r.body["value"], 42);
    let r = http
        .post(
            "/router/runs/r-1/update",
            json!({"name": "forbidden", "args": [1]}),
        )
        .await;
    assert_eq!(r.status, 422, "{:?}", r.body);
    assert_eq!(r.body["error"], "rejected", "{:?}", r.body);
    // Arguments for a dynamic handler are positional.
    let r = http
        .post(
            "/router/runs/r-1/update",
            json!({"name": "double", "args": {"n": 1}}),
        )
        .await;
    assert_eq!(r.status, 400, "{:?}", r.body);

    let body = until(&http, "/router/runs/r-1", |b| b["status"] == "running").await;
    assert_eq!(body["status"], "running");
    let r = http
        .post("/router/runs/r-1/query", json!({"name": "colour"}))
        .await;
    assert_eq!(r.status, 200, "{:?}", r.body);
    assert_eq!(r.body["value"], json!(["colour red 3"]));
    let r = http
        .post("/router/runs/r-1/query", json!({"name": "double"}))
        .await;
    assert_eq!(r.body["value"], json!(["double 21"]));
    server.shutdown().await.unwrap();
}
