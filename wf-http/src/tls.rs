//! What the server's and the client's TLS share: certificates and private keys read from PEM
//! files or bytes ([`Pem`]), and rustls's crypto provider (`ring`, the only one compiled in).
//!
//! May import nothing else of the crate.

use rustls::crypto::CryptoProvider;
use rustls::pki_types::pem::{self, PemObject};
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use rustls::RootCertStore;
use std::path::PathBuf;
use std::sync::Arc;
use wf_core::WfError;

/// Where PEM text comes from: a file (named in errors) or bytes in memory.
#[derive(Clone)]
pub(crate) enum Pem {
    File(PathBuf),
    Bytes(Vec<u8>),
}

impl std::fmt::Debug for Pem {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Bytes may be a private key: never print them.
        match self {
            Pem::File(path) => f.debug_tuple("File").field(path).finish(),
            Pem::Bytes(b) => write!(f, "Bytes({} bytes)", b.len()),
        }
    }
}

impl Pem {
    /// Where the text comes from, for errors: `file "ca.pem"` or `the PEM bytes given`.
    fn origin(&self) -> String {
        match self {
            Pem::File(path) => format!("file {}", path.display()),
            Pem::Bytes(_) => "the PEM bytes given".to_string(),
        }
    }

    fn read(&self, what: &str) -> Result<std::borrow::Cow<'_, [u8]>, WfError> {
        match self {
            Pem::File(path) => std::fs::read(path).map(Into::into).map_err(|e| {
                WfError::InvalidArgument(format!(
                    "cannot read the {what} (file {}): {e}",
                    path.display()
                ))
            }),
            Pem::Bytes(b) => Ok(b.as_slice().into()),
        }
    }

    /// The certificates in it (`-----BEGIN CERTIFICATE-----` sections), in order: at least
    /// one. `what` names them in errors ("server certificate chain", "CA certificates").
    pub(crate) fn certificates(&self, what: &str) -> Result<Vec<CertificateDer<'static>>, WfError> {
        let text = self.read(what)?;
        let certs = CertificateDer::pem_slice_iter(&text)
            .collect::<Result<Vec<_>, _>>()
            .map_err(|e| self.bad(what, &e))?;
        if certs.is_empty() {
            return Err(WfError::InvalidArgument(format!(
                "the {what} ({}) holds no PEM certificate (no -----BEGIN CERTIFICATE----- section)",
                self.origin()
            )));
        }
        Ok(certs)
    }

    /// The first private key in it (PKCS#8, PKCS#1 RSA or SEC1 EC).
    pub(crate) fn private_key(&self, what: &str) -> Result<PrivateKeyDer<'static>, WfError> {
        let text = self.read(what)?;
        PrivateKeyDer::from_pem_slice(&text).map_err(|e| match e {
            pem::Error::NoItemsFound => WfError::InvalidArgument(format!(
                "the {what} ({}) holds no PEM private key (-----BEGIN PRIVATE KEY-----, \
                 RSA PRIVATE KEY or EC PRIVATE KEY)",
                self.origin()
            )),
            e => self.bad(what, &e),
        })
    }

    /// A root store of the CA certificates in it.
    pub(crate) fn roots(&self, what: &str) -> Result<RootCertStore, WfError> {
        let mut roots = RootCertStore::empty();
        for cert in self.certificates(what)? {
            roots.add(cert).map_err(|e| {
                WfError::InvalidArgument(format!(
                    "a certificate in the {what} ({}) cannot be a trust anchor: {e}",
                    self.origin()
                ))
            })?;
        }
        Ok(roots)
    }

    fn bad(&self, what: &str, e: &pem::Error) -> WfError {
        WfError::InvalidArgument(format!(
            "the {what} ({}) is not valid PEM: {e}",
            self.origin()
        ))
    }
}

/// rustls's crypto provider: `ring`.
pub(crate) fn provider() -> Arc<CryptoProvider> {
    Arc::new(rustls::crypto::ring::default_provider())
}

/// The rustls error under `err`, looked for down its chain of sources (and inside the
/// `io::Error`s that carry it, whose `source` skips it).
pub(crate) fn rustls_error<'a>(
    err: &'a (dyn std::error::Error + 'static),
) -> Option<&'a rustls::Error> {
    let mut next = Some(err);
    while let Some(e) = next {
        if let Some(found) = e.downcast_ref::<rustls::Error>() {
            return Some(found);
        }
        if let Some(io) = e.downcast_ref::<std::io::Error>() {
            if let Some(found) = io.get_ref().and_then(|i| i.downcast_ref::<rustls::Error>()) {
                return Some(found);
            }
        }
        next = e.source();
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pem_errors_name_the_file_and_what_it_should_hold() {
        let missing = Pem::File("/nonexistent/ca.pem".into());
        let e = missing.certificates("CA certificates").unwrap_err();
        assert!(e.to_string().contains("/nonexistent/ca.pem"), "{e}");
        let empty = Pem::Bytes(b"not pem at all".to_vec());
        let e = empty.certificates("CA certificates").unwrap_err();
        assert!(e.to_string().contains("no PEM certificate"), "{e}");
        let e = empty.private_key("server's private key").unwrap_err();
        assert!(e.to_string().contains("no PEM private key"), "{e}");
        assert!(!format!("{empty:?}").contains("not pem"));
    }
}
