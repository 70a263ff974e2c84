//! HTTPS for the remote client: [`ClientTls`] (the CAs the client trusts, the system's by
//! default, and a client certificate for mutual TLS), the [`Stream`] a connection runs on
//! (TCP, or TLS over TCP), and plain words for what a refused handshake means.
//!
//! The system's roots come from `rustls-native-certs` (the operating system's store, which
//! `SSL_CERT_FILE` / `SSL_CERT_DIR` override), not from a list compiled into the binary: a
//! server signed by a company's own CA, installed on its machines, is trusted as `curl` would
//! trust it, and the list is as fresh as the system's.

use crate::tls::{provider, rustls_error, Pem};
use rustls::pki_types::ServerName;
use rustls::{AlertDescription, CertificateError, ClientConfig, RootCertStore};
use std::io::IoSlice;
use std::path::PathBuf;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::TcpStream;
use tokio_rustls::TlsConnector;
use wf_core::error::{BackendErrorKind, StoreError};
use wf_core::WfError;

/// The client's TLS settings for `https://` URLs: which CAs it trusts to sign the server's
/// certificate (the system's, or those of a PEM file), and optionally a client certificate
/// for a server that requires one (mutual TLS). Plain `http://` URLs ignore it.
///
/// ```no_run
/// # async fn demo() -> Result<(), wf_core::WfError> {
/// use wf_http::{ClientTls, HttpTransport};
/// let tls = ClientTls::new().ca_file("ca.pem").client_cert_files("me.pem", "me.key");
/// let transport = HttpTransport::new("https://wf.internal:8233", Some("s3cret"), &tls)?;
/// let client = wf_core::Client::from_transport(std::sync::Arc::new(transport));
/// # let _ = client; Ok(()) }
/// ```
#[derive(Debug, Clone, Default)]
pub struct ClientTls {
    ca: Option<Pem>,
    identity: Option<(Pem, Pem)>,
}

impl ClientTls {
    /// Trusts the system's CAs, presents no client certificate.
    pub fn new() -> ClientTls {
        ClientTls::default()
    }

    /// Trusts the CAs of this PEM file instead of the system's.
    pub fn ca_file(mut self, ca: impl Into<PathBuf>) -> ClientTls {
        self.ca = Some(Pem::File(ca.into()));
        self
    }

    /// [`ca_file`](Self::ca_file) with the PEM text in memory.
    pub fn ca_pem(mut self, ca: impl Into<Vec<u8>>) -> ClientTls {
        self.ca = Some(Pem::Bytes(ca.into()));
        self
    }

    /// Presents this client certificate (PEM chain, the client's certificate first) and its
    /// private key (PEM) to a server that asks for one.
    pub fn client_cert_files(
        mut self,
        cert_chain: impl Into<PathBuf>,
        key: impl Into<PathBuf>,
    ) -> ClientTls {
        self.identity = Some((Pem::File(cert_chain.into()), Pem::File(key.into())));
        self
    }

    /// [`client_cert_files`](Self::client_cert_files) with the PEM text in memory.
    pub fn client_cert_pem(
        mut self,
        cert_chain: impl Into<Vec<u8>>,
        key: impl Into<Vec<u8>>,
    ) -> ClientTls {
        self.identity = Some((Pem::Bytes(cert_chain.into()), Pem::Bytes(key.into())));
        self
    }

    /// rustls's client configuration: TLS 1.2 and 1.3 on `ring`, ALPN `http/1.1`. Fails with
    /// `InvalidArgument` naming a file that cannot be read or parsed.
    fn config(&self) -> Result<ClientConfig, WfError> {
        let roots = match &self.ca {
            Some(ca) => ca.roots("CA certificates")?,
            None => system_roots()?,
        };
        let builder = ClientConfig::builder_with_provider(provider())
            .with_safe_default_protocol_versions()
            .map_err(|e| WfError::InvalidConfig(format!("TLS protocol versions: {e}")))?
            .with_root_certificates(roots);
        let mut config = match &self.identity {
            Some((chain, key)) => builder
                .with_client_auth_cert(
                    chain.certificates("client certificate chain")?,
                    key.private_key("client's private key")?,
                )
                .map_err(|e| {
                    WfError::InvalidArgument(format!(
                        "the client certificate and private key do not go together: {e}"
                    ))
                })?,
            None => builder.with_no_client_auth(),
        };
        config.alpn_protocols = vec![b"http/1.1".to_vec()];
        Ok(config)
    }
}

/// The system's CA certificates.
fn system_roots() -> Result<RootCertStore, WfError> {
    let found = rustls_native_certs::load_native_certs();
    let mut roots = RootCertStore::empty();
    let (_added, _unparsable) = roots.add_parsable_certificates(found.certs);
    if roots.is_empty() {
        let why = found
            .errors
            .first()
            .map(|e| format!(" ({e})"))
            .unwrap_or_default();
        return Err(WfError::InvalidArgument(format!(
            "no CA certificate found in the system's store{why}: give the CA that signs the \
             server's certificate (a PEM file: ClientTls::ca_file, wf --ca FILE, WF_CA)"
        )));
    }
    Ok(roots)
}

/// What the client needs to open TLS connections to one server.
#[derive(Clone)]
pub(crate) struct TlsConnect {
    connector: TlsConnector,
    name: ServerName<'static>,
    /// The host as written in the URL, for errors.
    host: String,
    has_client_cert: bool,
}

impl TlsConnect {
    /// Connections to `host` (a DNS name or an IP address, as in the URL) with `tls`.
    pub(crate) fn new(host: &str, tls: &ClientTls) -> Result<TlsConnect, WfError> {
        let bare = host.trim_start_matches('[').trim_end_matches(']');
        let name = ServerName::try_from(bare.to_string()).map_err(|_| {
            WfError::InvalidArgument(format!("{host:?} is not a host name TLS can check"))
        })?;
        Ok(TlsConnect {
            connector: TlsConnector::from(Arc::new(tls.config()?)),
            name,
            host: host.to_string(),
            has_client_cert: tls.identity.is_some(),
        })
    }

    /// The TLS handshake over `tcp`; a refusal is described in plain words.
    pub(crate) async fn handshake(&self, tcp: TcpStream) -> Result<Stream, Refused> {
        match self.connector.connect(self.name.clone(), tcp).await {
            Ok(tls) => Ok(Stream::Tls(Box::new(tls))),
            Err(e) => Err(match self.refusal(&e) {
                Some(refused) => refused,
                None if e.kind() == std::io::ErrorKind::UnexpectedEof => Refused(format!(
                    "the server at {} closed the connection in the TLS handshake: if it serves \
                     plain HTTP, use an http:// URL",
                    self.host
                )),
                None => Refused(format!("TLS handshake with {}: {e}", self.host)),
            }),
        }
    }

    /// What a rustls error under `err` (in the handshake, or read later: TLS 1.3 servers
    /// judge the client's certificate after the client is done) says, if there is one.
    pub(crate) fn refusal(&self, err: &(dyn std::error::Error + 'static)) -> Option<Refused> {
        rustls_error(err).map(|e| Refused(describe(e, &self.host, self.has_client_cert)))
    }
}

/// A TLS handshake or session refused: retrying as is does not help.
#[derive(Debug)]
pub(crate) struct Refused(pub(crate) String);

impl Refused {
    /// As the caller's error: not retryable.
    pub(crate) fn into_error(self, context: &str) -> WfError {
        WfError::Store(StoreError::backend(
            BackendErrorKind::Invalid,
            format!("{context}: {}", self.0),
        ))
    }
}

/// A rustls error in words that say what to do.
fn describe(e: &rustls::Error, host: &str, has_client_cert: bool) -> String {
    use rustls::Error as E;
    use CertificateError as C;
    match e {
        // A bad signature: a CA of the same name as a trusted one signed it, not that one.
        E::InvalidCertificate(C::UnknownIssuer | C::BadSignature) => format!(
            "the server's certificate is not signed by a CA this client trusts (--ca FILE): \
             give the CA that signed {host}'s certificate (ClientTls::ca_file, wf --ca, WF_CA)"
        ),
        E::InvalidCertificate(C::NotValidForNameContext { presented, .. }) => format!(
            "the server's certificate is not for {host} (it names {}): connect with a name it \
             holds, or give the server a certificate for {host}",
            presented.join(", ")
        ),
        E::InvalidCertificate(C::NotValidForName) => format!(
            "the server's certificate is not for {host}: connect with a name it holds, or give \
             the server a certificate for {host}"
        ),
        E::InvalidCertificate(C::Expired | C::ExpiredContext { .. }) => {
            format!("{host}'s certificate has expired: renew it (or check this machine's clock)")
        }
        E::InvalidCertificate(C::NotValidYet | C::NotValidYetContext { .. }) => format!(
            "{host}'s certificate is not valid yet: check this machine's clock and the server's"
        ),
        E::InvalidCertificate(other) => format!("{host}'s certificate is refused: {other:?}"),
        E::AlertReceived(AlertDescription::CertificateRequired) => format!(
            "{host} requires a client certificate: give one (Connecting::client_cert, \
             wf --cert FILE --key FILE, WF_CERT and WF_KEY)"
        ),
        E::AlertReceived(AlertDescription::HandshakeFailure) if !has_client_cert => format!(
            "{host} refused the TLS handshake; if it requires a client certificate, give one \
             (Connecting::client_cert, wf --cert FILE --key FILE)"
        ),
        E::AlertReceived(
            alert @ (AlertDescription::UnknownCA
            | AlertDescription::BadCertificate
            | AlertDescription::CertificateUnknown
            | AlertDescription::UnsupportedCertificate
            | AlertDescription::CertificateExpired
            | AlertDescription::DecryptError
            | AlertDescription::AccessDenied),
        ) if has_client_cert => format!(
            "{host} refused this client's certificate ({alert:?}): is it signed by the CA the \
             server trusts for clients, and still valid?"
        ),
        E::InvalidMessage(_) => {
            format!("{host} did not answer in TLS: if it serves plain HTTP, use an http:// URL")
        }
        other => format!("TLS with {host}: {other}"),
    }
}

/// A connection's byte stream: plain TCP or TLS over TCP.
pub(crate) enum Stream {
    Plain(TcpStream),
    Tls(Box<tokio_rustls::client::TlsStream<TcpStream>>),
}

impl AsyncRead for Stream {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        match self.get_mut() {
            Stream::Plain(s) => Pin::new(s).poll_read(cx, buf),
            Stream::Tls(s) => Pin::new(s.as_mut()).poll_read(cx, buf),
        }
    }
}

impl AsyncWrite for Stream {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<std::io::Result<usize>> {
        match self.get_mut() {
            Stream::Plain(s) => Pin::new(s).poll_write(cx, buf),
            Stream::Tls(s) => Pin::new(s.as_mut()).poll_write(cx, buf),
        }
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[IoSlice<'_>],
    ) -> Poll<std::io::Result<usize>> {
        match self.get_mut() {
            Stream::Plain(s) => Pin::new(s).poll_write_vectored(cx, bufs),
            Stream::Tls(s) => Pin::new(s.as_mut()).poll_write_vectored(cx, bufs),
        }
    }

    fn is_write_vectored(&self) -> bool {
        match self {
            Stream::Plain(s) => s.is_write_vectored(),
            Stream::Tls(s) => s.is_write_vectored(),
        }
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        match self.get_mut() {
            Stream::Plain(s) => Pin::new(s).poll_flush(cx),
            Stream::Tls(s) => Pin::new(s.as_mut()).poll_flush(cx),
        }
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        match self.get_mut() {
            Stream::Plain(s) => Pin::new(s).poll_shutdown(cx),
            Stream::Tls(s) => Pin::new(s.as_mut()).poll_shutdown(cx),
        }
    }
}
