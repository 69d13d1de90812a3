//! One HTTP/1.1 keep-alive connection through hyper's connection API, over TLS for `https://`.

use anyhow::Context;

pub(super) type Sender =
    hyper::client::conn::http1::SendRequest<http_body_util::Full<bytes::Bytes>>;

/// Where the writers connect: the daemon's `host:port`, over TLS for an `https://` URL.
pub(super) struct Endpoint {
    pub(super) authority: String,
    tls: Option<(
        tokio_rustls::TlsConnector,
        rustls::pki_types::ServerName<'static>,
    )>,
}

impl Endpoint {
    pub(super) fn of(base: &str, ca_cert: Option<&std::path::Path>) -> anyhow::Result<Self> {
        let uri = base
            .parse::<axum::http::Uri>()
            .with_context(|| format!("{:?} is not a URL", crate::redact::redact_userinfo(base)))?;
        let authority = uri
            .authority()
            .with_context(|| format!("no host:port in {}", crate::redact::redact_userinfo(base)))?;
        let tls = match uri.scheme_str() {
            Some("https") => Some((
                tokio_rustls::TlsConnector::from(crate::tls::client_config(ca_cert)?),
                crate::tls::server_name(authority.host())?,
            )),
            _ => None,
        };
        Ok(Self {
            authority: authority.as_str().to_owned(),
            tls,
        })
    }

    pub(super) async fn connect(&self) -> anyhow::Result<Sender> {
        use hyper::client::conn::http1::handshake;
        use hyper_util::rt::TokioIo;
        let stream = tokio::net::TcpStream::connect(&self.authority).await?;
        stream.set_nodelay(true)?;
        let sender = match &self.tls {
            None => {
                let (sender, connection) = handshake(TokioIo::new(stream)).await?;
                tokio::spawn(connection);
                sender
            }
            Some((connector, name)) => {
                let stream = connector.connect(name.clone(), stream).await?;
                let (sender, connection) = handshake(TokioIo::new(stream)).await?;
                tokio::spawn(connection);
                sender
            }
        };
        Ok(sender)
    }
}

/// Sends one request and reads its whole answer: its status.
pub(super) async fn exchange(
    sender: &mut Sender,
    request: axum::http::Request<http_body_util::Full<bytes::Bytes>>,
) -> anyhow::Result<u16> {
    use http_body_util::BodyExt;
    sender.ready().await?;
    let response = sender.send_request(request).await?;
    let status = response.status().as_u16();
    response.into_body().collect().await?;
    Ok(status)
}
