//! `PUT` and `GET /v1/resources/{key}`, and the route of `POST …/{key}/reset` (`reset`).

use super::auth::Caller;
use super::problem::{json_bytes, Problem, WriteMembers};
use super::refusal::{members, refused_response, RESOURCES_PREFIX};
use super::reset::reset;
use super::write_request::{self, Refusal};
use super::AppState;
use crate::api::problem::ProblemType;
use crate::app::service::WriteError;
use crate::domain::{Applied, AuditEntry, Decision, Outcome, ResourceKey, Revision, WriteResult};
use axum::body::Body;
use axum::extract::State;
use axum::http::{header, HeaderMap, HeaderName, HeaderValue, StatusCode, Uri};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::Extension;
use axum::Router;

pub fn router() -> Router<AppState> {
    Router::new()
        .route("/v1/resources/{*key}", get(read).put(write).post(reset))
        .route("/v1/resources/", get(empty_key).put(empty_key))
}

async fn empty_key() -> Problem {
    Problem::invalid_request("resource key is empty")
}

/// The key from the raw path, so that its percent-decoding follows our rules, not the router's.
fn key_from(uri: &Uri) -> Result<ResourceKey, Problem> {
    let raw = uri
        .path()
        .strip_prefix(RESOURCES_PREFIX)
        .unwrap_or_default();
    ResourceKey::from_percent_encoded(raw).map_err(|e| Problem::invalid_request(e.0))
}

async fn write(
    State(state): State<AppState>,
    caller: Option<Extension<Caller>>,
    uri: Uri,
    headers: HeaderMap,
    body: Body,
) -> Result<Response, Problem> {
    let key = key_from(&uri)?;
    let max_bytes = state.service.limits().max_value_bytes;
    let caller = caller.and_then(|Extension(Caller(name))| name);
    match write_request::parse(key, &headers, body, max_bytes, caller).await {
        Ok(write) => match state.service.write(&write).await {
            Ok(result) => Ok(write_response(result)),
            Err(WriteError::Store(error)) => Err(Problem::from(error)),
            Err(WriteError::NoAuthority(error)) => {
                let attempt = write.refused(Outcome::Invalid, error.to_string());
                Err(refused_response(&state, attempt, Refusal::Invalid(error.to_string())).await)
            }
            Err(
                error @ (WriteError::AuthorityUnavailable { .. }
                | WriteError::AuthorityRegressed { .. }),
            ) => Err(Problem::unavailable(error.to_string())),
        },
        Err((attempt, refusal)) => Err(refused_response(&state, attempt, refusal).await),
    }
}

fn write_response(result: WriteResult) -> Response {
    let entry = &result.entry;
    match result.decision {
        Decision::Accept { revision, .. } => json_response(
            status(Applied::at(revision)),
            &members(entry),
            revision,
            false,
        ),
        Decision::Replay(recorded) => {
            let status = status(recorded.applied);
            let body = WriteMembers {
                highest_token: recorded.highest_token,
                revision: recorded.revision.get(),
                ..members(entry)
            };
            json_response(status, &body, recorded.revision, true)
        }
        Decision::RevisionMismatch => {
            let current = Revision::new(entry.revision).unwrap_or(Revision::NEVER_WRITTEN);
            refused_by_fence(ProblemType::RevisionMismatch, entry)
                .with_etag(current.etag())
                .into_response()
        }
        Decision::IdempotencyKeyReuse { .. } => {
            refused_by_fence(ProblemType::IdempotencyKeyReuse, entry).into_response()
        }
        Decision::Stale | Decision::Superseded => {
            refused_by_fence(ProblemType::StaleToken, entry).into_response()
        }
        Decision::UnknownGeneration => {
            refused_by_fence(ProblemType::UnknownGeneration, entry).into_response()
        }
        Decision::OutOfScope => refused_by_fence(ProblemType::OutOfScope, entry).into_response(),
        Decision::LeaseExpired => {
            refused_by_fence(ProblemType::LeaseExpired, entry).into_response()
        }
    }
}

/// The problem answering a write the fence refused, with its audit row's detail and members.
fn refused_by_fence(kind: ProblemType, entry: &AuditEntry) -> Problem {
    Problem::new(kind, entry.detail.clone().unwrap_or_default()).with_members(members(entry))
}

/// `201 Created` for a resource's first revision, `200 OK` after; a replay answers as the
/// original did.
fn status(applied: Applied) -> StatusCode {
    match applied {
        Applied::Created => StatusCode::CREATED,
        Applied::Updated => StatusCode::OK,
    }
}

fn json_response(
    status: StatusCode,
    body: &WriteMembers,
    revision: Revision,
    replayed: bool,
) -> Response {
    let mut response = (status, json_bytes(body)).into_response();
    let headers = response.headers_mut();
    headers.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    if let Ok(etag) = HeaderValue::from_str(&revision.etag()) {
        headers.insert(header::ETAG, etag);
    }
    if replayed {
        headers.insert(
            HeaderName::from_static("idempotent-replayed"),
            HeaderValue::from_static("true"),
        );
    }
    response
}

async fn read(State(state): State<AppState>, uri: Uri) -> Result<Response, Problem> {
    let key = key_from(&uri)?;
    let Some(stored) = state.service.read(&key).await? else {
        return Err(Problem::new(
            ProblemType::NotFound,
            format!("resource {key:?} has never been written"),
        ));
    };
    let content_type = stored
        .content_type
        .as_deref()
        .and_then(|ct| HeaderValue::from_str(ct).ok())
        .unwrap_or(HeaderValue::from_static("application/octet-stream"));
    let mut response = (StatusCode::OK, stored.value).into_response();
    let headers = response.headers_mut();
    headers.insert(header::CONTENT_TYPE, content_type);
    if let Ok(etag) = HeaderValue::from_str(&format!("\"{}\"", stored.revision)) {
        headers.insert(header::ETAG, etag);
    }
    headers.insert(
        HeaderName::from_static(write_request::FENCING_TOKEN),
        HeaderValue::from(stored.highest_token),
    );
    Ok(response)
}
