//! Certificates for tests and benches (feature `testing`): [`TestPki`] makes a CA, a server
//! certificate signed by it and a client certificate signed by it, when the test runs, so
//! that no key file is ever kept in a repository. Not for production.
//!
//! May import: `server`, `client` (their public TLS types).

use crate::{ClientTls, TlsConfig};
use rcgen::{
    BasicConstraints, CertificateParams, CertifiedIssuer, DnType, ExtendedKeyUsagePurpose, IsCa,
    KeyPair, KeyUsagePurpose,
};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{SystemTime, UNIX_EPOCH};

/// A throwaway CA and the certificates it signed, as PEM text, and as files once
/// [`write_to`](Self::write_to) put them in a directory.
///
/// ```
/// # fn demo() -> Result<(), Box<dyn std::error::Error>> {
/// let pki = wf_http::testing::TestPki::generate(&["localhost", "127.0.0.1"])?;
/// let server = pki.server_tls(); // for ServeOptions::tls
/// let client = pki.client_tls(); // trusts the CA; pki.mtls_client() adds the client cert
/// # let _ = (server, client); Ok(()) }
/// ```
#[derive(Debug, Clone)]
pub struct TestPki {
    /// The CA's certificate.
    pub ca_pem: String,
    /// The server's certificate (for the names given), signed by the CA.
    pub server_cert_pem: String,
    /// The server's private key.
    pub server_key_pem: String,
    /// A client certificate (`CN=wf-test-client`), signed by the CA.
    pub client_cert_pem: String,
    /// The client's private key.
    pub client_key_pem: String,
}

/// A certificate for `names` (subject `CN=common_name`) for `usage`, signed by `ca`, and its
/// new key.
fn leaf(
    names: Vec<String>,
    common_name: &str,
    usage: ExtendedKeyUsagePurpose,
    ca: &CertifiedIssuer<'_, KeyPair>,
) -> Result<(rcgen::Certificate, KeyPair), rcgen::Error> {
    let mut params = CertificateParams::new(names)?;
    params
        .distinguished_name
        .push(DnType::CommonName, common_name);
    params.extended_key_usages = vec![usage];
    let key = KeyPair::generate()?;
    let cert = params.signed_by(&key, ca)?;
    Ok((cert, key))
}

/// The files [`TestPki::write_to`] wrote.
#[derive(Debug, Clone)]
pub struct TestPkiFiles {
    /// `ca.pem`.
    pub ca: PathBuf,
    /// `server.pem`.
    pub server_cert: PathBuf,
    /// `server.key`.
    pub server_key: PathBuf,
    /// `client.pem`.
    pub client_cert: PathBuf,
    /// `client.key`.
    pub client_key: PathBuf,
}

impl TestPki {
    /// A new CA, a server certificate for `server_names` (DNS names or IP addresses) and a
    /// client certificate, each with a fresh ECDSA P-256 key.
    pub fn generate(server_names: &[&str]) -> Result<TestPki, rcgen::Error> {
        let mut ca = CertificateParams::new(Vec::<String>::new())?;
        // A name of its own: two test CAs of one name would pass for each other by name.
        static MADE: AtomicU64 = AtomicU64::new(0);
        let nonce = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos() as u64);
        let name = format!(
            "wf test CA (throwaway) {}-{nonce:x}-{}",
            std::process::id(),
            MADE.fetch_add(1, Ordering::Relaxed)
        );
        ca.distinguished_name.push(DnType::CommonName, name);
        ca.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        ca.key_usages = vec![KeyUsagePurpose::KeyCertSign, KeyUsagePurpose::CrlSign];
        let ca = CertifiedIssuer::self_signed(ca, KeyPair::generate()?)?;

        let names: Vec<String> = server_names.iter().map(|n| n.to_string()).collect();
        let (server_cert, server_key) = leaf(
            names,
            "wf test server",
            ExtendedKeyUsagePurpose::ServerAuth,
            &ca,
        )?;
        let (client_cert, client_key) = leaf(
            Vec::new(),
            "wf-test-client",
            ExtendedKeyUsagePurpose::ClientAuth,
            &ca,
        )?;

        Ok(TestPki {
            ca_pem: ca.pem(),
            server_cert_pem: server_cert.pem(),
            server_key_pem: server_key.serialize_pem(),
            client_cert_pem: client_cert.pem(),
            client_key_pem: client_key.serialize_pem(),
        })
    }

    /// The server's TLS: its certificate, no client certificate required.
    pub fn server_tls(&self) -> TlsConfig {
        TlsConfig::from_pem(
            self.server_cert_pem.as_bytes(),
            self.server_key_pem.as_bytes(),
        )
        .expect("rcgen's certificate and key go together")
    }

    /// The server's TLS requiring a client certificate signed by this CA (mTLS).
    pub fn mtls_server(&self) -> TlsConfig {
        self.server_tls()
            .client_ca_pem(self.ca_pem.as_bytes())
            .expect("rcgen's CA is a valid trust anchor")
    }

    /// A client's TLS trusting this CA, with no client certificate.
    pub fn client_tls(&self) -> ClientTls {
        ClientTls::new().ca_pem(self.ca_pem.as_bytes())
    }

    /// A client's TLS trusting this CA and presenting the client certificate.
    pub fn mtls_client(&self) -> ClientTls {
        self.client_tls().client_cert_pem(
            self.client_cert_pem.as_bytes(),
            self.client_key_pem.as_bytes(),
        )
    }

    /// Writes the PEM files into `dir` (made if missing): `ca.pem`, `server.pem`,
    /// `server.key`, `client.pem`, `client.key`.
    pub fn write_to(&self, dir: &Path) -> std::io::Result<TestPkiFiles> {
        std::fs::create_dir_all(dir)?;
        let write = |name: &str, pem: &str| -> std::io::Result<PathBuf> {
            let path = dir.join(name);
            std::fs::write(&path, pem)?;
            Ok(path)
        };
        Ok(TestPkiFiles {
            ca: write("ca.pem", &self.ca_pem)?,
            server_cert: write("server.pem", &self.server_cert_pem)?,
            server_key: write("server.key", &self.server_key_pem)?,
            client_cert: write("client.pem", &self.client_cert_pem)?,
            client_key: write("client.key", &self.client_key_pem)?,
        })
    }
}
