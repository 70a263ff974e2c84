//! [`serve`]: the router alone on a socket, with bearer tokens by role (required off
//! loopback), a request body limit, a per-request timeout and optionally TLS (`server::tls`);
//! [`Server`] stops it gracefully.

use super::auth::{Gate, Role, Tokens};
use super::body::Failure;
use super::tls::{self, TlsConfig};
use super::{router, routes, Api};
use axum::extract::{DefaultBodyLimit, MatchedPath, Request};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::serve::ListenerExt;
use axum::Router;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::oneshot;
use wf_core::{WfError, MAX_PAYLOAD_BYTES};

/// Room in a request body for what surrounds its payloads (ids, names, JSON punctuation).
const ENVELOPE_BYTES: usize = 64 * 1024;

/// How [`serve`] guards the service.
///
/// ```
/// use wf_http::{Role, ServeOptions, Tokens};
/// let options = ServeOptions::default()
///     .token_with_role(Role::Read, "grafana-7c2e")
///     .tokens(Tokens::new().with(Role::Write, "billing-svc-d41a"))
///     .token("ops-91ad") // one admin token
///     .ready_timeout(std::time::Duration::from_secs(1));
/// # let _ = options;
/// ```
#[derive(Clone)]
pub struct ServeOptions {
    /// One bearer token with the [`Role::Admin`] role (what `--token T` gives), beside
    /// [`tokens`](Self::tokens). Every request but `GET /healthz`, `GET /readyz` and the web
    /// view's static files must carry a token (`Authorization: Bearer <token>`) as soon as
    /// one is set; some token is required when the address is not loopback.
    pub token: Option<String>,
    /// Tokens with their roles (what `--tokens FILE` gives: [`Tokens::from_file`]). A
    /// route's role is in [`Role`]'s table: a token below it gets 403 `forbidden`, an unknown
    /// token 401 `unauthorized`.
    pub tokens: Tokens,
    /// How long `GET /readyz` waits for the store before it answers 503 (default 2 s).
    pub ready_timeout: Duration,
    /// Largest request body in bytes (default: the engine's payload limit, 2 MiB, plus 64 KiB
    /// for what surrounds it); larger bodies get 413.
    pub body_limit: usize,
    /// How long one request may take before it gets 504 (default 60 s). Long polls wait at
    /// most 50 s, so keep this above that.
    pub request_timeout: Duration,
    /// Serve on a non-loopback address without a token (default `false`: refused).
    pub allow_no_token: bool,
    /// HTTPS with this certificate (and optionally client certificates required: mTLS);
    /// `None` (the default) serves plain HTTP/1.1.
    pub tls: Option<TlsConfig>,
}

impl Default for ServeOptions {
    fn default() -> Self {
        ServeOptions {
            token: None,
            tokens: Tokens::new(),
            ready_timeout: super::health::DEFAULT_READY_TIMEOUT,
            body_limit: MAX_PAYLOAD_BYTES + ENVELOPE_BYTES,
            request_timeout: Duration::from_secs(60),
            allow_no_token: false,
            tls: None,
        }
    }
}

impl std::fmt::Debug for ServeOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Never the tokens themselves.
        f.debug_struct("ServeOptions")
            .field("token", &self.token.as_ref().map(|_| "<set>"))
            .field("tokens", &self.tokens)
            .field("ready_timeout", &self.ready_timeout)
            .field("body_limit", &self.body_limit)
            .field("request_timeout", &self.request_timeout)
            .field("allow_no_token", &self.allow_no_token)
            .field("tls", &self.tls)
            .finish_non_exhaustive()
    }
}

impl ServeOptions {
    /// Options with this bearer token, of the [`Role::Admin`] role.
    pub fn token(mut self, token: impl Into<String>) -> Self {
        self.token = Some(token.into());
        self
    }

    /// Options serving HTTPS with `tls` (HTTP/2 or HTTP/1.1, as the client's ALPN asks).
    pub fn tls(mut self, tls: TlsConfig) -> Self {
        self.tls = Some(tls);
        self
    }

    /// Options with these tokens too (added to those set before).
    pub fn tokens(mut self, tokens: Tokens) -> Self {
        for (role, token) in tokens.into_entries() {
            self.tokens.insert(role, token);
        }
        self
    }

    /// Options with `token` too, of role `role`.
    pub fn token_with_role(mut self, role: Role, token: impl Into<String>) -> Self {
        self.tokens.insert(role, token);
        self
    }

    /// Options whose `GET /readyz` waits `deadline` for the store.
    pub fn ready_timeout(mut self, deadline: Duration) -> Self {
        self.ready_timeout = deadline;
        self
    }

    /// Every token: [`tokens`](Self::tokens) and [`token`](Self::token) as admin.
    fn all_tokens(&self) -> Tokens {
        let mut tokens = self.tokens.clone();
        if let Some(token) = &self.token {
            tokens.insert(Role::Admin, token.clone());
        }
        tokens
    }
}

/// A running server: its address, and a graceful stop.
#[derive(Debug)]
pub struct Server {
    addr: SocketAddr,
    stop: Option<oneshot::Sender<()>>,
    task: tokio::task::JoinHandle<std::io::Result<()>>,
}

impl Server {
    /// The address it listens on (with the port the system picked for port 0).
    pub fn local_addr(&self) -> SocketAddr {
        self.addr
    }

    /// Stops accepting connections, lets the requests in flight finish, and returns once it
    /// has stopped.
    pub async fn shutdown(mut self) -> Result<(), WfError> {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        match (&mut self.task).await {
            Ok(Ok(())) => Ok(()),
            Ok(Err(e)) => Err(WfError::Interrupted(format!("the HTTP server failed: {e}"))),
            Err(e) => Err(WfError::Interrupted(format!(
                "the HTTP server task failed: {e}"
            ))),
        }
    }
}

/// Serves `api` (e.g. `&engine`) on `addr` until [`Server::shutdown`], each route behind the
/// role the route table gives it (see [`Role`]), over HTTPS when [`ServeOptions::tls`] is set.
/// Fails with `InvalidConfig` on a non-loopback address without a token (unless
/// [`ServeOptions::allow_no_token`]), `Startup` if the address cannot be bound. Plain HTTP off
/// loopback logs a warning: the tokens and the data travel in clear text.
///
/// ```no_run
/// # async fn demo(engine: wf_core::Engine) -> Result<(), wf_core::WfError> {
/// let options = wf_http::ServeOptions::default().token("s3cret");
/// let server = wf_http::serve(&engine, "127.0.0.1:8233", options).await?;
/// println!("listening on {}", server.local_addr());
/// server.shutdown().await?;
/// # Ok(()) }
/// ```
pub async fn serve(
    api: impl Into<Api>,
    addr: impl tokio::net::ToSocketAddrs,
    options: ServeOptions,
) -> Result<Server, WfError> {
    let listener = tokio::net::TcpListener::bind(addr)
        .await
        .map_err(|e| WfError::Startup(format!("could not bind the HTTP address: {e}")))?;
    let addr = listener
        .local_addr()
        .map_err(|e| WfError::Startup(format!("the HTTP socket has no address: {e}")))?;
    let tokens = options.all_tokens();
    if tokens.is_empty() && !addr.ip().is_loopback() && !options.allow_no_token {
        return Err(WfError::InvalidConfig(format!(
            "serving on {addr}, which is not loopback, needs a token (ServeOptions::token or \
             ServeOptions::tokens)"
        )));
    }
    if options.tls.is_none() && !addr.ip().is_loopback() {
        tracing::warn!(
            %addr,
            "serving plain HTTP on {addr}, which is not loopback: the bearer tokens and the \
             data travel in clear text; serve HTTPS (ServeOptions::tls, --tls-cert/--tls-key) or put \
             TLS in front"
        );
    }
    let guard = Guard {
        gate: Arc::new(Gate::new(tokens)),
        timeout: options.request_timeout,
    };
    let api: Api = api.into();
    let app = guard
        .around(router(api.ready_timeout(options.ready_timeout)))
        .layer(DefaultBodyLimit::max(options.body_limit));
    let (stop, stopped) = oneshot::channel::<()>();
    let task = match options.tls {
        Some(config) => tokio::spawn(tls::serve(listener, app, config, stopped)),
        None => {
            // Answers are small and written at once: no Nagle delay on them.
            let listener = listener.tap_io(|tcp| {
                if let Err(e) = tcp.set_nodelay(true) {
                    tracing::debug!(error = %e, "TCP_NODELAY on an accepted connection");
                }
            });
            tokio::spawn(async move {
                axum::serve(listener, app)
                    .with_graceful_shutdown(async {
                        let _ = stopped.await;
                    })
                    .await
            })
        }
    };
    Ok(Server {
        addr,
        stop: Some(stop),
        task,
    })
}

/// The token check and the per-request timeout.
#[derive(Clone)]
struct Guard {
    gate: Arc<Gate>,
    timeout: Duration,
}

impl Guard {
    /// `app` with this guard on each of its routes and its fallback.
    fn around(self, app: Router) -> Router {
        app.layer(middleware::from_fn(move |req: Request, next: Next| {
            let guard = self.clone();
            async move { guard.run(req, next).await }
        }))
    }

    async fn run(&self, mut req: Request, next: Next) -> Response {
        // A layer on the router runs once axum has matched the route (none: the fallback).
        let matched = req.extensions().get::<MatchedPath>().cloned();
        let matched = matched.as_ref().map(MatchedPath::as_str);
        let access = routes::access(req.method(), matched);
        if let Err(refused) = self.gate.check(&mut req, matched, access) {
            return refused.into_response();
        }
        match tokio::time::timeout(self.timeout, next.run(req)).await {
            Ok(response) => response,
            Err(_) => Failure::from(WfError::Timeout(format!(
                "the request took longer than this server's {:?} limit",
                self.timeout
            )))
            .into_response(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::body::Body;
    use axum::routing::get;
    use tower::ServiceExt;

    async fn status(app: &Router, path: &str, token: Option<&str>) -> u16 {
        let mut req = Request::get(path);
        if let Some(t) = token {
            req = req.header("authorization", format!("Bearer {t}"));
        }
        let req = req.body(Body::empty()).expect("a request");
        let res = app.clone().oneshot(req).await.expect("infallible");
        res.status().as_u16()
    }

    /// A route that reached the router without a row in the table is refused to every
    /// token, and without tokens too.
    #[tokio::test]
    async fn a_route_missing_from_the_table_is_refused() {
        let engine = wf_core::Engine::builder()
            .memory()
            .build()
            .await
            .expect("engine");
        for tokens in [Tokens::new().with(Role::Admin, "a"), Tokens::new()] {
            let guard = Guard {
                gate: Arc::new(Gate::new(tokens)),
                timeout: Duration::from_secs(5),
            };
            let app = router(&engine).route("/extra", get(|| async { "served" }));
            let app = guard.around(app);
            assert_eq!(status(&app, "/extra", Some("a")).await, 403);
            assert_eq!(status(&app, "/_whoami", Some("a")).await, 200);
            assert_eq!(status(&app, "/healthz", None).await, 200);
        }
        engine.shutdown().await;
    }
}
