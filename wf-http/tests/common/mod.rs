//! Shared fixtures of the HTTP tests: the agent workflow of examples/agent_run.rs,
//! an engine serving it on 127.0.0.1:0, and a small HTTP client.
#![allow(dead_code)]

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper_util::client::legacy::{connect::HttpConnector, Client};
use hyper_util::rt::TokioExecutor;
use serde_json::Value;
use std::net::SocketAddr;
use std::time::Duration;
use wf_sdk::prelude::*;
use wf_sdk::sync::Mutex;

pub const TOKEN: &str = "test-token";

#[derive(Serialize, Deserialize, Clone, Debug)]
pub struct AgentInput {
    pub goal: String,
    pub step: u32,
}

#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
pub struct Status {
    pub goal: String,
    pub step: u32,
    pub paused: bool,
    pub notes: Vec<String>,
}

#[derive(Default)]
pub struct AgentRun {
    goal: String,
    step: u32,
    paused: bool,
    cancelled: bool,
    notes: Vec<String>,
    lock: Mutex,
}

#[workflow(name = "agent_run")]
impl AgentRun {
    #[init]
    fn new(input: &AgentInput) -> Self {
        AgentRun {
            goal: input.goal.clone(),
            step: input.step,
            ..Default::default()
        }
    }

    #[run]
    async fn run(
        ctx: &mut WorkflowContext<Self>,
        input: AgentInput,
    ) -> Result<String, WorkflowError> {
        let _ = input;
        loop {
            ctx.wait_condition(|s| !s.paused || s.cancelled).await;
            if ctx.state(|s| s.cancelled) {
                break;
            }
            let (goal, step) = ctx.state(|s| (s.goal.clone(), s.step));
            let note = ctx.activity(Tools::next_step, (goal, step + 1)).await?;
            ctx.state_mut(|s| {
                s.step += 1;
                s.notes.push(note);
            });
            // Slow the loop down so that the tests can catch it between steps.
            ctx.sleep(Duration::from_millis(20)).await?;
        }
        ctx.handlers_drained().await;
        Ok(ctx.state(|s| format!("stopped at step {} working on {:?}", s.step, s.goal)))
    }

    #[signal]
    fn pause(&mut self) {
        self.paused = true;
    }

    #[signal]
    fn resume(&mut self) {
        self.paused = false;
    }

    #[signal(name = "cancel")]
    fn stop(&mut self) {
        self.cancelled = true;
    }

    /// Two parameters: for keyword and positional arguments.
    #[signal]
    fn note(&mut self, text: String, times: u32) {
        for _ in 0..times {
            self.notes.push(text.clone());
        }
    }

    #[query]
    fn status(&self) -> Status {
        Status {
            goal: self.goal.clone(),
            step: self.step,
            paused: self.paused,
            notes: self.notes.clone(),
        }
    }

    #[query]
    fn notes_with(&self, prefix: String) -> Vec<String> {
        self.notes
            .iter()
            .filter(|n| n.starts_with(&prefix))
            .cloned()
            .collect()
    }

    #[update]
    async fn change_goal(
        ctx: &mut WorkflowContext<Self>,
        goal: String,
    ) -> Result<String, UpdateError> {
        let lock = ctx.state(|s| s.lock.clone());
        let _held = lock.lock().await;
        let plan = ctx.activity(Tools::plan, goal.clone()).await?;
        Ok(ctx.state_mut(|s| {
            s.notes.push(plan);
            std::mem::replace(&mut s.goal, goal)
        }))
    }

    #[validator(change_goal)]
    fn validate_goal(&self, goal: &String) -> Result<(), Rejection> {
        if goal.trim().is_empty() {
            return Err(Rejection::new("the goal must not be empty"));
        }
        Ok(())
    }

    /// Fails when asked to: the handler's error is the caller's `UpdateFailed`.
    #[update]
    fn set_step(&mut self, step: u32) -> Result<u32, UpdateError> {
        if step > 1000 {
            return Err(UpdateError::new("too many steps"));
        }
        Ok(std::mem::replace(&mut self.step, step))
    }

    /// Waits until the run is paused: a slow update, for timeouts.
    #[update]
    async fn when_paused(ctx: &mut WorkflowContext<Self>) -> Result<u32, UpdateError> {
        ctx.wait_condition(|s| s.paused).await;
        Ok(ctx.state(|s| s.step))
    }
}

#[derive(Default)]
pub struct Tools;

#[activities]
impl Tools {
    #[activity]
    pub async fn next_step(
        &self,
        _ctx: ActivityContext,
        goal: String,
        step: u32,
    ) -> Result<String, ActivityError> {
        Ok(format!("step {step} towards {goal:?}"))
    }

    #[activity]
    pub async fn plan(&self, _ctx: ActivityContext, goal: String) -> Result<String, ActivityError> {
        tokio::time::sleep(Duration::from_millis(20)).await;
        Ok(format!("planned {goal:?}"))
    }
}

/// Sleeps for `hours`: once its timer is started, a run surely waiting on it. Tests that
/// cancel a run use it, because the engine's cancellation cancels the activities and timers
/// pending when the request is applied: the agent, which never checks
/// `ctx.cancel_requested()`, runs on when the request lands in the same workflow task as the
/// firing of its timer or the completion of its activity.
#[derive(Default)]
pub struct Nap;

#[workflow(name = "nap")]
impl Nap {
    #[run]
    async fn run(ctx: &mut WorkflowContext<Self>, hours: u32) -> Result<(), WorkflowError> {
        ctx.sleep(Duration::from_secs(3600 * u64::from(hours)))
            .await?;
        Ok(())
    }
}

/// An in-memory engine running the agent and the nap.
pub async fn engine() -> Engine {
    agent_engine(Engine::builder().memory()).await
}

/// The engine `builder` makes (its store chosen) running the agent and the nap.
pub async fn agent_engine(builder: wf_sdk::EngineBuilder) -> Engine {
    builder
        .poll_interval(Duration::from_millis(20))
        .workflow::<AgentRun>()
        .workflow::<Nap>()
        .activities(Tools)
        .build()
        .await
        .expect("engine")
}

/// The engine served on 127.0.0.1:0 with `options`.
pub async fn served(options: wf_http::ServeOptions) -> (Engine, wf_http::Server) {
    let engine = engine().await;
    let server = wf_http::serve(&engine, "127.0.0.1:0", options)
        .await
        .expect("serve");
    (engine, server)
}

/// A tiny HTTP client for the tests.
pub struct Http {
    base: String,
    token: Option<String>,
    client: Client<HttpConnector, Full<Bytes>>,
}

/// A response: status and body (JSON, or `Value::Null` when empty or not JSON).
#[derive(Debug)]
pub struct Reply {
    pub status: u16,
    pub body: Value,
    pub raw: Bytes,
}

impl Http {
    pub fn new(addr: SocketAddr, token: Option<&str>) -> Http {
        Http {
            base: format!("http://{addr}"),
            token: token.map(str::to_string),
            client: Client::builder(TokioExecutor::new()).build_http(),
        }
    }

    pub async fn raw(
        &self,
        method: &str,
        path: &str,
        content_type: Option<&str>,
        body: Vec<u8>,
    ) -> Reply {
        let mut req = hyper::Request::builder()
            .method(method)
            .uri(format!("{}{path}", self.base));
        if let Some(token) = &self.token {
            req = req.header("authorization", format!("Bearer {token}"));
        }
        if let Some(ct) = content_type {
            req = req.header("content-type", ct);
        }
        let req = req.body(Full::new(Bytes::from(body))).expect("request");
        let res = tokio::time::timeout(Duration::from_secs(20), self.client.request(req))
            .await
            .expect("the server answers within 20 s")
            .expect("HTTP request");
        let status = res.status().as_u16();
        let raw = res.into_body().collect().await.expect("body").to_bytes();
        let body = serde_json::from_slice(&raw).unwrap_or(Value::Null);
        Reply { status, body, raw }
    }

    pub async fn get(&self, path: &str) -> Reply {
        self.raw("GET", path, None, Vec::new()).await
    }

    pub async fn post(&self, path: &str, body: Value) -> Reply {
        self.raw(
            "POST",
            path,
            Some("application/json"),
            serde_json::to_vec(&body).unwrap(),
        )
        .await
    }
}

/// Polls `GET` on `path` until `pred` holds on the body (at most 10 s).
pub async fn until(http: &Http, path: &str, pred: impl Fn(&Value) -> bool) -> Value {
    for _ in 0..500 {
        let r = http.get(path).await;
        if pred(&r.body) {
            return r.body;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    panic!("{path} never reached the expected state");
}
