//! tokio-postgres's TLS hooks over tokio-rustls: [`MakeRustls`] makes a handshake per host
//! (the host name is the one the certificate is checked against and the SNI sent), and
//! [`RustlsStream`] is the encrypted connection. It gives SCRAM its `tls-server-end-point`
//! channel binding (RFC 5929: a hash of the server's certificate), so that
//! `channel_binding=require` (in Neon's connection strings, for one) works: the password
//! exchange then proves that no one relays the TLS session.

use rustls::pki_types::ServerName;
use rustls::ClientConfig;
use std::future::Future;
use std::io;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio_postgres::tls::{ChannelBinding, MakeTlsConnect, TlsConnect, TlsStream};

/// Makes the TLS handshakes of one connection string's connections.
#[derive(Clone)]
pub(crate) struct MakeRustls {
    config: Arc<ClientConfig>,
}

impl MakeRustls {
    pub(crate) fn new(config: ClientConfig) -> MakeRustls {
        MakeRustls {
            config: Arc::new(config),
        }
    }
}

/// A handshake with one host.
pub(crate) struct RustlsHandshake {
    config: Arc<ClientConfig>,
    /// The host as the certificate must name it; `Err` (said only if TLS is actually used)
    /// when it is not a DNS name or an IP address: a Unix socket's path, or no host.
    name: Result<ServerName<'static>, String>,
}

impl<S> MakeTlsConnect<S> for MakeRustls
where
    S: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    type Stream = RustlsStream<S>;
    type TlsConnect = RustlsHandshake;
    type Error = io::Error;

    fn make_tls_connect(&mut self, domain: &str) -> Result<RustlsHandshake, io::Error> {
        let name = ServerName::try_from(domain.to_string()).map_err(|_| {
            format!("{domain:?} is not a host name or an IP address that TLS can check a certificate against")
        });
        Ok(RustlsHandshake {
            config: Arc::clone(&self.config),
            name,
        })
    }
}

impl<S> TlsConnect<S> for RustlsHandshake
where
    S: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    type Stream = RustlsStream<S>;
    type Error = io::Error;
    type Future = Pin<Box<dyn Future<Output = Result<RustlsStream<S>, io::Error>> + Send>>;

    fn connect(self, stream: S) -> Self::Future {
        Box::pin(async move {
            let name = self
                .name
                .map_err(|e| io::Error::new(io::ErrorKind::InvalidInput, e))?;
            let stream = tokio_rustls::TlsConnector::from(self.config)
                .connect(name, stream)
                .await?;
            Ok(RustlsStream(stream))
        })
    }
}

/// A TLS connection to the server.
pub(crate) struct RustlsStream<S>(tokio_rustls::client::TlsStream<S>);

impl<S: AsyncRead + AsyncWrite + Unpin> TlsStream for RustlsStream<S> {
    fn channel_binding(&self) -> ChannelBinding {
        let (_, session) = self.0.get_ref();
        session
            .peer_certificates()
            .and_then(|chain| chain.first())
            .and_then(|cert| tls_server_end_point(cert))
            .map_or_else(ChannelBinding::none, ChannelBinding::tls_server_end_point)
    }
}

/// RFC 5929's `tls-server-end-point`: the certificate hashed with its signature's hash
/// (SHA-256 for MD5 and SHA-1); `None` for signatures that define none (Ed25519, RSA-PSS),
/// for which PostgreSQL offers no channel binding either.
fn tls_server_end_point(cert: &[u8]) -> Option<Vec<u8>> {
    use ring::digest::{digest, SHA256, SHA384, SHA512};
    const RSA: &[u8] = &[0x2a, 0x86, 0x48, 0x86, 0xf7, 0x0d, 0x01, 0x01];
    const ECDSA: &[u8] = &[0x2a, 0x86, 0x48, 0xce, 0x3d, 0x04];
    // Certificate ::= SEQUENCE { tbsCertificate, signatureAlgorithm, signature }.
    let (_, body, _) = der(cert).filter(|(tag, ..)| *tag == 0x30)?;
    let (_, _, after_tbs) = der(body)?;
    let (_, algorithm, _) = der(after_tbs).filter(|(tag, ..)| *tag == 0x30)?;
    let (_, oid, _) = der(algorithm).filter(|(tag, ..)| *tag == 0x06)?;
    let hash = match oid.split_last()? {
        // md5, sha1, sha256, sha384, sha512 WithRSAEncryption (1.2.840.113549.1.1.n).
        (4 | 5 | 11, head) if head == RSA => &SHA256,
        (12, head) if head == RSA => &SHA384,
        (13, head) if head == RSA => &SHA512,
        // ecdsa-with-SHA1 (1.2.840.10045.4.1), -SHA256/384/512 (1.2.840.10045.4.3.n).
        (1, head) if head == ECDSA => &SHA256,
        (2, [head @ .., 3]) if head == ECDSA => &SHA256,
        (3, [head @ .., 3]) if head == ECDSA => &SHA384,
        (4, [head @ .., 3]) if head == ECDSA => &SHA512,
        _ => return None,
    };
    Some(digest(hash, cert).as_ref().to_vec())
}

/// One DER element at the start of `input`: its tag, its contents and what follows it.
fn der(input: &[u8]) -> Option<(u8, &[u8], &[u8])> {
    let (&tag, rest) = input.split_first()?;
    let (&first, mut rest) = rest.split_first()?;
    let len = if first < 0x80 {
        usize::from(first)
    } else {
        let n = usize::from(first & 0x7f);
        if n == 0 || n > 4 || rest.len() < n {
            return None;
        }
        let (bytes, after) = rest.split_at(n);
        rest = after;
        bytes
            .iter()
            .fold(0usize, |len, b| len << 8 | usize::from(*b))
    };
    (rest.len() >= len).then(|| (tag, &rest[..len], &rest[len..]))
}

impl<S: AsyncRead + AsyncWrite + Unpin> AsyncRead for RustlsStream<S> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        Pin::new(&mut self.0).poll_read(cx, buf)
    }
}

impl<S: AsyncRead + AsyncWrite + Unpin> AsyncWrite for RustlsStream<S> {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.0).poll_write(cx, buf)
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.0).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.0).poll_shutdown(cx)
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.0).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.0.is_write_vectored()
    }
}

#[cfg(test)]
mod tests {
    use super::tls_server_end_point;

    #[test]
    fn the_end_point_is_the_certificate_hashed_with_its_signature_hash() {
        let key = rcgen::KeyPair::generate_for(&rcgen::PKCS_ECDSA_P384_SHA384).unwrap();
        let params = rcgen::CertificateParams::new(vec!["db.internal".into()]).unwrap();
        let cert = params.clone().self_signed(&key).unwrap();
        let der = cert.der().to_vec();
        let expected = ring::digest::digest(&ring::digest::SHA384, &der);
        assert_eq!(
            tls_server_end_point(&der).as_deref(),
            Some(expected.as_ref())
        );

        let key = rcgen::KeyPair::generate_for(&rcgen::PKCS_ED25519).unwrap();
        let cert = params.self_signed(&key).unwrap();
        assert_eq!(
            tls_server_end_point(cert.der()),
            None,
            "Ed25519 defines no hash"
        );
        assert_eq!(tls_server_end_point(b"\x30\x82\xff"), None, "truncated DER");
    }
}
