//! One client of a running daemon, for every command that talks to one: `lease`, `write`, the
//! dashboard and the demo. It owns the base URL, the API key, TLS (through `crate::tls`) and
//! the encoding of names in URLs, and speaks in the wire types of `crate::api`.

mod audit;
mod calls;
pub mod encode;
mod events;

pub use audit::AuditRequest;
pub use calls::{Answer, WriteRequest};
pub use events::{backoff, Attach, StreamUpdate};

use crate::api::events::StatsView;
use crate::api::monitoring::{AlertList, OverlapList};
use crate::api::problem::ProblemSummary;
use crate::domain::OverlapState;
use serde::de::DeserializeOwned;
use std::time::Duration;

/// How long a read may take before the daemon counts as unreachable.
const READ_TIMEOUT: Duration = Duration::from_secs(10);

#[derive(Clone)]
pub struct DaemonClient {
    http: reqwest::Client,
    /// The daemon's base URL as given, userinfo and all: only requests see it.
    url: String,
    /// `url` as it may be shown: its userinfo masked (`crate::redact`). Every message and
    /// every error names the daemon by this; reqwest's errors lose their URL (`quiet`).
    shown_url: String,
    api_key: Option<String>,
}

impl DaemonClient {
    /// A client of the daemon at `base`; an `https://` daemon is trusted through `ca_cert`
    /// when given, else through the system's roots.
    pub fn new(
        base: &str,
        api_key: Option<String>,
        ca_cert: Option<&std::path::Path>,
    ) -> Result<Self, ClientError> {
        let url = base.trim_end_matches('/').to_owned();
        Ok(Self {
            http: crate::tls::http_client(reqwest::Client::builder(), ca_cert)?,
            shown_url: crate::redact::redact_userinfo(&url),
            url,
            api_key,
        })
    }

    /// The daemon's URL as it may be shown (any userinfo masked).
    pub fn base(&self) -> &str {
        &self.shown_url
    }

    fn request(&self, method: reqwest::Method, path: &str) -> reqwest::RequestBuilder {
        let request = self.http.request(method, format!("{}{path}", self.url));
        match &self.api_key {
            Some(key) => request.bearer_auth(key),
            None => request,
        }
    }

    async fn send(
        &self,
        request: reqwest::RequestBuilder,
    ) -> Result<reqwest::Response, ClientError> {
        request
            .send()
            .await
            .map_err(|source| ClientError::Unreachable {
                base: self.shown_url.clone(),
                source: quiet(source),
            })
    }

    /// GET `path` and read the answer as `T`.
    async fn read<T: DeserializeOwned>(&self, path: &str) -> Result<T, ClientError> {
        let request = self
            .request(reqwest::Method::GET, path)
            .timeout(READ_TIMEOUT);
        let response = self.send(request).await?;
        let status = response.status();
        let body = response
            .bytes()
            .await
            .map_err(|source| ClientError::Unreadable {
                path: path.to_owned(),
                source: quiet(source),
            })?;
        if !status.is_success() {
            return Err(ClientError::Status {
                path: path.to_owned(),
                status: status.as_u16(),
                detail: ProblemSummary::read(&body).detail.unwrap_or_default(),
            });
        }
        serde_json::from_slice(&body).map_err(|source| ClientError::BadAnswer {
            path: path.to_owned(),
            source,
        })
    }

    /// `GET /v1/stats`.
    pub async fn stats(&self) -> Result<StatsView, ClientError> {
        self.read("/v1/stats").await
    }

    /// `GET /v1/overlaps`: those in `state` (all without one), newest first, `limit` at most.
    pub async fn overlaps(
        &self,
        state: Option<OverlapState>,
        limit: u32,
    ) -> Result<OverlapList, ClientError> {
        let state = state.map_or("all", OverlapState::as_str);
        self.read(&format!("/v1/overlaps?state={state}&limit={limit}"))
            .await
    }

    /// `GET /v1/alerts`.
    pub async fn alerts(&self) -> Result<AlertList, ClientError> {
        self.read("/v1/alerts").await
    }
}

/// A reqwest error without the URL it would print (`… for url (http://user:secret@…)`): the
/// client's own messages name the daemon by its shown URL instead.
fn quiet(error: reqwest::Error) -> reqwest::Error {
    error.without_url()
}

#[derive(Debug, thiserror::Error)]
pub enum ClientError {
    #[error(transparent)]
    Setup(#[from] crate::tls::ClientError),
    #[error("failed to reach the daemon at {base}")]
    Unreachable {
        base: String,
        #[source]
        source: reqwest::Error,
    },
    #[error("failed to read the daemon's answer to {path}")]
    Unreadable {
        path: String,
        #[source]
        source: reqwest::Error,
    },
    #[error("{path}: {status}: {detail}")]
    Status {
        path: String,
        status: u16,
        detail: String,
    },
    #[error("bad answer from {path}")]
    BadAnswer {
        path: String,
        #[source]
        source: serde_json::Error,
    },
    #[error("the stream broke")]
    Stream(#[source] eventsource_stream::EventStreamError<reqwest::Error>),
}
