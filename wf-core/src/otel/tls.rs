//! The exporter's HTTP client: reqwest's blocking client on a rustls configuration made here,
//! on the `ring` provider (reqwest's own `rustls` feature would bring aws-lc-rs), trusting the
//! CAs of a PEM file or the operating system's store, with an optional client certificate.

use super::OtelError;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use rustls::{ClientConfig, RootCertStore};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

/// How long one export may take (the OTLP exporter's own default).
const EXPORT_TIMEOUT: Duration = Duration::from_secs(10);

/// The CA file and client certificate of an HTTPS collector; by default those the standard
/// variables name: `OTEL_EXPORTER_OTLP_TRACES_CERTIFICATE` or `OTEL_EXPORTER_OTLP_CERTIFICATE`
/// (the CA, PEM), `..._CLIENT_CERTIFICATE` and `..._CLIENT_KEY` (mTLS).
#[derive(Debug, Clone, Default)]
pub(super) struct CollectorTls {
    pub(super) ca: Option<PathBuf>,
    pub(super) client: Option<(PathBuf, PathBuf)>,
}

impl CollectorTls {
    /// What the environment sets.
    pub(super) fn from_env() -> CollectorTls {
        let var = |name: &str| {
            std::env::var_os(format!("OTEL_EXPORTER_OTLP_TRACES_{name}"))
                .or_else(|| std::env::var_os(format!("OTEL_EXPORTER_OTLP_{name}")))
                .filter(|v| !v.is_empty())
                .map(PathBuf::from)
        };
        CollectorTls {
            ca: var("CERTIFICATE"),
            client: var("CLIENT_CERTIFICATE").zip(var("CLIENT_KEY")),
        }
    }

    /// The blocking client (make it off any async runtime's thread).
    pub(super) fn client(&self) -> Result<reqwest::blocking::Client, OtelError> {
        let roots = match &self.ca {
            Some(ca) => file_roots(ca)?,
            // Empty when the system has none: plain http:// still works, https:// then fails
            // to verify and the spans are dropped (the exporter logs why).
            None => system_roots(),
        };
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let builder = ClientConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .map_err(|e| OtelError(format!("TLS protocol versions: {e}")))?
            .with_root_certificates(roots);
        let mut config = match &self.client {
            Some((cert, key)) => builder
                .with_client_auth_cert(certificates(cert)?, private_key(key)?)
                .map_err(|e| {
                    OtelError(format!(
                        "the client certificate {} and key {} do not go together: {e}",
                        cert.display(),
                        key.display()
                    ))
                })?,
            None => builder.with_no_client_auth(),
        };
        config.alpn_protocols = vec![b"http/1.1".to_vec()];
        reqwest::blocking::Client::builder()
            .timeout(EXPORT_TIMEOUT)
            .tls_backend_preconfigured(config)
            .build()
            .map_err(|e| OtelError(format!("the HTTP client for the collector: {e}")))
    }
}

fn certificates(path: &Path) -> Result<Vec<CertificateDer<'static>>, OtelError> {
    let bad = |e: &dyn std::fmt::Display| {
        OtelError(format!(
            "the certificates of {} cannot be read: {e}",
            path.display()
        ))
    };
    let certs = CertificateDer::pem_file_iter(path)
        .map_err(|e| bad(&e))?
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| bad(&e))?;
    if certs.is_empty() {
        return Err(bad(&"no -----BEGIN CERTIFICATE----- section"));
    }
    Ok(certs)
}

fn private_key(path: &Path) -> Result<PrivateKeyDer<'static>, OtelError> {
    PrivateKeyDer::from_pem_file(path).map_err(|e| {
        OtelError(format!(
            "the private key of {} cannot be read: {e}",
            path.display()
        ))
    })
}

fn file_roots(path: &Path) -> Result<RootCertStore, OtelError> {
    let mut roots = RootCertStore::empty();
    for cert in certificates(path)? {
        roots.add(cert).map_err(|e| {
            OtelError(format!(
                "a certificate of {} cannot be a CA: {e}",
                path.display()
            ))
        })?;
    }
    Ok(roots)
}

fn system_roots() -> RootCertStore {
    let mut roots = RootCertStore::empty();
    roots.add_parsable_certificates(rustls_native_certs::load_native_certs().certs);
    roots
}
