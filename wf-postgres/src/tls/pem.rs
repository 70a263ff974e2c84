//! Reading the PEM that the settings name: CA certificates into a root store, a client
//! certificate chain and its private key. Every error names the file (or the setting the text
//! came from) and says what to do.

use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use rustls::RootCertStore;
use std::path::Path;

/// PEM text and where it came from, for messages (`/etc/wf/ca.pem (sslrootcert)`).
pub(crate) struct Pem {
    pub(crate) text: Vec<u8>,
    pub(crate) origin: String,
}

impl Pem {
    /// Reads `path`, which `what` names (`sslrootcert`).
    pub(crate) fn file(path: &Path, what: &str) -> Result<Pem, String> {
        let origin = format!("{} ({what})", path.display());
        let text = std::fs::read(path).map_err(|e| format!("cannot read {origin}: {e}"))?;
        Ok(Pem { text, origin })
    }

    /// PEM text given in code, `what` naming the setting.
    pub(crate) fn text(text: &str, what: &str) -> Pem {
        Pem {
            text: text.as_bytes().to_vec(),
            origin: format!("the PEM text of {what}"),
        }
    }

    /// The certificates, in order (at least one).
    pub(crate) fn certs(&self) -> Result<Vec<CertificateDer<'static>>, String> {
        let certs = CertificateDer::pem_slice_iter(&self.text)
            .collect::<Result<Vec<_>, _>>()
            .map_err(|e| format!("{} is not valid PEM: {e}", self.origin))?;
        if certs.is_empty() {
            return Err(format!(
                "{} holds no certificate (no -----BEGIN CERTIFICATE----- block)",
                self.origin
            ));
        }
        Ok(certs)
    }

    /// The one private key (PKCS#8, RSA or EC, not encrypted).
    pub(crate) fn key(&self) -> Result<PrivateKeyDer<'static>, String> {
        let encrypted = String::from_utf8_lossy(&self.text).contains("ENCRYPTED");
        if encrypted {
            return Err(format!(
                "{} is an encrypted private key, which wf cannot read (no sslpassword): \
                 store it decrypted, readable only by this service's user \
                 (openssl pkey -in KEY -out KEY.plain)",
                self.origin
            ));
        }
        PrivateKeyDer::from_pem_slice(&self.text).map_err(|e| match e {
            rustls::pki_types::pem::Error::NoItemsFound => format!(
                "{} holds no private key (no -----BEGIN PRIVATE KEY-----, BEGIN RSA PRIVATE \
                 KEY or BEGIN EC PRIVATE KEY block)",
                self.origin
            ),
            e => format!("{} is not a valid PEM private key: {e}", self.origin),
        })
    }

    /// The certificates as trust anchors.
    pub(crate) fn root_store(&self) -> Result<RootCertStore, String> {
        let mut roots = RootCertStore::empty();
        for (n, cert) in self.certs()?.into_iter().enumerate() {
            roots.add(cert).map_err(|e| {
                format!(
                    "{}: certificate {} cannot be a trusted CA: {e}",
                    self.origin,
                    n + 1
                )
            })?;
        }
        Ok(roots)
    }
}

/// The operating system's trusted CAs (`sslrootcert=system`, or no `sslrootcert` and no
/// `~/.postgresql/root.crt`).
pub(crate) fn system_roots() -> Result<RootCertStore, String> {
    let found = rustls_native_certs::load_native_certs();
    let mut roots = RootCertStore::empty();
    let (added, _ignored) = roots.add_parsable_certificates(found.certs);
    if added == 0 {
        let why = found
            .errors
            .first()
            .map(|e| format!(" ({e})"))
            .unwrap_or_default();
        return Err(format!(
            "found no trusted CA certificates on this machine{why}: install the system's CA \
             bundle (Debian: ca-certificates), or set sslrootcert to the CA file that signed \
             the server's certificate"
        ));
    }
    Ok(roots)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unreadable_or_empty_files_are_named() {
        let e = Pem::file(Path::new("/nonexistent/ca.pem"), "sslrootcert")
            .err()
            .unwrap();
        assert!(
            e.starts_with("cannot read /nonexistent/ca.pem (sslrootcert): "),
            "{e}"
        );
        let pem = Pem::text("not pem at all", "PostgresTls::root_certs");
        let e = pem.certs().unwrap_err();
        assert!(
            e.contains("PostgresTls::root_certs holds no certificate"),
            "{e}"
        );
        let e = pem.key().unwrap_err();
        assert!(e.contains("holds no private key"), "{e}");
    }

    #[test]
    fn encrypted_keys_are_refused_with_a_way_out() {
        let pem = Pem::text(
            "-----BEGIN ENCRYPTED PRIVATE KEY-----\nAAAA\n-----END ENCRYPTED PRIVATE KEY-----\n",
            "sslkey",
        );
        let e = pem.key().unwrap_err();
        assert!(
            e.contains("encrypted private key") && e.contains("openssl pkey"),
            "{e}"
        );
    }
}
