//! What a failed connection means, in words, when TLS (or its absence) is the cause: the
//! server's certificate refused (unknown CA, another host's name, expired), the server
//! without TLS, the server refusing a connection without TLS or without a client certificate.
//! The text names the settings to change; it never holds a password (none is at hand here).

use super::About;
use rustls::{AlertDescription, CertificateError};
use std::error::Error as StdError;
use wf_core::store::BackendErrorKind;

/// The failure of a connection attempt explained, or `None` when TLS has nothing to do with
/// it (the caller then reports the error as it is).
pub(crate) fn explain(
    e: &tokio_postgres::Error,
    about: &About,
) -> Option<(BackendErrorKind, String)> {
    if let Some(db) = e.as_db_error() {
        let hint = db_hint(db.message(), about)?;
        let said = format!("{} ({}): {hint}", db.message(), db.code().code());
        return Some((BackendErrorKind::Invalid, said));
    }
    if let Some(tls) = rustls_error(e) {
        return Some(tls_hint(tls, about));
    }
    if causes(e).contains("server does not support TLS") {
        return Some((
            BackendErrorKind::Invalid,
            format!(
                "the server does not support TLS (its postgresql.conf has ssl = off), but \
                 sslmode={} requires TLS: turn ssl on in the server's configuration, or use \
                 sslmode=prefer to allow unencrypted connections",
                about.mode
            ),
        ));
    }
    None
}

/// `e` and its causes, `: `-separated (tokio-postgres's `Display` shows only its own kind:
/// "error performing TLS handshake").
pub(crate) fn causes(e: &tokio_postgres::Error) -> String {
    let mut said = e.to_string();
    let mut next = e.source();
    while let Some(cause) = next {
        said.push_str(": ");
        said.push_str(&cause.to_string());
        next = cause.source();
    }
    said
}

/// A hint for the server's refusals that TLS settings cause.
fn db_hint(message: &str, about: &About) -> Option<String> {
    // "no pg_hba.conf entry for host ..., no encryption" (only `hostssl` lines match) or
    // "pg_hba.conf rejects connection for host ..., no encryption" (`hostnossl ... reject`).
    if message.contains("pg_hba.conf") && message.ends_with("no encryption") {
        return Some(format!(
            "the server requires TLS (its pg_hba.conf refuses connections without \
             encryption): use sslmode=require or stronger, not sslmode={}",
            about.mode
        ));
    }
    if message.contains("connection requires a valid client certificate") {
        return Some(match &about.client_cert {
            None => "the server requires a client certificate for this user: set sslcert and \
                     sslkey (or PostgresTls::client_cert)"
                .to_string(),
            Some(cert) => format!(
                "the server requires a valid client certificate, and {cert} was not accepted"
            ),
        });
    }
    if message.starts_with("certificate authentication failed for user") {
        return Some(
            "the client certificate's common name (CN) must be the user name, or be mapped to \
             it in the server's pg_ident.conf"
                .to_string(),
        );
    }
    None
}

/// The rustls error somewhere in `e`'s chain (tokio-postgres wraps it in an `io::Error`,
/// whose `source` skips its own payload, so payloads are opened too).
fn rustls_error<'a>(e: &'a (dyn StdError + 'static)) -> Option<&'a rustls::Error> {
    let mut next = Some(e);
    while let Some(err) = next {
        if let Some(tls) = err.downcast_ref::<rustls::Error>() {
            return Some(tls);
        }
        if let Some(inner) = err
            .downcast_ref::<std::io::Error>()
            .and_then(|io| io.get_ref())
        {
            if let Some(tls) = rustls_error(inner) {
                return Some(tls);
            }
        }
        next = err.source();
    }
    None
}

/// A rustls failure in words.
fn tls_hint(e: &rustls::Error, about: &About) -> (BackendErrorKind, String) {
    let roots = about.roots.as_deref().unwrap_or("the trusted CAs");
    let said = match e {
        rustls::Error::InvalidCertificate(cert) => match cert {
            CertificateError::UnknownIssuer => format!(
                "the server's certificate is not signed by any of {roots} (unknown CA): set \
                 sslrootcert to the CA certificate that signed the server's certificate"
            ),
            CertificateError::NotValidForNameContext {
                expected,
                presented,
            } => format!(
                "the server's certificate is not valid for the host name {} (it is for {}): \
                 connect by a name the certificate carries, have the certificate reissued \
                 for this name, or use sslmode=verify-ca to check the CA only",
                expected.to_str(),
                names(presented)
            ),
            CertificateError::NotValidForName => {
                "the server's certificate is not valid for the host name connected to: \
                 connect by a name the certificate carries, or use sslmode=verify-ca to \
                 check the CA only"
                    .to_string()
            }
            CertificateError::ExpiredContext { time, not_after } => format!(
                "the server's certificate expired at {} (it is now {}): renew the server's \
                 certificate",
                when(not_after),
                when(time)
            ),
            CertificateError::Expired => {
                "the server's certificate has expired: renew the server's certificate".into()
            }
            CertificateError::NotValidYetContext { time, not_before } => format!(
                "the server's certificate is not valid before {} (it is now {}): check this \
                 machine's clock, or wait",
                when(not_before),
                when(time)
            ),
            CertificateError::NotValidYet => "the server's certificate is not valid yet: \
                                              check this machine's clock"
                .into(),
            other => format!("the server's certificate was refused: {other:?}"),
        },
        rustls::Error::AlertReceived(alert) => return client_cert_refused(*alert, about),
        other => format!("the TLS handshake with the server failed: {other}"),
    };
    let said = format!("{said} (sslmode={})", about.mode);
    (BackendErrorKind::Invalid, said)
}

/// The server ended the handshake with an alert: about the client's certificate, in
/// PostgreSQL's case (it verifies client certificates against its `ssl_ca_file`).
fn client_cert_refused(alert: AlertDescription, about: &About) -> (BackendErrorKind, String) {
    let said = match &about.client_cert {
        None => format!(
            "the server ended the TLS handshake ({alert:?}): it may require a client \
             certificate: set sslcert and sslkey (or PostgresTls::client_cert)"
        ),
        Some(cert) => format!(
            "the server refused the client certificate {cert} ({alert:?}): it must be signed \
             by a CA in the server's ssl_ca_file, and be valid now"
        ),
    };
    (BackendErrorKind::Invalid, said)
}

/// The names a certificate carries, from webpki's list (`DnsName("db.internal")`,
/// `IpAddress(10.0.0.5)`): `db.internal, 10.0.0.5`.
fn names(presented: &[String]) -> String {
    if presented.is_empty() {
        return "no host name at all".to_string();
    }
    let plain = |name: &String| {
        let inner = name
            .split_once('(')
            .and_then(|(_, rest)| rest.strip_suffix(')'))
            .unwrap_or(name);
        inner.trim_matches('"').to_string()
    };
    presented.iter().map(plain).collect::<Vec<_>>().join(", ")
}

/// A certificate time for people.
fn when(t: &rustls::pki_types::UnixTime) -> String {
    let ms = i64::try_from(t.as_secs().saturating_mul(1000)).unwrap_or(i64::MAX);
    wf_core::schedule::format_utc(ms)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tls::SslMode;
    use rustls::pki_types::{ServerName, UnixTime};
    use std::time::Duration;

    fn about(mode: SslMode, client_cert: Option<&str>) -> About {
        About {
            mode,
            roots: Some("the CAs in /ca.pem (sslrootcert)".into()),
            client_cert: client_cert.map(str::to_string),
        }
    }

    #[test]
    fn certificate_failures_say_what_to_change() {
        let a = about(SslMode::VerifyFull, None);
        let (kind, said) = tls_hint(
            &rustls::Error::InvalidCertificate(CertificateError::UnknownIssuer),
            &a,
        );
        assert_eq!(kind, BackendErrorKind::Invalid);
        assert!(
            said.contains("not signed by any of the CAs in /ca.pem (sslrootcert)"),
            "{said}"
        );
        let (_, said) = tls_hint(
            &rustls::Error::InvalidCertificate(CertificateError::NotValidForNameContext {
                expected: ServerName::try_from("db.internal").unwrap(),
                presented: vec![
                    "DnsName(\"localhost\")".into(),
                    "IpAddress(10.0.0.5)".into(),
                ],
            }),
            &a,
        );
        assert!(
            said.contains("host name db.internal (it is for localhost, 10.0.0.5)"),
            "{said}"
        );
        let (_, said) = tls_hint(
            &rustls::Error::InvalidCertificate(CertificateError::ExpiredContext {
                time: UnixTime::since_unix_epoch(Duration::from_secs(1_767_225_600)),
                not_after: UnixTime::since_unix_epoch(Duration::from_secs(1_735_689_600)),
            }),
            &a,
        );
        assert!(
            said.contains("expired at 2025-01-01T00:00:00Z (it is now 2026-01-01T00:00:00Z)"),
            "{said}"
        );
    }

    #[test]
    fn refusals_for_lack_of_tls_or_a_client_certificate_say_so() {
        let said = db_hint(
            "no pg_hba.conf entry for host \"127.0.0.1\", user \"u\", database \"d\", no encryption",
            &about(SslMode::Disable, None),
        )
        .unwrap();
        assert!(
            said.contains("the server requires TLS")
                && said.contains("use sslmode=require or stronger"),
            "{said}"
        );
        let said = db_hint(
            "connection requires a valid client certificate",
            &about(SslMode::Require, None),
        )
        .unwrap();
        assert!(said.contains("set sslcert and sslkey"), "{said}");
        let (_, said) = client_cert_refused(
            AlertDescription::UnknownCA,
            &about(SslMode::Require, Some("/c.pem (sslcert)")),
        );
        assert!(
            said.contains("refused the client certificate /c.pem (sslcert)"),
            "{said}"
        );
        assert_eq!(
            db_hint(
                "password authentication failed",
                &about(SslMode::Require, None)
            ),
            None
        );
    }
}
