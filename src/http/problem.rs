//! The one error shape of the HTTP edge: RFC 9457 problem details, with the write members of
//! API.md when the problem answers a write.

use crate::api::problem::ProblemType;
use crate::store::StoreError;
use axum::http::{header, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use serde::Serialize;

/// What every response to a PUT carries, success or problem.
#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub struct WriteMembers {
    pub resource: String,
    pub outcome: &'static str,
    pub token: Option<i64>,
    pub highest_token: i64,
    pub revision: i64,
    pub idempotency_key: Option<String>,
    pub audit_id: i64,
}

/// A problem answer: its type (which gives its status, slug and title), what happened, and
/// what goes with it.
#[derive(Debug, Clone)]
pub struct Problem {
    pub kind: ProblemType,
    pub detail: String,
    /// Extension members: the write members of a PUT, or a lease's holder and expiry.
    pub members: Option<Box<serde_json::Map<String, serde_json::Value>>>,
    pub etag: Option<String>,
    /// Why a `5xx` happened, for the log only: an internal error's details never reach the
    /// client. `log_failures` writes it.
    pub cause: Option<String>,
    /// Seconds to wait before retrying (`Retry-After`), for `429`. Two bytes: a larger
    /// `Problem` would make every `Result<_, Problem>` larger.
    pub retry_after: Option<u16>,
}

/// The cause of a `5xx` answer, carried on the response for the logging middleware.
#[derive(Debug, Clone)]
pub struct FailureCause(pub String);

#[derive(Serialize)]
struct ProblemBody<'a> {
    #[serde(rename = "type")]
    kind: ProblemType,
    title: &'a str,
    status: u16,
    detail: &'a str,
    #[serde(flatten)]
    members: Option<&'a serde_json::Map<String, serde_json::Value>>,
}

impl Problem {
    pub fn new(kind: ProblemType, detail: impl Into<String>) -> Self {
        Self {
            kind,
            detail: detail.into(),
            members: None,
            etag: None,
            cause: None,
            retry_after: None,
        }
    }

    /// `400 invalid-request`, the most common problem, by name.
    pub fn invalid_request(detail: impl Into<String>) -> Self {
        Self::new(ProblemType::InvalidRequest, detail)
    }

    /// `503 unavailable`: the database cannot be reached now; retry later.
    pub fn unavailable(detail: impl Into<String>) -> Self {
        Self::new(ProblemType::Unavailable, detail)
    }

    /// `500 internal`: a bug; details are in the daemon's log, not in the response.
    pub fn internal() -> Self {
        Self::new(
            ProblemType::Internal,
            "the daemon failed; its log has the details",
        )
    }

    /// `500 internal`, with its cause kept for the log.
    pub fn internal_because(cause: impl std::fmt::Display) -> Self {
        Self {
            cause: Some(cause.to_string()),
            ..Self::internal()
        }
    }

    pub fn status(&self) -> StatusCode {
        status_of(self.kind)
    }

    pub fn with_members(mut self, members: impl Serialize) -> Self {
        if let Ok(serde_json::Value::Object(map)) = serde_json::to_value(members) {
            self.members = Some(Box::new(map));
        }
        self
    }

    pub fn with_etag(mut self, etag: String) -> Self {
        self.etag = Some(etag);
        self
    }

    /// Sets `Retry-After`, in seconds (at most `u16::MAX`).
    pub fn with_retry_after(mut self, seconds: u64) -> Self {
        self.retry_after = Some(u16::try_from(seconds).unwrap_or(u16::MAX));
        self
    }
}

/// The status a problem type is answered with.
fn status_of(kind: ProblemType) -> StatusCode {
    StatusCode::from_u16(kind.status()).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR)
}

impl From<StoreError> for Problem {
    fn from(error: StoreError) -> Self {
        match error {
            StoreError::Unavailable(_)
            | StoreError::QueueClosed
            | StoreError::BatchLost
            | StoreError::Contention { .. } => {
                Problem::unavailable(format!("the database cannot take the request now: {error}"))
            }
            StoreError::TimedOut(_) => Problem::unavailable(format!(
                "{error}; a write's outcome is unknown until it is retried with the same \
                 Idempotency-Key"
            )),
            StoreError::Internal(_) | StoreError::Invariant(_) | StoreError::Open(_) => {
                Problem::internal_because(error)
            }
        }
    }
}

impl IntoResponse for Problem {
    fn into_response(self) -> Response {
        let status = self.status();
        let body = ProblemBody {
            kind: self.kind,
            title: self.kind.title(),
            status: status.as_u16(),
            detail: &self.detail,
            members: self.members.as_deref(),
        };
        let mut response = (status, json_bytes(&body)).into_response();
        let headers = response.headers_mut();
        headers.insert(
            header::CONTENT_TYPE,
            HeaderValue::from_static("application/problem+json"),
        );
        if let Some(etag) = self.etag.and_then(|e| HeaderValue::from_str(&e).ok()) {
            headers.insert(header::ETAG, etag);
        }
        if status == StatusCode::UNAUTHORIZED {
            headers.insert(header::WWW_AUTHENTICATE, HeaderValue::from_static("Bearer"));
        }
        if let Some(seconds) = self.retry_after {
            headers.insert(header::RETRY_AFTER, HeaderValue::from(seconds));
        }
        if status == StatusCode::REQUEST_TIMEOUT {
            // The rest of a stalled body may still come: the connection cannot carry another
            // request, and must not hold its slot.
            headers.insert(header::CONNECTION, HeaderValue::from_static("close"));
        }
        if status.is_server_error() {
            let cause = self.cause.unwrap_or(self.detail);
            response.extensions_mut().insert(FailureCause(cause));
        }
        response
    }
}

/// `200 OK` with a JSON body.
pub(crate) fn json_ok(body: &impl Serialize) -> Response {
    let mut response = (StatusCode::OK, json_bytes(body)).into_response();
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    response
}

/// Serialises a body that cannot fail to serialise (plain structs of strings and numbers).
pub(crate) fn json_bytes<T: Serialize>(value: &T) -> Vec<u8> {
    serde_json::to_vec(value).unwrap_or_else(|error| {
        tracing::error!(%error, "failed to serialise a response body");
        let internal = ProblemType::Internal;
        format!(
            r#"{{"type":"{}","title":"{}","status":{},"detail":"serialisation failed"}}"#,
            internal.slug(),
            internal.title(),
            internal.status()
        )
        .into_bytes()
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_problem_type_has_a_valid_status() {
        for kind in ProblemType::ALL {
            assert_eq!(status_of(kind).as_u16(), kind.status(), "{kind:?}");
        }
    }

    #[tokio::test]
    async fn a_problem_answers_with_its_types_status_slug_and_title() {
        let response = Problem::new(ProblemType::LeaseHeld, "held by w1")
            .with_members(serde_json::json!({"holder": "w1"}))
            .into_response();
        assert_eq!(response.status(), StatusCode::CONFLICT);
        assert_eq!(
            response.headers()[header::CONTENT_TYPE],
            "application/problem+json"
        );
        let body = axum::body::to_bytes(response.into_body(), usize::MAX)
            .await
            .unwrap();
        let body: serde_json::Value = serde_json::from_slice(&body).unwrap();
        assert_eq!(
            body,
            serde_json::json!({
                "type": "lease-held",
                "title": "Lease held",
                "status": 409,
                "detail": "held by w1",
                "holder": "w1",
            })
        );
    }

    #[test]
    fn a_retry_after_beyond_two_bytes_is_the_longest_it_can_say() {
        let problem = Problem::new(ProblemType::TooManyRequests, "slow down");
        assert_eq!(problem.clone().with_retry_after(30).retry_after, Some(30));
        assert_eq!(
            problem.with_retry_after(1 << 20).retry_after,
            Some(u16::MAX)
        );
    }
}
