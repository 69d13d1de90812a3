//! Refused writes are audited like every other attempt: whichever layer refuses a `PUT` of a
//! resource (the origin guard, the key check, the request's own parser or an unusable lock
//! name), the attempt is recorded first and the problem carries its audit members.

use super::problem::{Problem, WriteMembers};
use super::write_request::{self, Refusal};
use super::AppState;
use crate::domain::{AuditEntry, Outcome, RefusedAttempt, ResourceKey};
use axum::extract::Request;
use axum::http::Method;
use axum::response::{IntoResponse, Response};

/// Where resources live; a `PUT` below it is a write.
pub(super) const RESOURCES_PREFIX: &str = "/v1/resources/";

/// Answers `problem` to a request refused before its handler ran (foreign origin, no key, out
/// of scope); a refused write of a resource is first audited, as every attempt is.
pub(super) async fn refuse(
    state: &AppState,
    request: Request,
    problem: Problem,
    caller: Option<String>,
) -> Response {
    if request.method() != Method::PUT {
        return problem.into_response();
    }
    let Some(key) = request
        .uri()
        .path()
        .strip_prefix(RESOURCES_PREFIX)
        .and_then(|raw| ResourceKey::from_percent_encoded(raw).ok())
    else {
        return problem.into_response();
    };
    let attempt = write_request::refused_from_headers(
        key,
        request.headers(),
        Outcome::Unauthorized,
        &problem.detail,
        caller,
    );
    match state.service.refuse(&attempt).await {
        Ok(entry) => problem.with_members(members(&entry)).into_response(),
        Err(error) => Problem::from(error).into_response(),
    }
}

pub(super) async fn refused_response(
    state: &AppState,
    attempt: RefusedAttempt,
    refusal: Refusal,
) -> Problem {
    let problem = match refusal {
        Refusal::Invalid(detail) => Problem::invalid_request(detail),
        Refusal::TooLarge(detail) => Problem::payload_too_large(detail),
    };
    match state.service.refuse(&attempt).await {
        Ok(entry) => problem.with_members(members(&entry)),
        // The refusal stands, but an attempt we could not audit must not look audited.
        Err(error) => Problem::from(error),
    }
}

pub(super) fn members(entry: &AuditEntry) -> WriteMembers {
    WriteMembers {
        resource: entry.resource.clone(),
        outcome: entry.outcome.as_str(),
        token: entry.token,
        highest_token: entry.highest_token,
        revision: entry.revision,
        idempotency_key: entry.idempotency_key.clone(),
        audit_id: entry.id,
    }
}
