//! `Client::connect("http://host:port").token("T").await`.

use super::transport::HttpTransport;
use std::future::{Future, IntoFuture};
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
/// # Ok(()) }
/// ```
pub trait ConnectExt {
    /// Starts connecting to the server at `url` (`http://host:port`, optionally with a path
    /// prefix where the router is mounted); `.await` checks that it answers and accepts the
    /// token.
    fn connect(url: impl Into<String>) -> Connecting;
}

impl ConnectExt for Client {
    fn connect(url: impl Into<String>) -> Connecting {
        Connecting {
            url: url.into(),
            token: None,
        }
    }
}

/// A connection being set up: [`token`](Self::token) sets the bearer token, `.await` connects.
#[must_use = "a connection is made only when awaited"]
#[derive(Debug, Clone)]
pub struct Connecting {
    url: String,
    token: Option<String>,
}

impl Connecting {
    /// The bearer token the server requires.
    pub fn token(mut self, token: impl Into<String>) -> Self {
        self.token = Some(token.into());
        self
    }
}

impl IntoFuture for Connecting {
    type Output = Result<Client, WfError>;
    type IntoFuture = Pin<Box<dyn Future<Output = Result<Client, WfError>> + Send>>;

    fn into_future(self) -> Self::IntoFuture {
        Box::pin(async move {
            let transport = HttpTransport::new(&self.url, self.token.as_deref())?;
            transport.check().await?;
            Ok(Client::from_transport(Arc::new(transport)))
        })
    }
}
