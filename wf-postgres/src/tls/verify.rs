//! How the server's certificate is checked, per `sslmode`: `verify-full` runs rustls's WebPKI
//! verifier (chain to a trusted CA, validity dates, key usage, host name); `verify-ca` the same
//! but accepts a certificate issued for another name; `require` and `prefer` accept any
//! certificate. All check the handshake's signatures, so the session is bound to the key of
//! the certificate the server showed.

use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::client::WebPkiServerVerifier;
use rustls::crypto::{
    verify_tls12_signature, verify_tls13_signature, CryptoProvider, WebPkiSupportedAlgorithms,
};
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use rustls::{CertificateError, DigitallySignedStruct, Error, RootCertStore, SignatureScheme};
use std::sync::Arc;

/// What the server's certificate is checked for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Checks {
    /// Nothing (`prefer`, `require` without a root certificate file).
    None,
    /// The chain to a trusted CA (`verify-ca`, `require` with a root certificate file).
    Chain,
    /// The chain and the host name (`verify-full`).
    ChainAndName,
}

/// The server certificate verifier of one connection string.
#[derive(Debug)]
pub(crate) struct Verifier {
    /// WebPKI on the trusted CAs, and whether the host name is checked; `None`: nothing.
    webpki: Option<(Arc<WebPkiServerVerifier>, bool)>,
    /// The signature algorithms the handshake may use.
    algorithms: WebPkiSupportedAlgorithms,
}

impl Verifier {
    /// Checks `checks` against `roots` (not called for [`Checks::None`]).
    pub(crate) fn new(
        checks: Checks,
        roots: impl FnOnce() -> Result<RootCertStore, String>,
        provider: &Arc<CryptoProvider>,
    ) -> Result<Verifier, String> {
        let webpki = match checks {
            Checks::None => None,
            Checks::Chain | Checks::ChainAndName => {
                let webpki = WebPkiServerVerifier::builder_with_provider(
                    Arc::new(roots()?),
                    Arc::clone(provider),
                )
                .build()
                .map_err(|e| format!("cannot check certificates against these CAs: {e}"))?;
                Some((webpki, checks == Checks::ChainAndName))
            }
        };
        Ok(Verifier {
            webpki,
            algorithms: provider.signature_verification_algorithms,
        })
    }
}

impl ServerCertVerifier for Verifier {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        server_name: &ServerName<'_>,
        ocsp_response: &[u8],
        now: UnixTime,
    ) -> Result<ServerCertVerified, Error> {
        let Some((webpki, check_name)) = &self.webpki else {
            return Ok(ServerCertVerified::assertion());
        };
        let verified =
            webpki.verify_server_cert(end_entity, intermediates, server_name, ocsp_response, now);
        match verified {
            // WebPkiServerVerifier checks the chain first and the name last (rustls 0.23's
            // `verify_server_cert`), so a name error means that the chain passed.
            Err(Error::InvalidCertificate(
                CertificateError::NotValidForName | CertificateError::NotValidForNameContext { .. },
            )) if !check_name => Ok(ServerCertVerified::assertion()),
            other => other,
        }
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, Error> {
        verify_tls12_signature(message, cert, dss, &self.algorithms)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, Error> {
        verify_tls13_signature(message, cert, dss, &self.algorithms)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.algorithms.supported_schemes()
    }
}
