//! TLS through rustls with ring: the daemon's certificate (`serve --tls-cert/--tls-key`) and the
//! trust of every client command (`--ca-cert`, or the system's roots). No OpenSSL anywhere.

use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, ServerName};
use std::path::{Path, PathBuf};
use std::sync::Arc;

#[derive(Debug, thiserror::Error)]
pub enum TlsError {
    #[error("cannot read {what} {path}: {reason}")]
    Unreadable {
        what: &'static str,
        path: PathBuf,
        reason: String,
    },
    #[error("{path} holds no PEM certificate")]
    NoCertificate { path: PathBuf },
    #[error("the certificate and key do not make a usable TLS identity: {0}")]
    Identity(rustls::Error),
    #[error("cannot load the system's trusted certificates: {0}")]
    SystemRoots(rustls::Error),
    #[error("{0:?} is not a host name a certificate can be checked against")]
    ServerName(String),
}

/// Makes ring the process's one crypto provider; reqwest's and the daemon's TLS both use it.
pub fn install_crypto_provider() {
    // Fails only when a provider is already installed, which is then the one in use.
    let _ = rustls::crypto::ring::default_provider().install_default();
}

fn certificates(path: &Path) -> Result<Vec<CertificateDer<'static>>, TlsError> {
    let unreadable = |reason: String| TlsError::Unreadable {
        what: "the certificate file",
        path: path.to_owned(),
        reason,
    };
    let certificates = CertificateDer::pem_file_iter(path)
        .map_err(|e| unreadable(e.to_string()))?
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| unreadable(e.to_string()))?;
    if certificates.is_empty() {
        return Err(TlsError::NoCertificate {
            path: path.to_owned(),
        });
    }
    Ok(certificates)
}

/// The daemon's TLS identity: a PEM certificate chain and its private key.
pub fn server_config(cert: &Path, key: &Path) -> Result<Arc<rustls::ServerConfig>, TlsError> {
    install_crypto_provider();
    let chain = certificates(cert)?;
    let key = PrivateKeyDer::from_pem_file(key).map_err(|e| TlsError::Unreadable {
        what: "the private key file",
        path: key.to_owned(),
        reason: e.to_string(),
    })?;
    let mut config = rustls::ServerConfig::builder()
        .with_no_client_auth()
        .with_single_cert(chain, key)
        .map_err(TlsError::Identity)?;
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    Ok(Arc::new(config))
}

/// The client side for code that speaks to the daemon below reqwest (the bench's connections):
/// only `ca_cert`'s certificates when given, else the system's trusted roots.
pub fn client_config(ca_cert: Option<&Path>) -> Result<Arc<rustls::ClientConfig>, TlsError> {
    install_crypto_provider();
    let mut config = match ca_cert {
        Some(path) => {
            let mut roots = rustls::RootCertStore::empty();
            for certificate in certificates(path)? {
                roots.add(certificate).map_err(|e| TlsError::Unreadable {
                    what: "the CA certificate",
                    path: path.to_owned(),
                    reason: e.to_string(),
                })?;
            }
            rustls::ClientConfig::builder()
                .with_root_certificates(roots)
                .with_no_client_auth()
        }
        None => {
            use rustls_platform_verifier::ConfigVerifierExt;
            rustls::ClientConfig::with_platform_verifier().map_err(TlsError::SystemRoots)?
        }
    };
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    Ok(Arc::new(config))
}

/// The name a daemon's certificate must carry, from the host of its URL.
pub fn server_name(host: &str) -> Result<ServerName<'static>, TlsError> {
    let bare = host.trim_start_matches('[').trim_end_matches(']');
    ServerName::try_from(bare.to_owned()).map_err(|_| TlsError::ServerName(host.to_owned()))
}

/// A reqwest client for the daemon: trusting only `ca_cert`'s certificates when given (a private
/// CA), else the system's roots.
pub fn http_client(
    builder: reqwest::ClientBuilder,
    ca_cert: Option<&Path>,
) -> Result<reqwest::Client, ClientError> {
    install_crypto_provider();
    let builder = match ca_cert {
        Some(path) => {
            let pem = std::fs::read(path).map_err(|e| {
                ClientError::Tls(TlsError::Unreadable {
                    what: "the CA certificate file",
                    path: path.to_owned(),
                    reason: e.to_string(),
                })
            })?;
            let roots = reqwest::Certificate::from_pem_bundle(&pem).map_err(|e| {
                ClientError::Tls(TlsError::Unreadable {
                    what: "the CA certificate file",
                    path: path.to_owned(),
                    reason: e.to_string(),
                })
            })?;
            if roots.is_empty() {
                return Err(ClientError::Tls(TlsError::NoCertificate {
                    path: path.to_owned(),
                }));
            }
            builder.tls_certs_only(roots)
        }
        None => builder,
    };
    builder.build().map_err(ClientError::Build)
}

#[derive(Debug, thiserror::Error)]
pub enum ClientError {
    #[error(transparent)]
    Tls(TlsError),
    #[error("failed to build the HTTP client: {0}")]
    Build(reqwest::Error),
}
