//! `Client::connect("https://host:port").token("T").ca_file("ca.pem").await`.

use super::tls::ClientTls;
use super::transport::HttpTransport;
use std::future::{Future, IntoFuture};
use std::path::PathBuf;
use std::pin::Pin;
use std::sync::Arc;
use wf_core::{Client, WfError};

/// Adds [`connect`](ConnectExt::connect) to [`Client`]: a client of a wf-http server whose
/// typed handles work as in-process ones.
///
/// ```no_run
/// # async fn demo() -> Result<(), wf_core::WfError> {
/// use wf_http::ConnectExt;
/// let client = wf_core::Client::connect("http://127.0.0.1:8233").token("s3cret").await?;
/// // HTTPS: the system's CAs, or those of a file; a client certificate for mTLS.
/// let client = wf_core::Client::connect("https://wf.internal:8233")
///     .token("s3cret")
///     .ca_file("ca.pem")
///     .client_cert("me.pem", "me.key")
///     .await?;
/// # Ok(()) }
/// ```
pub trait ConnectExt {
    /// Starts connecting to the server at `url` (`http://host:port` or `https://host:port`,
    /// optionally with a path prefix where the router is mounted); `.await` checks that it
    /// answers and accepts the token.
    fn connect(url: impl Into<String>) -> Connecting;
}

impl ConnectExt for Client {
    fn connect(url: impl Into<String>) -> Connecting {
        Connecting {
            url: url.into(),
            token: None,
            tls: ClientTls::new(),
        }
    }
}

/// A connection being set up: [`token`](Self::token) sets the bearer token, the TLS methods
/// what an `https://` URL trusts and presents, `.await` connects.
#[must_use = "a connection is made only when awaited"]
#[derive(Debug, Clone)]
pub struct Connecting {
    url: String,
    token: Option<String>,
    tls: ClientTls,
}

impl Connecting {
    /// The bearer token the server requires.
    pub fn token(mut self, token: impl Into<String>) -> Self {
        self.token = Some(token.into());
        self
    }

    /// Trusts the CAs of this PEM file (instead of the system's) to sign an `https://`
    /// server's certificate.
    pub fn ca_file(mut self, ca: impl Into<PathBuf>) -> Self {
        self.tls = self.tls.ca_file(ca);
        self
    }

    /// Presents this client certificate (PEM chain and PEM private key) to an `https://`
    /// server that requires one (mutual TLS).
    pub fn client_cert(mut self, cert_chain: impl Into<PathBuf>, key: impl Into<PathBuf>) -> Self {
        self.tls = self.tls.client_cert_files(cert_chain, key);
        self
    }

    /// All TLS settings at once (CAs and client certificate from files or bytes).
    pub fn tls(mut self, tls: ClientTls) -> Self {
        self.tls = tls;
        self
    }
}

impl IntoFuture for Connecting {
    type Output = Result<Client, WfError>;
    type IntoFuture = Pin<Box<dyn Future<Output = Result<Client, WfError>> + Send>>;

    fn into_future(self) -> Self::IntoFuture {
        Box::pin(async move {
            let transport = HttpTransport::new(&self.url, self.token.as_deref(), &self.tls)?;
            transport.check().await?;
            Ok(Client::from_transport(Arc::new(transport)))
        })
    }
}
