//! The one error shape of the HTTP edge: RFC 9457 problem details, with the write members of
//! API.md when the problem answers a write.

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

#[derive(Debug, Clone)]
pub struct Problem {
    pub status: StatusCode,
    pub kind: &'static str,
    pub title: &'static str,
    pub detail: String,
    /// Extension members: the write members of a PUT, or a lease's holder and expiry.
    pub members: Option<Box<serde_json::Map<String, serde_json::Value>>>,
    pub etag: Option<String>,
    /// Why a `5xx` happened, for the log only: an internal error's details never reach the
    /// client. `log_failures` writes it.
    pub cause: Option<String>,
    /// Seconds to wait before retrying (`Retry-After`), for `429`. Two bytes, which fit beside
    /// the status: a larger `Problem` would make every `Result<_, Problem>` larger.
    pub retry_after: Option<u16>,
}

/// The cause of a `5xx` answer, carried on the response for the logging middleware.
#[derive(Debug, Clone)]
pub struct FailureCause(pub String);

#[derive(Serialize)]
struct ProblemBody<'a> {
    #[serde(rename = "type")]
    kind: &'a str,
    title: &'a str,
    status: u16,
    detail: &'a str,
    #[serde(flatten)]
    members: Option<&'a serde_json::Map<String, serde_json::Value>>,
}

impl Problem {
    fn new(status: StatusCode, kind: &'static str, title: &'static str, detail: String) -> Self {
        Self {
            status,
            kind,
            title,
            detail,
            members: None,
            etag: None,
            cause: None,
            retry_after: None,
        }
    }

    /// `400 invalid-request`: a malformed key, header, query or body.
    pub fn invalid_request(detail: impl Into<String>) -> Self {
        Self::new(
            StatusCode::BAD_REQUEST,
            "invalid-request",
            "Invalid request",
            detail.into(),
        )
    }

    /// `413 payload-too-large`.
    pub fn payload_too_large(detail: impl Into<String>) -> Self {
        Self::new(
            StatusCode::PAYLOAD_TOO_LARGE,
            "payload-too-large",
            "Payload too large",
            detail.into(),
        )
    }

    /// `408 request-timeout`: the body did not arrive within `--body-read-timeout`. The
    /// connection is closed after the answer.
    pub fn request_timeout(detail: impl Into<String>) -> Self {
        Self::new(
            StatusCode::REQUEST_TIMEOUT,
            "request-timeout",
            "Request timeout",
            detail.into(),
        )
    }

    /// `421 misdirected-request`: a `Host` that `--allowed-host` does not name (DNS
    /// rebinding).
    pub fn misdirected_request(detail: impl Into<String>) -> Self {
        Self::new(
            StatusCode::MISDIRECTED_REQUEST,
            "misdirected-request",
            "Misdirected request",
            detail.into(),
        )
    }

    /// `429 too-many-requests`: an address over its budget of refused requests; with
    /// `Retry-After`.
    pub fn too_many_requests(detail: impl Into<String>, retry_after_secs: u64) -> Self {
        Self {
            retry_after: Some(u16::try_from(retry_after_secs).unwrap_or(u16::MAX)),
            ..Self::new(
                StatusCode::TOO_MANY_REQUESTS,
                "too-many-requests",
                "Too many requests",
                detail.into(),
            )
        }
    }

    /// `409 stale-token`: a higher generation has been accepted.
    pub fn stale_token(detail: impl Into<String>) -> Self {
        Self::new(
            StatusCode::CONFLICT,
            "stale-token",
            "Stale fencing token",
            detail.into(),
        )
    }

    /// `412 revision-mismatch`: `If-Match` names another revision.
    pub fn revision_mismatch(detail: impl Into<String>) -> Self {
        Self::new(
            StatusCode::PRECONDITION_FAILED,
            "revision-mismatch",
            "Revision mismatch",
            detail.into(),
        )
    }

    /// `422 idempotency-key-reuse`: the key was recorded with another token or body.
    pub fn idempotency_key_reuse(detail: impl Into<String>) -> Self {
        Self::new(
            StatusCode::UNPROCESSABLE_ENTITY,
            "idempotency-key-reuse",
            "Idempotency key reused for another request",
            detail.into(),
        )
    }

    /// `401 unauthorized`: no or wrong API key.
    pub fn unauthorized(detail: impl Into<String>) -> Self {
        Self::new(
            StatusCode::UNAUTHORIZED,
            "unauthorized",
            "Unauthorized",
            detail.into(),
        )
    }

    /// `403 forbidden`: the API key's scopes do not allow the request.
    pub fn forbidden(detail: impl Into<String>) -> Self {
        Self::new(
            StatusCode::FORBIDDEN,
            "forbidden",
            "Forbidden",
            detail.into(),
        )
    }

    /// `403 reserved-name`: a lease name under `fencewatch/`, which the daemon keeps for itself.
    pub fn reserved_name(detail: impl Into<String>) -> Self {
        Self::new(
            StatusCode::FORBIDDEN,
            "reserved-name",
            "Reserved lease name",
            detail.into(),
        )
    }

    /// `403 cross-origin`: a browser request from an origin `--allow-origin` does not name.
    pub fn cross_origin(detail: impl Into<String>) -> Self {
        Self::new(
            StatusCode::FORBIDDEN,
            "cross-origin",
            "Cross-origin request refused",
            detail.into(),
        )
    }

    /// `415 unsupported-media-type`: a lease request whose body is not declared JSON.
    pub fn unsupported_media_type(detail: impl Into<String>) -> Self {
        Self::new(
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            "unsupported-media-type",
            "Unsupported media type",
            detail.into(),
        )
    }

    /// `403 unknown-generation`: a token the named lease never issued.
    pub fn unknown_generation(detail: impl Into<String>) -> Self {
        Self::new(
            StatusCode::FORBIDDEN,
            "unknown-generation",
            "Unknown generation",
            detail.into(),
        )
    }

    /// `403 out-of-scope`: the lease may not fence this resource.
    pub fn out_of_scope(detail: impl Into<String>) -> Self {
        Self::new(
            StatusCode::FORBIDDEN,
            "out-of-scope",
            "Resource outside the lease's scope",
            detail.into(),
        )
    }

    /// `409 lease-expired`: the lease's current generation after its grant lapsed (strict).
    pub fn lease_expired(detail: impl Into<String>) -> Self {
        Self::new(
            StatusCode::CONFLICT,
            "lease-expired",
            "Lease expired",
            detail.into(),
        )
    }

    /// `409 lease-held`: someone else holds the lease.
    pub fn lease_held(detail: impl Into<String>) -> Self {
        Self::new(
            StatusCode::CONFLICT,
            "lease-held",
            "Lease held",
            detail.into(),
        )
    }

    /// `409 lease-lost`: the caller no longer holds the lease.
    pub fn lease_lost(detail: impl Into<String>) -> Self {
        Self::new(
            StatusCode::CONFLICT,
            "lease-lost",
            "Lease lost",
            detail.into(),
        )
    }

    /// `404 not-found`.
    pub fn not_found(detail: impl Into<String>) -> Self {
        Self::new(
            StatusCode::NOT_FOUND,
            "not-found",
            "Not found",
            detail.into(),
        )
    }

    /// `405 method-not-allowed`.
    pub fn method_not_allowed(detail: impl Into<String>) -> Self {
        Self::new(
            StatusCode::METHOD_NOT_ALLOWED,
            "method-not-allowed",
            "Method not allowed",
            detail.into(),
        )
    }

    /// `503 unavailable`: the database cannot be reached now; retry later.
    pub fn unavailable(detail: impl Into<String>) -> Self {
        Self::new(
            StatusCode::SERVICE_UNAVAILABLE,
            "unavailable",
            "Service unavailable",
            detail.into(),
        )
    }

    /// `500 internal`: a bug; details are in the daemon's log, not in the response.
    pub fn internal() -> Self {
        Self::new(
            StatusCode::INTERNAL_SERVER_ERROR,
            "internal",
            "Internal error",
            "the daemon failed; its log has the details".into(),
        )
    }

    /// `500 internal`, with its cause kept for the log.
    pub fn internal_because(cause: impl std::fmt::Display) -> Self {
        Self {
            cause: Some(cause.to_string()),
            ..Self::internal()
        }
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
        let body = ProblemBody {
            kind: self.kind,
            title: self.title,
            status: self.status.as_u16(),
            detail: &self.detail,
            members: self.members.as_deref(),
        };
        let mut response = (self.status, json_bytes(&body)).into_response();
        let headers = response.headers_mut();
        headers.insert(
            header::CONTENT_TYPE,
            HeaderValue::from_static("application/problem+json"),
        );
        if let Some(etag) = self.etag.and_then(|e| HeaderValue::from_str(&e).ok()) {
            headers.insert(header::ETAG, etag);
        }
        if self.status == StatusCode::UNAUTHORIZED {
            headers.insert(header::WWW_AUTHENTICATE, HeaderValue::from_static("Bearer"));
        }
        if let Some(seconds) = self.retry_after {
            headers.insert(header::RETRY_AFTER, HeaderValue::from(seconds));
        }
        if self.status == StatusCode::REQUEST_TIMEOUT {
            // The rest of a stalled body may still come: the connection cannot carry another
            // request, and must not hold its slot.
            headers.insert(header::CONNECTION, HeaderValue::from_static("close"));
        }
        if self.status.is_server_error() {
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
        br#"{"type":"internal","title":"Internal error","status":500,"detail":"serialisation failed"}"#
            .to_vec()
    })
}
