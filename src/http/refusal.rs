//! Refusals. A request refused before the fence (no or a wrong API key, a key's scopes, a
//! foreign web origin or `Host`, a write naming one of the daemon's own leases) is counted, never audited row by row: in the metrics and in
//! the aggregated `refusals` rows, by source (the key's name, else the client's address),
//! reason and interval (`app::refusals`). It takes no row lock and adds no row of its own, so a
//! flood without a key costs a legitimate writer nothing at the database; an address past its
//! budget of refusals is answered `429`. A write refused after authentication (malformed, too
//! large, stalled, an unusable lock name) is the caller's own and is audited as every attempt is.

use super::problem::{Problem, WriteMembers};
use super::write_request::Refusal;
use super::AppState;
use crate::api::problem::ProblemType;
use crate::app::refusals::Refusal as Refused;
use crate::domain::refusal::{RefusalReason, RefusalSample, RefusalSource, Spend};
use crate::domain::{AuditEntry, RefusedAttempt, ResourceKey};
use axum::extract::{ConnectInfo, Request};
use axum::response::{IntoResponse, Response};
use std::net::SocketAddr;

/// Where resources live; a `PUT` below it is a write.
pub(super) const RESOURCES_PREFIX: &str = "/v1/resources/";

/// Answers `problem` to a request refused before its handler ran (a foreign host or origin, no
/// key, out of scope), having counted it; `caller` is the recognised key's name, if any. Past
/// its address's budget the answer is `429` instead.
pub(super) async fn refuse(
    state: &AppState,
    request: Request,
    problem: Problem,
    caller: Option<String>,
) -> Response {
    let address = request
        .extensions()
        .get::<ConnectInfo<SocketAddr>>()
        .map(|ConnectInfo(peer)| peer.ip());
    let source = match (caller, address) {
        (Some(name), _) => RefusalSource::Caller(name),
        (None, Some(address)) => RefusalSource::Address(address),
        (None, None) => RefusalSource::Unknown,
    };
    let refused = Refused {
        source,
        address,
        reason: reason_of(&problem),
    };
    let spend = state
        .service
        .refused_before_fence(refused, || sample(&request, &problem));
    match spend {
        Spend::Within => problem.into_response(),
        Spend::Exhausted { retry_after_secs } => Problem::new(
            ProblemType::TooManyRequests,
            format!(
                "too many refused requests from this address; retry after {retry_after_secs} s \
                 (a request with a valid API key is never limited)"
            ),
        )
        .with_retry_after(retry_after_secs)
        .into_response(),
    }
}

/// The reason a refusal is counted under: its problem type, which every refusal before the
/// fence is one of (any other is counted as `forbidden`).
fn reason_of(problem: &Problem) -> RefusalReason {
    match problem.kind {
        ProblemType::Unauthorized => RefusalReason::Unauthorized,
        ProblemType::MisdirectedRequest => RefusalReason::MisdirectedRequest,
        ProblemType::CrossOrigin => RefusalReason::CrossOrigin,
        ProblemType::ReservedName => RefusalReason::ReservedName,
        ProblemType::TooManyRequests => RefusalReason::TooManyRequests,
        _ => RefusalReason::Forbidden,
    }
}

/// What the first refusal of a bucket leaves as its sample: the resource it named, if any, the
/// request line and the detail.
fn sample(request: &Request, problem: &Problem) -> RefusalSample {
    let path = request.uri().path();
    let resource = path
        .strip_prefix(RESOURCES_PREFIX)
        .and_then(|raw| ResourceKey::from_percent_encoded(raw).ok())
        .map(|key| key.as_str().to_owned());
    RefusalSample::new(
        resource,
        format!("{} {path}", request.method()),
        problem.detail.clone(),
    )
}

/// The problem for a write refused after authentication, once its attempt is audited.
pub(super) async fn refused_response(
    state: &AppState,
    attempt: RefusedAttempt,
    refusal: Refusal,
) -> Problem {
    let problem = match refusal {
        Refusal::Invalid(detail) => Problem::invalid_request(detail),
        Refusal::TooLarge(detail) => Problem::new(ProblemType::PayloadTooLarge, detail),
        Refusal::TimedOut(detail) => Problem::new(ProblemType::RequestTimeout, detail),
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

#[cfg(test)]
mod tests {
    use super::*;

    /// A refusal's reason is named as the problem type it was answered with: the metrics and
    /// the `refusals` rows say what the client was told.
    #[test]
    fn each_refusal_reason_is_named_as_its_problem_type() {
        for reason in RefusalReason::ALL {
            let kind = ProblemType::from_slug(reason.as_str());
            assert_ne!(kind, ProblemType::Unknown, "{reason:?}");
            assert_eq!(reason_of(&Problem::new(kind, "refused")), reason);
        }
    }
}
