//! [`serve`]: the router alone on a socket, with a bearer token (required off loopback), a
//! request body limit, a per-request timeout and optionally TLS (`server::tls`); [`Server`]
//! stops it gracefully.

use super::body::Failure;
use super::tls::{self, TlsConfig};
use super::{router, Api};
use crate::errors::ErrorBody;
use axum::extract::{DefaultBodyLimit, Request};
use axum::http::header;
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::serve::ListenerExt;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::oneshot;
use wf_core::{WfError, MAX_PAYLOAD_BYTES};

/// Room in a request body for what surrounds its payloads (ids, names, JSON punctuation).
const ENVELOPE_BYTES: usize = 64 * 1024;

/// How [`serve`] guards the service.
#[derive(Debug, Clone)]
pub struct ServeOptions {
    /// The bearer token every request but `GET /healthz` and the web view's static files
    /// must carry (`Authorization: Bearer <token>`). Required when the address is not loopback.
    pub token: Option<String>,
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
            body_limit: MAX_PAYLOAD_BYTES + ENVELOPE_BYTES,
            request_timeout: Duration::from_secs(60),
            allow_no_token: false,
            tls: None,
        }
    }
}

impl ServeOptions {
    /// Options with this bearer token.
    pub fn token(mut self, token: impl Into<String>) -> Self {
        self.token = Some(token.into());
        self
    }

    /// Options serving HTTPS with `tls` (HTTP/2 or HTTP/1.1, as the client's ALPN asks).
    pub fn tls(mut self, tls: TlsConfig) -> Self {
        self.tls = Some(tls);
        self
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

/// Serves `api` (e.g. `&engine`) on `addr` until [`Server::shutdown`], over HTTPS when
/// [`ServeOptions::tls`] is set. Fails with `InvalidConfig` on a non-loopback address without
/// a token, `Startup` if the address cannot be bound. Plain HTTP off loopback logs a warning:
/// the token and the data travel in clear text.
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
    let token = options.token.clone().filter(|t| !t.is_empty());
    if token.is_none() && !addr.ip().is_loopback() && !options.allow_no_token {
        return Err(WfError::InvalidConfig(format!(
            "serving on {addr}, which is not loopback, needs a token (ServeOptions::token)"
        )));
    }
    if options.tls.is_none() && !addr.ip().is_loopback() {
        tracing::warn!(
            %addr,
            "serving plain HTTP on {addr}, which is not loopback: the bearer token and the data \
             travel in clear text; serve HTTPS (ServeOptions::tls, --tls-cert/--tls-key) or put \
             TLS in front"
        );
    }
    let guard = Guard {
        token: token.map(Arc::from),
        timeout: options.request_timeout,
    };
    let app = router(api)
        .layer(middleware::from_fn(move |req: Request, next: Next| {
            let guard = guard.clone();
            async move { guard.run(req, next).await }
        }))
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
    token: Option<Arc<str>>,
    timeout: Duration,
}

impl Guard {
    async fn run(&self, req: Request, next: Next) -> Response {
        if let Some(token) = &self.token {
            let path = req.uri().path();
            let public = path == "/healthz"
                || (req.method() == axum::http::Method::GET && super::ui::is_public_asset(path));
            if !public && !authorized(&req, token) {
                return Failure::new(
                    401,
                    ErrorBody::new(
                        "unauthorized",
                        "missing or wrong token: send Authorization: Bearer <token>",
                    ),
                )
                .into_response();
            }
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

fn authorized(req: &Request, token: &str) -> bool {
    let Some(given) = req
        .headers()
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "))
    else {
        return false;
    };
    // Compare in time independent of where the first difference is.
    let (a, b) = (given.as_bytes(), token.as_bytes());
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}
