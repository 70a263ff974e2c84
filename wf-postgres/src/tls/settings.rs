//! The public TLS settings: [`SslMode`], [`RootCerts`], [`ClientCert`] and [`PostgresTls`],
//! the part of [`PostgresOptions`](crate::PostgresOptions) that overrides a connection
//! string's `sslmode`, `sslrootcert`, `sslcert` and `sslkey`.

use std::fmt;
use std::path::PathBuf;
use std::str::FromStr;

/// Whether and how a connection uses TLS: libpq's `sslmode`.
///
/// | mode | encrypted | certificate checked |
/// |---|---|---|
/// | `disable` | never | — |
/// | `prefer` (the default) | if the server offers TLS | no |
/// | `require` | always | no; the chain (as `verify-ca`) when a root certificate file is given |
/// | `verify-ca` | always | signed by a trusted CA |
/// | `verify-full` | always | signed by a trusted CA and issued for the host connected to |
///
/// Only `verify-full` defeats a machine in the middle; use it across any network you do not
/// own.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum SslMode {
    /// No TLS.
    Disable,
    /// TLS when the server offers it, unverified; plain otherwise (libpq's default).
    #[default]
    Prefer,
    /// TLS always; the certificate is not checked unless a root certificate file is given.
    Require,
    /// TLS always; the server's certificate must chain to a trusted CA (any host name).
    VerifyCa,
    /// TLS always; the certificate must chain to a trusted CA and name the host.
    VerifyFull,
}

impl SslMode {
    /// The name libpq gives the mode (`verify-full`, ...).
    pub fn as_str(self) -> &'static str {
        match self {
            SslMode::Disable => "disable",
            SslMode::Prefer => "prefer",
            SslMode::Require => "require",
            SslMode::VerifyCa => "verify-ca",
            SslMode::VerifyFull => "verify-full",
        }
    }
}

impl fmt::Display for SslMode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A value of `sslmode` that is none of libpq's modes (or one wf does not support: `allow`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UnknownSslMode(String);

impl fmt::Display for UnknownSslMode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let hint = if self.0 == "allow" {
            " (wf does not support \"allow\": use prefer)"
        } else {
            ""
        };
        write!(
            f,
            "sslmode={:?} is not a mode: use disable, prefer, require, verify-ca or \
             verify-full{hint}",
            self.0
        )
    }
}

impl std::error::Error for UnknownSslMode {}

impl FromStr for SslMode {
    type Err = UnknownSslMode;

    /// libpq's names: `disable`, `prefer`, `require`, `verify-ca`, `verify-full`.
    fn from_str(s: &str) -> Result<SslMode, UnknownSslMode> {
        Ok(match s {
            "disable" => SslMode::Disable,
            "prefer" => SslMode::Prefer,
            "require" => SslMode::Require,
            "verify-ca" => SslMode::VerifyCa,
            "verify-full" => SslMode::VerifyFull,
            other => return Err(UnknownSslMode(other.to_string())),
        })
    }
}

/// The CAs a connection trusts to sign the server's certificate: libpq's `sslrootcert`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RootCerts {
    /// The operating system's trusted CAs (`sslrootcert=system`): for a server whose
    /// certificate a public CA signed.
    System,
    /// The CA certificates in a PEM file (`sslrootcert=/path/ca.pem`), read when the store
    /// opens.
    File(PathBuf),
    /// CA certificates in PEM text (for a CA kept in a secret store rather than a file).
    Pem(String),
}

/// A client certificate and its private key, for servers that authenticate clients by
/// certificate (`hostssl ... cert` in `pg_hba.conf`): libpq's `sslcert` and `sslkey`.
///
/// The certificate is PEM (the client's certificate first, then any intermediates); the key is
/// PEM too, PKCS#8 (`BEGIN PRIVATE KEY`), RSA (`BEGIN RSA PRIVATE KEY`) or EC
/// (`BEGIN EC PRIVATE KEY`), not encrypted. Its `Debug` never shows the key.
#[derive(Clone, PartialEq, Eq)]
pub enum ClientCert {
    /// Read from two PEM files when the store opens.
    Files {
        /// The certificate chain's file (`sslcert`).
        cert: PathBuf,
        /// The private key's file (`sslkey`).
        key: PathBuf,
    },
    /// PEM text held in memory.
    Pem {
        /// The certificate chain.
        cert: String,
        /// The private key.
        key: String,
    },
}

impl fmt::Debug for ClientCert {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ClientCert::Files { cert, key } => f
                .debug_struct("Files")
                .field("cert", cert)
                .field("key", key)
                .finish(),
            ClientCert::Pem { cert, .. } => f
                .debug_struct("Pem")
                .field("cert", cert)
                .field("key", &"***")
                .finish(),
        }
    }
}

/// TLS to the server set in code; each field that is `Some` overrides the connection
/// string's key, each `None` leaves it to the string (and then to libpq's default).
///
/// ```
/// use wf_postgres::{PostgresOptions, PostgresTls, RootCerts, SslMode};
/// let options = PostgresOptions {
///     tls: PostgresTls {
///         mode: Some(SslMode::VerifyFull),
///         root_certs: Some(RootCerts::File("/etc/wf/db-ca.pem".into())),
///         ..Default::default()
///     },
///     ..Default::default()
/// };
/// # let _ = options;
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PostgresTls {
    /// Overrides `sslmode`.
    pub mode: Option<SslMode>,
    /// Overrides `sslrootcert`.
    pub root_certs: Option<RootCerts>,
    /// Overrides `sslcert` and `sslkey`.
    pub client_cert: Option<ClientCert>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn modes_read_and_print_as_libpq_names_them() {
        for mode in [
            SslMode::Disable,
            SslMode::Prefer,
            SslMode::Require,
            SslMode::VerifyCa,
            SslMode::VerifyFull,
        ] {
            assert_eq!(mode.to_string().parse::<SslMode>(), Ok(mode));
        }
        let e = "allow".parse::<SslMode>().unwrap_err().to_string();
        assert!(e.contains("use prefer"), "{e}");
        assert!("verify_full".parse::<SslMode>().is_err());
    }

    #[test]
    fn a_client_key_never_shows_in_debug() {
        let cert = ClientCert::Pem {
            cert: "CERT".into(),
            key: "-----BEGIN PRIVATE KEY-----secret".into(),
        };
        let shown = format!(
            "{:?}",
            PostgresTls {
                client_cert: Some(cert),
                ..Default::default()
            }
        );
        assert!(!shown.contains("secret"), "{shown}");
        assert!(shown.contains("CERT"), "{shown}");
    }
}
