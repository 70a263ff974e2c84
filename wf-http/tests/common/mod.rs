//! Shared fixtures of the HTTP tests: the agent workflow (wf-testkit's, re-exported), an
//! engine serving it on 127.0.0.1:0 over plain HTTP or HTTPS ([`Net`], [`both_ways!`]), and a
//! small HTTP client.
#![allow(dead_code, unused_macros)]

pub mod sse;

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
pub use wf_testkit::agent::*;

pub const TOKEN: &str = "test-token";

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

/// Polls `GET` on `path` until `pred` holds on the body.
pub async fn until(http: &Http, path: &str, pred: impl Fn(&Value) -> bool) -> Value {
    wf_testkit::eventually(&format!("{path} to reach the expected state"), || async {
        let body = http.get(path).await.body;
        pred(&body).then_some(body)
    })
    .await
}
