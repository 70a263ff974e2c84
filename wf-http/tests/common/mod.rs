//! Shared fixtures of the HTTP tests: the agent workflow of examples/agent_run.rs,
//! an engine serving it on 127.0.0.1:0 over plain HTTP or HTTPS ([`Net`], [`both_ways!`]),
//! and a small HTTP client.
#![allow(dead_code, unused_macros)]

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use hyper_util::rt::TokioIo;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::ServerName;
use serde_json::Value;
use std::net::SocketAddr;
use std::sync::{Arc, OnceLock};
use std::time::Duration;
use tokio::net::TcpStream;
use wf_http::testing::TestPki;
use wf_http::{ConnectExt, ServeOptions, Server};
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

/// Runs the test body `async fn NAME(net: Net)` twice, as `NAME::http` over plain HTTP and
/// as `NAME::https` over HTTPS, under the test attribute given:
/// `both_ways!(#[tokio::test] NAME);`.
macro_rules! both_ways {
    ($(#[$attr:meta])+ $name:ident) => {
        mod $name {
            $(#[$attr])+
            async fn http() {
                super::$name(super::common::Net::Http).await
            }
            $(#[$attr])+
            async fn https() {
                super::$name(super::common::Net::Https).await
            }
        }
    };
}

/// How a test reaches its server: plain HTTP, or HTTPS with the test process's throwaway CA
/// ([`pki`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Net {
    Http,
    Https,
}

/// The test process's certificates: one CA, a server certificate for 127.0.0.1 and
/// localhost, a client certificate; made once, when first asked for.
pub fn pki() -> &'static TestPki {
    static PKI: OnceLock<TestPki> = OnceLock::new();
    PKI.get_or_init(|| TestPki::generate(&["localhost", "127.0.0.1"]).expect("certificates"))
}

impl Net {
    /// `options`, with the test certificate for HTTPS.
    pub fn options(self, options: ServeOptions) -> ServeOptions {
        match self {
            Net::Http => options,
            Net::Https => options.tls(pki().server_tls()),
        }
    }

    /// Serves `api` on 127.0.0.1:0 with `options` (and the test certificate for HTTPS).
    pub async fn serve(self, api: impl Into<wf_http::Api>, options: ServeOptions) -> Server {
        wf_http::serve(api, "127.0.0.1:0", self.options(options))
            .await
            .expect("serve")
    }

    /// `http://127.0.0.1:PORT` or `https://127.0.0.1:PORT`.
    pub fn url(self, server: &Server) -> String {
        let scheme = match self {
            Net::Http => "http",
            Net::Https => "https",
        };
        format!("{scheme}://{}", server.local_addr())
    }

    /// `Client::connect` to `server`, trusting the test CA.
    pub fn connect(self, server: &Server) -> wf_http::Connecting {
        Client::connect(self.url(server)).tls(pki().client_tls())
    }

    /// A test HTTP client of `server`.
    pub fn http(self, server: &Server, token: Option<&str>) -> Http {
        Http::new(self, server.local_addr(), token)
    }
}

/// The engine served on 127.0.0.1:0 with `options`, over `net`.
pub async fn served(net: Net, options: ServeOptions) -> (Engine, Server) {
    let engine = engine().await;
    let server = net.serve(&engine, options).await;
    (engine, server)
}

/// rustls's client configuration trusting the test CA, offering `alpn`.
pub fn rustls_client(alpn: &[&[u8]]) -> rustls::ClientConfig {
    let mut roots = rustls::RootCertStore::empty();
    for cert in rustls::pki_types::CertificateDer::pem_slice_iter(pki().ca_pem.as_bytes()) {
        roots.add(cert.expect("CA PEM")).expect("CA certificate");
    }
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut config = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .expect("TLS versions")
        .with_root_certificates(roots)
        .with_no_client_auth();
    config.alpn_protocols = alpn.iter().map(|p| p.to_vec()).collect();
    config
}

/// A tiny HTTP client for the tests: one connection per request, plain or TLS.
pub struct Http {
    addr: SocketAddr,
    token: Option<String>,
    tls: Option<tokio_rustls::TlsConnector>,
}

/// A response: status, headers and body (JSON, or `Value::Null` when empty or not JSON).
#[derive(Debug)]
pub struct Reply {
    pub status: u16,
    pub headers: hyper::HeaderMap,
    pub body: Value,
    pub raw: Bytes,
}

impl Reply {
    /// The header's value ("" when absent).
    pub fn header(&self, name: &str) -> &str {
        self.headers
            .get(name)
            .and_then(|v| v.to_str().ok())
            .unwrap_or("")
    }
}

impl Http {
    pub fn new(net: Net, addr: SocketAddr, token: Option<&str>) -> Http {
        let tls = match net {
            Net::Http => None,
            Net::Https => Some(tokio_rustls::TlsConnector::from(Arc::new(rustls_client(
                &[b"http/1.1"],
            )))),
        };
        Http {
            addr,
            token: token.map(str::to_string),
            tls,
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
            .uri(path)
            .header("host", self.addr.to_string());
        if let Some(token) = &self.token {
            req = req.header("authorization", format!("Bearer {token}"));
        }
        if let Some(ct) = content_type {
            req = req.header("content-type", ct);
        }
        let req = req.body(Full::new(Bytes::from(body))).expect("request");
        let res = tokio::time::timeout(Duration::from_secs(20), self.send(req))
            .await
            .expect("the server answers within 20 s")
            .expect("HTTP request");
        let status = res.status().as_u16();
        let headers = res.headers().clone();
        let raw = res.into_body().collect().await.expect("body").to_bytes();
        let body = serde_json::from_slice(&raw).unwrap_or(Value::Null);
        Reply {
            status,
            headers,
            body,
            raw,
        }
    }

    async fn send(
        &self,
        req: hyper::Request<Full<Bytes>>,
    ) -> Result<hyper::Response<Incoming>, Box<dyn std::error::Error + Send + Sync>> {
        let tcp = TcpStream::connect(self.addr).await?;
        match &self.tls {
            None => Ok(one_request(tcp, req).await?),
            Some(tls) => {
                let name = ServerName::from(self.addr.ip());
                Ok(one_request(tls.connect(name, tcp).await?, req).await?)
            }
        }
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

/// `req` on a new HTTP/1.1 connection over `io`.
async fn one_request<S>(
    io: S,
    req: hyper::Request<Full<Bytes>>,
) -> hyper::Result<hyper::Response<Incoming>>
where
    S: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin + Send + 'static,
{
    let (mut send, conn) = hyper::client::conn::http1::handshake(TokioIo::new(io)).await?;
    tokio::spawn(conn);
    send.send_request(req).await
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
