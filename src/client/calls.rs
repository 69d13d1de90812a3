//! Calls whose answer the caller takes as the daemon gave it: the lease actions and fenced
//! writes, which `fencewatch lease` and `write` print and the demo's workers make.

use super::encode::{encode_path, encode_segment};
use super::{ClientError, DaemonClient};
use crate::api::leases::{AcquireRequest, ReleaseRequest, RenewRequest};
use crate::api::problem::ProblemSummary;
use reqwest::Method;
use serde::de::DeserializeOwned;

/// The daemon's answer: its status and body, unread.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Answer {
    pub status: u16,
    pub body: String,
}

impl Answer {
    pub fn is_success(&self) -> bool {
        (200..300).contains(&self.status)
    }

    /// The problem the body describes, if it is one.
    pub fn problem(&self) -> ProblemSummary {
        ProblemSummary::read(self.body.as_bytes())
    }

    /// The body as `T`.
    pub fn read<T: DeserializeOwned>(&self) -> Result<T, serde_json::Error> {
        serde_json::from_str(&self.body)
    }
}

/// A fenced write: the token it is made with, the optional conditions and labels, the value.
#[derive(Debug, Clone, Default)]
pub struct WriteRequest<'a> {
    pub token: &'a str,
    pub idempotency_key: Option<&'a str>,
    /// The revision the resource must be at (`If-Match`).
    pub if_match: Option<i64>,
    pub lease: Option<&'a str>,
    pub owner: Option<&'a str>,
    pub content_type: Option<&'a str>,
    pub body: Vec<u8>,
}

impl DaemonClient {
    pub async fn acquire(
        &self,
        lease: &str,
        request: &AcquireRequest,
    ) -> Result<Answer, ClientError> {
        self.lease_action(lease, "acquire", request).await
    }

    pub async fn renew(&self, lease: &str, request: &RenewRequest) -> Result<Answer, ClientError> {
        self.lease_action(lease, "renew", request).await
    }

    pub async fn release(
        &self,
        lease: &str,
        request: &ReleaseRequest,
    ) -> Result<Answer, ClientError> {
        self.lease_action(lease, "release", request).await
    }

    /// `GET /v1/leases/{name}`: the lease as last granted.
    pub async fn show_lease(&self, lease: &str) -> Result<Answer, ClientError> {
        let path = format!("/v1/leases/{}", encode_segment(lease));
        self.answer(&path, self.request(Method::GET, &path)).await
    }

    async fn lease_action(
        &self,
        lease: &str,
        action: &str,
        body: &impl serde::Serialize,
    ) -> Result<Answer, ClientError> {
        let path = format!("/v1/leases/{}/{action}", encode_segment(lease));
        self.answer(&path, self.request(Method::POST, &path).json(body))
            .await
    }

    /// `PUT /v1/resources/{key}`.
    pub async fn write(&self, key: &str, write: WriteRequest<'_>) -> Result<Answer, ClientError> {
        let path = format!("/v1/resources/{}", encode_path(key));
        let mut request = self
            .request(Method::PUT, &path)
            .header("Fencing-Token", write.token)
            .body(write.body);
        let optional = [
            ("Idempotency-Key", write.idempotency_key.map(str::to_owned)),
            ("If-Match", write.if_match.map(|r| format!("\"{r}\""))),
            ("Fencing-Lease", write.lease.map(str::to_owned)),
            ("Fencing-Owner", write.owner.map(str::to_owned)),
            ("Content-Type", write.content_type.map(str::to_owned)),
        ];
        for (name, value) in optional {
            if let Some(value) = value {
                request = request.header(name, value);
            }
        }
        self.answer(&path, request).await
    }

    async fn answer(
        &self,
        path: &str,
        request: reqwest::RequestBuilder,
    ) -> Result<Answer, ClientError> {
        let response = self.send(request).await?;
        let status = response.status().as_u16();
        let body = response
            .text()
            .await
            .map_err(|source| ClientError::Unreadable {
                path: path.to_owned(),
                source: super::quiet(source),
            })?;
        Ok(Answer { status, body })
    }
}
