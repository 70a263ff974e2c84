//! TLS to the server, with rustls on the `ring` provider (no OpenSSL): the public settings
//! (`settings.rs`), the connection string's keys and the code's settings resolved by libpq's
//! rules into one rustls configuration ([`Tls::resolve`], here), the PEM it reads (`pem.rs`),
//! the certificate checks per `sslmode` (`verify.rs`), tokio-postgres's TLS hooks
//! (`stream.rs`) and what a failure means in words (`explain.rs`).
//!
//! May import `conninfo` (the string's keys); nothing else of the crate.
//!
//! libpq's rules kept here: `prefer` is the default; `require` checks the chain, as
//! `verify-ca`, when a root certificate file is given; `sslrootcert=system` means the
//! system's CAs and then `verify-full` (the default, and the only mode allowed with it). Where
//! wf differs from libpq: without `sslrootcert` the verifying modes use
//! `~/.postgresql/root.crt` if it exists and the system's CAs otherwise (libpq fails); a
//! `sslcert` file that does not exist is an error (libpq goes on without a certificate);
//! `~/.postgresql/postgresql.crt` and `.key` are used when they exist, as libpq does; the
//! `PG*` environment variables are not read.

mod explain;
mod pem;
mod settings;
mod stream;
mod verify;

use crate::conninfo::SslKeys;
pub(crate) use explain::{causes, explain};
use pem::Pem;
use rustls::ClientConfig;
pub use settings::{ClientCert, PostgresTls, RootCerts, SslMode, UnknownSslMode};
use std::path::PathBuf;
use std::sync::Arc;
pub(crate) use stream::MakeRustls;
use verify::{Checks, Verifier};

/// TLS for one connection string: what tokio-postgres is told, the handshakes, and what the
/// messages of a failure need to know.
pub(crate) struct Tls {
    /// tokio-postgres's mode (it knows no verify modes: those are `Require` with a verifier).
    pub(crate) mode: tokio_postgres::config::SslMode,
    /// The handshakes.
    pub(crate) connect: MakeRustls,
    /// The settings in words, for messages.
    pub(crate) about: About,
}

/// The resolved settings in words, for the messages that explain a failure.
#[derive(Debug, Clone)]
pub(crate) struct About {
    /// The mode in force.
    pub(crate) mode: SslMode,
    /// The CAs trusted, when the certificate is checked (`the CAs in /x/ca.pem (sslrootcert)`).
    pub(crate) roots: Option<String>,
    /// The client certificate offered, if any (`/c.pem (sslcert)`).
    pub(crate) client_cert: Option<String>,
}

/// Where the trusted CAs come from, and whether the user named them.
enum Roots {
    /// The system's: named (`sslrootcert=system`) or by default.
    System { named: bool },
    /// A file: named (`sslrootcert`) or libpq's default one; the setting's name.
    File(PathBuf, &'static str),
    /// PEM text given in code.
    Text(String),
}

impl Roots {
    /// The trust anchors, and how messages name them.
    fn load(&self) -> Result<(rustls::RootCertStore, String), String> {
        let pem = match self {
            Roots::System { .. } => {
                return Ok((pem::system_roots()?, "the system's trusted CAs".to_string()))
            }
            Roots::File(path, what) => Pem::file(path, what)?,
            Roots::Text(text) => Pem::text(text, "PostgresTls::root_certs"),
        };
        Ok((pem.root_store()?, format!("the CAs in {}", pem.origin)))
    }
}

/// libpq's default files, in `~/.postgresql/`, when they exist.
fn default_file(name: &str) -> Option<PathBuf> {
    let path = PathBuf::from(std::env::var_os("HOME")?)
        .join(".postgresql")
        .join(name);
    path.is_file().then_some(path)
}

impl Tls {
    /// Resolves the string's keys and the code's overrides. The error says which setting or
    /// file is wrong (and never quotes a password: none is involved).
    pub(crate) fn resolve(keys: &SslKeys, code: &PostgresTls) -> Result<Tls, String> {
        let string_mode = keys
            .mode
            .as_deref()
            .map(str::parse::<SslMode>)
            .transpose()
            .map_err(|e| e.to_string())?;
        let roots = match (&code.root_certs, keys.root_cert.as_deref()) {
            (Some(RootCerts::System), _) | (None, Some("system")) => Roots::System { named: true },
            (Some(RootCerts::File(path)), _) => Roots::File(path.clone(), "sslrootcert"),
            (Some(RootCerts::Pem(text)), _) => Roots::Text(text.clone()),
            (None, Some(path)) => Roots::File(path.into(), "sslrootcert"),
            (None, None) => match default_file("root.crt") {
                Some(path) => Roots::File(path, "libpq's default sslrootcert"),
                None => Roots::System { named: false },
            },
        };
        let named_system = matches!(roots, Roots::System { named: true });
        let mode = code.mode.or(string_mode).unwrap_or(if named_system {
            SslMode::VerifyFull
        } else {
            SslMode::Prefer
        });
        if named_system && mode != SslMode::VerifyFull {
            return Err(format!(
                "sslmode={mode} may not be used with sslrootcert=system (libpq's rule): the \
                 system's CAs sign certificates for any name, so only verify-full checks \
                 anything; use sslmode=verify-full"
            ));
        }
        // libpq: `require` with a root certificate file checks the chain, as verify-ca.
        let checks = match (mode, &roots) {
            (SslMode::Disable | SslMode::Prefer, _) => Checks::None,
            (SslMode::Require, Roots::System { .. }) => Checks::None,
            (SslMode::Require | SslMode::VerifyCa, _) => Checks::Chain,
            (SslMode::VerifyFull, _) => Checks::ChainAndName,
        };
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let mut roots_said = None;
        let verifier = Verifier::new(
            checks,
            || {
                let (store, said) = roots.load()?;
                roots_said = Some(said);
                Ok(store)
            },
            &provider,
        )?;
        let builder = ClientConfig::builder_with_provider(Arc::clone(&provider))
            .with_safe_default_protocol_versions()
            .map_err(|e| format!("cannot set up TLS: {e}"))?
            .dangerous()
            .with_custom_certificate_verifier(Arc::new(verifier));
        let identity = if mode == SslMode::Disable {
            None
        } else {
            client_identity(keys, code)?
        };
        let (mut config, client_cert) = match identity {
            None => (builder.with_no_client_auth(), None),
            Some((cert, key)) => {
                let config = builder
                    .with_client_auth_cert(cert.certs()?, key.key()?)
                    .map_err(|e| {
                        format!(
                            "the client certificate {} and its key {} cannot be used together: {e}",
                            cert.origin, key.origin
                        )
                    })?;
                (config, Some(cert.origin))
            }
        };
        // PostgreSQL 17 requires this ALPN for `sslnegotiation=direct`; older servers ignore it.
        config.alpn_protocols = vec![b"postgresql".to_vec()];
        Ok(Tls {
            mode: match mode {
                SslMode::Disable => tokio_postgres::config::SslMode::Disable,
                SslMode::Prefer => tokio_postgres::config::SslMode::Prefer,
                _ => tokio_postgres::config::SslMode::Require,
            },
            connect: MakeRustls::new(config),
            about: About {
                mode,
                roots: roots_said,
                client_cert,
            },
        })
    }
}

/// The client certificate and key to offer, if any: the code's, else `sslcert`/`sslkey`, else
/// libpq's default files when they exist.
fn client_identity(keys: &SslKeys, code: &PostgresTls) -> Result<Option<(Pem, Pem)>, String> {
    match &code.client_cert {
        Some(ClientCert::Files { cert, key }) => {
            return Ok(Some((
                Pem::file(cert, "sslcert")?,
                Pem::file(key, "sslkey")?,
            )))
        }
        Some(ClientCert::Pem { cert, key }) => {
            return Ok(Some((
                Pem::text(cert, "PostgresTls::client_cert"),
                Pem::text(key, "PostgresTls::client_cert's key"),
            )))
        }
        None => {}
    }
    let cert = match keys.cert.as_deref() {
        Some(path) => PathBuf::from(path),
        None => match default_file("postgresql.crt") {
            Some(path) => path,
            None if keys.key.is_some() => {
                return Err("sslkey is set but sslcert is not: set both, the client \
                            certificate and its private key"
                    .to_string())
            }
            None => return Ok(None),
        },
    };
    let key = match keys.key.as_deref() {
        Some(path) => PathBuf::from(path),
        None => default_file("postgresql.key").ok_or_else(|| {
            format!(
                "sslcert is {} but sslkey is not set: set sslkey to the certificate's private \
                 key",
                cert.display()
            )
        })?,
    };
    Ok(Some((
        Pem::file(&cert, "sslcert")?,
        Pem::file(&key, "sslkey")?,
    )))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A file in a directory of this test process's own, removed with it.
    struct Files(PathBuf);

    impl Files {
        fn new(name: &str) -> Files {
            let dir =
                std::env::temp_dir().join(format!("wf-tls-unit-{name}-{}", std::process::id()));
            std::fs::create_dir_all(&dir).unwrap();
            Files(dir)
        }

        fn ca(&self) -> String {
            let key = rcgen::KeyPair::generate().unwrap();
            let mut params = rcgen::CertificateParams::new(Vec::<String>::new()).unwrap();
            params.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
            let pem = params.self_signed(&key).unwrap().pem();
            let path = self.0.join("ca.pem");
            std::fs::write(&path, pem).unwrap();
            path.display().to_string()
        }
    }

    impl Drop for Files {
        fn drop(&mut self) {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }

    fn keys(mode: Option<&str>, root: Option<&str>) -> SslKeys {
        SslKeys {
            mode: mode.map(str::to_string),
            root_cert: root.map(str::to_string),
            ..Default::default()
        }
    }

    fn resolve(keys: &SslKeys) -> Result<About, String> {
        Tls::resolve(keys, &PostgresTls::default()).map(|tls| tls.about)
    }

    #[test]
    fn prefer_is_the_default_and_checks_nothing() {
        let about = resolve(&SslKeys::default()).unwrap();
        assert_eq!(about.mode, SslMode::Prefer);
        assert_eq!(about.roots, None);
    }

    #[test]
    fn require_checks_the_chain_only_when_a_root_file_is_given() {
        let files = Files::new("require");
        let ca = files.ca();
        let about = resolve(&keys(Some("require"), Some(&ca))).unwrap();
        assert_eq!(about.roots, Some(format!("the CAs in {ca} (sslrootcert)")));
        let about = resolve(&keys(Some("require"), None)).unwrap();
        assert_eq!(about.roots, None);
        let about = resolve(&keys(Some("verify-ca"), Some(&ca))).unwrap();
        assert_eq!(about.mode, SslMode::VerifyCa);
    }

    #[test]
    fn sslrootcert_system_means_verify_full_and_allows_nothing_weaker() {
        let about = resolve(&keys(None, Some("system"))).unwrap();
        assert_eq!(about.mode, SslMode::VerifyFull);
        assert_eq!(about.roots.as_deref(), Some("the system's trusted CAs"));
        let e = resolve(&keys(Some("require"), Some("system"))).unwrap_err();
        assert!(
            e.contains("sslmode=require may not be used with sslrootcert=system"),
            "{e}"
        );
    }

    #[test]
    fn code_settings_override_the_string() {
        let files = Files::new("override");
        let ca = std::fs::read_to_string(files.ca()).unwrap();
        let code = PostgresTls {
            mode: Some(SslMode::VerifyFull),
            root_certs: Some(RootCerts::Pem(ca)),
            ..Default::default()
        };
        let tls = Tls::resolve(&keys(Some("disable"), Some("/nonexistent/ca.pem")), &code).unwrap();
        assert_eq!(tls.about.mode, SslMode::VerifyFull);
        assert_eq!(
            tls.about.roots.as_deref(),
            Some("the CAs in the PEM text of PostgresTls::root_certs")
        );
        assert_eq!(tls.mode, tokio_postgres::config::SslMode::Require);
    }

    #[test]
    fn files_are_read_only_when_used_and_named_when_they_fail() {
        let e = resolve(&keys(Some("verify-full"), Some("/nonexistent/ca.pem"))).unwrap_err();
        assert!(
            e.starts_with("cannot read /nonexistent/ca.pem (sslrootcert): "),
            "{e}"
        );
        assert!(resolve(&keys(Some("disable"), Some("/nonexistent/ca.pem"))).is_ok());
        let e = resolve(&SslKeys {
            cert: Some("/nonexistent/c.pem".into()),
            key: Some("/nonexistent/k.pem".into()),
            ..Default::default()
        })
        .unwrap_err();
        assert!(e.contains("/nonexistent/c.pem (sslcert)"), "{e}");
    }

    #[test]
    fn a_client_key_without_its_certificate_or_the_reverse_is_refused() {
        let e = resolve(&SslKeys {
            key: Some("/k.pem".into()),
            ..Default::default()
        })
        .unwrap_err();
        assert!(e.contains("sslkey is set but sslcert is not"), "{e}");
        let e = resolve(&SslKeys {
            cert: Some("/c.pem".into()),
            ..Default::default()
        })
        .unwrap_err();
        assert!(e.contains("sslkey is not set"), "{e}");
    }

    #[test]
    fn an_unknown_mode_is_refused() {
        let e = resolve(&keys(Some("verify_full"), None)).unwrap_err();
        assert!(e.contains("sslmode=\"verify_full\" is not a mode"), "{e}");
    }
}
