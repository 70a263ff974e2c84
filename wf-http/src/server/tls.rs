//! HTTPS for [`serve`](super::serve): [`TlsConfig`] (a certificate chain and its private key,
//! and optionally the CAs whose client certificates are required: mTLS), and the accept loop
//! behind it. Each connection's TLS handshake runs in a task of its own with a deadline, so a
//! slow or broken client never holds up the others; ALPN picks HTTP/2 (`h2`) or HTTP/1.1.
//! Plain HTTP sent to the port gets no HTTP answer: its handshake fails and the connection is
//! closed.

use crate::tls::{provider, Pem};
use axum::Router;
use hyper::body::Incoming;
use hyper_util::rt::{TokioExecutor, TokioIo, TokioTimer};
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use rustls::server::WebPkiClientVerifier;
use rustls::{RootCertStore, ServerConfig};
use std::future::Future;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::pin::{pin, Pin};
use std::sync::Arc;
use std::time::Duration;
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{oneshot, watch};
use tokio_rustls::TlsAcceptor;
use tower::ServiceExt;
use wf_core::WfError;

/// How long a client may take over its TLS handshake before its connection is dropped.
const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);

/// The server's TLS: its certificate chain and private key, and optionally the CAs that sign
/// the client certificates it then requires (mutual TLS). Give it to
/// [`ServeOptions::tls`](super::ServeOptions::tls).
///
/// ```no_run
/// # fn demo() -> Result<(), wf_core::WfError> {
/// use wf_http::{ServeOptions, TlsConfig};
/// let tls = TlsConfig::from_pem_files("server.pem", "server.key")?
///     .client_ca_file("clients-ca.pem")?; // optional: mTLS
/// let options = ServeOptions::default().token("s3cret").tls(tls);
/// # let _ = options; Ok(()) }
/// ```
#[derive(Clone)]
pub struct TlsConfig {
    chain: Vec<CertificateDer<'static>>,
    key: Arc<PrivateKeyDer<'static>>,
    client_ca: Option<Arc<RootCertStore>>,
    handshake_timeout: Duration,
    /// Built from the above, so that a mistake (a key that does not match the certificate)
    /// fails where the configuration is made.
    config: Arc<ServerConfig>,
}

impl std::fmt::Debug for TlsConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TlsConfig")
            .field("certificates", &self.chain.len())
            .field("client_ca", &self.client_ca.as_ref().map(|r| r.len()))
            .field("handshake_timeout", &self.handshake_timeout)
            .finish_non_exhaustive()
    }
}

impl TlsConfig {
    /// The certificate chain (PEM: the server's certificate first, then the intermediates)
    /// and its private key (PEM: PKCS#8, PKCS#1 or SEC1) from two files. Fails with
    /// `InvalidArgument` naming the file that cannot be read or holds no such PEM section,
    /// or when the key is not the certificate's.
    pub fn from_pem_files(
        cert_chain: impl Into<PathBuf>,
        key: impl Into<PathBuf>,
    ) -> Result<TlsConfig, WfError> {
        Self::from_sources(&Pem::File(cert_chain.into()), &Pem::File(key.into()))
    }

    /// [`from_pem_files`](Self::from_pem_files) with the PEM text in memory.
    pub fn from_pem(
        cert_chain: impl Into<Vec<u8>>,
        key: impl Into<Vec<u8>>,
    ) -> Result<TlsConfig, WfError> {
        Self::from_sources(&Pem::Bytes(cert_chain.into()), &Pem::Bytes(key.into()))
    }

    fn from_sources(chain: &Pem, key: &Pem) -> Result<TlsConfig, WfError> {
        let chain = chain.certificates("server certificate chain")?;
        let key = Arc::new(key.private_key("server's private key")?);
        let config = build(&chain, &key, None)?;
        Ok(TlsConfig {
            chain,
            key,
            client_ca: None,
            handshake_timeout: HANDSHAKE_TIMEOUT,
            config,
        })
    }

    /// Requires a client certificate signed by one of the CAs in this PEM file (mutual TLS):
    /// a client without one, or with one from another CA, fails its handshake.
    pub fn client_ca_file(self, ca: impl Into<PathBuf>) -> Result<TlsConfig, WfError> {
        self.with_client_ca(&Pem::File(ca.into()))
    }

    /// [`client_ca_file`](Self::client_ca_file) with the PEM text in memory.
    pub fn client_ca_pem(self, ca: impl Into<Vec<u8>>) -> Result<TlsConfig, WfError> {
        self.with_client_ca(&Pem::Bytes(ca.into()))
    }

    fn with_client_ca(mut self, ca: &Pem) -> Result<TlsConfig, WfError> {
        let roots = Arc::new(ca.roots("client CA certificates")?);
        self.config = build(&self.chain, &self.key, Some(&roots))?;
        self.client_ca = Some(roots);
        Ok(self)
    }

    /// How long a client may take over its TLS handshake (default 10 s); a slower one is
    /// disconnected.
    pub fn handshake_timeout(mut self, timeout: Duration) -> TlsConfig {
        self.handshake_timeout = timeout;
        self
    }
}

/// rustls's server configuration: TLS 1.2 and 1.3 on `ring`, ALPN `h2` then `http/1.1`.
fn build(
    chain: &[CertificateDer<'static>],
    key: &PrivateKeyDer<'static>,
    client_ca: Option<&Arc<RootCertStore>>,
) -> Result<Arc<ServerConfig>, WfError> {
    let builder = ServerConfig::builder_with_provider(provider())
        .with_safe_default_protocol_versions()
        .map_err(|e| WfError::InvalidConfig(format!("TLS protocol versions: {e}")))?;
    let builder = match client_ca {
        Some(roots) => {
            let verifier = WebPkiClientVerifier::builder_with_provider(roots.clone(), provider())
                .build()
                .map_err(|e| {
                    WfError::InvalidArgument(format!("the client CA certificates: {e}"))
                })?;
            builder.with_client_cert_verifier(verifier)
        }
        None => builder.with_no_client_auth(),
    };
    let mut config = builder
        .with_single_cert(chain.to_vec(), key.clone_key())
        .map_err(|e| {
            WfError::InvalidArgument(format!(
                "the server's certificate and private key do not go together (is the key the \
                 certificate's, and the certificate first in its file?): {e}"
            ))
        })?;
    config.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
    Ok(Arc::new(config))
}

/// Serves `app` over TLS on `listener` until `stopped`; then stops accepting, asks every
/// connection to finish its requests in flight, and returns once they all have.
pub(super) async fn serve(
    listener: TcpListener,
    app: Router,
    tls: TlsConfig,
    stopped: oneshot::Receiver<()>,
) -> std::io::Result<()> {
    let acceptor = TlsAcceptor::from(tls.config.clone());
    // Every connection task holds a receiver: `closed` below waits for the last one.
    let (stop, stopping) = watch::channel(false);
    let mut stopped = pin!(stopped);
    loop {
        let accepted = tokio::select! {
            accepted = listener.accept() => accepted,
            _ = &mut stopped => break,
        };
        let (tcp, peer) = match accepted {
            Ok(accepted) => accepted,
            Err(e) => {
                // Out of file descriptors and the like: wait rather than spin.
                tracing::warn!(error = %e, "accepting an HTTPS connection failed");
                tokio::time::sleep(Duration::from_millis(100)).await;
                continue;
            }
        };
        tokio::spawn(connection(
            acceptor.clone(),
            tls.handshake_timeout,
            tcp,
            peer,
            app.clone(),
            stopping.clone(),
        ));
    }
    drop(listener);
    drop(stopping);
    // No receiver left (every connection already ended) is no error here.
    let _ = stop.send(true);
    stop.closed().await;
    Ok(())
}

/// One connection: the handshake (within `timeout`), then HTTP/2 or HTTP/1.1 as ALPN chose,
/// until the client closes it or the server stops.
async fn connection(
    acceptor: TlsAcceptor,
    timeout: Duration,
    tcp: TcpStream,
    peer: SocketAddr,
    app: Router,
    mut stopping: watch::Receiver<bool>,
) {
    // Answers are small and written at once: no Nagle delay on them.
    if let Err(e) = tcp.set_nodelay(true) {
        tracing::debug!(error = %e, "TCP_NODELAY on an accepted connection");
    }
    let handshake = tokio::time::timeout(timeout, acceptor.accept(tcp));
    let stream = tokio::select! {
        done = handshake => match done {
            Ok(Ok(stream)) => stream,
            Ok(Err(e)) => {
                tracing::debug!(%peer, error = %e, "TLS handshake failed");
                return;
            }
            Err(_) => {
                tracing::debug!(%peer, ?timeout, "TLS handshake ran out of time");
                return;
            }
        },
        _ = stopping.wait_for(|stop| *stop) => return,
    };
    let h2 = stream.get_ref().1.alpn_protocol() == Some(b"h2");
    let service =
        hyper::service::service_fn(move |req: hyper::Request<Incoming>| app.clone().oneshot(req));
    let io = TokioIo::new(stream);
    let outcome = if h2 {
        let mut builder = hyper::server::conn::http2::Builder::new(TokioExecutor::new());
        builder.timer(TokioTimer::new());
        let conn = builder.serve_connection(io, service);
        until_done(conn, stopping, |c| c.graceful_shutdown()).await
    } else {
        let mut builder = hyper::server::conn::http1::Builder::new();
        builder.timer(TokioTimer::new());
        let conn = builder.serve_connection(io, service);
        until_done(conn, stopping, |c| c.graceful_shutdown()).await
    };
    if let Err(e) = outcome {
        tracing::debug!(%peer, error = %e, "HTTPS connection");
    }
}

/// Drives `conn` to its end; once the server stops, asks it to finish gracefully (the
/// requests in flight are answered, no new one is read).
async fn until_done<C: Future>(
    conn: C,
    mut stopping: watch::Receiver<bool>,
    graceful: impl FnOnce(Pin<&mut C>),
) -> C::Output {
    let mut conn = pin!(conn);
    tokio::select! {
        done = conn.as_mut() => return done,
        _ = stopping.wait_for(|stop| *stop) => {}
    }
    graceful(conn.as_mut());
    conn.await
}
