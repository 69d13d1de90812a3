//! `POST /v1/resources/{key}/reset`: an operator sets a resource's highest accepted generation
//! (the way back from a runaway token). Only `admin` keys reach it (`scopes::Need::Admin`; an
//! unscoped key line, or a daemon without keys, is open as for every other admin action).

use super::auth::Caller;
use super::body::{content_length, read_limited};
use super::problem::{json_ok, Problem, WriteMembers};
use super::refusal::{members, RESOURCES_PREFIX};
use super::AppState;
use crate::api::problem::ProblemType;
use crate::api::reset::ResetRequest;
use crate::domain::{FencingToken, Reset, ResetReason, ResourceKey};
use axum::body::Body;
use axum::extract::State;
use axum::http::{header, HeaderMap, Uri};
use axum::response::Response;
use axum::Extension;
use serde::Serialize;

/// The action's path segment after the resource's key.
const ACTION: &str = "/reset";

/// A reset's body is a small JSON object; anything longer is refused unread.
const MAX_BODY_BYTES: usize = 16 * 1024;

/// The answer: the write members (outcome `reset`, the reset's audit row), and the generation
/// it replaced.
#[derive(Serialize)]
struct ResetAnswer {
    #[serde(flatten)]
    members: WriteMembers,
    previous_highest_token: i64,
}

/// The resources' router sends every `POST` under `/v1/resources/` here (their keys may hold
/// `/`, so the action is the path's last segment, as a lease's is).
pub(super) async fn reset(
    State(state): State<AppState>,
    caller: Option<Extension<Caller>>,
    uri: Uri,
    headers: HeaderMap,
    body: Body,
) -> Result<Response, Problem> {
    let path = uri.path();
    let raw_key = path
        .strip_prefix(RESOURCES_PREFIX)
        .and_then(|rest| rest.strip_suffix(ACTION))
        .ok_or_else(|| {
            Problem::new(
                ProblemType::MethodNotAllowed,
                format!("POST is not allowed on {path}"),
            )
        })?;
    let key =
        ResourceKey::from_percent_encoded(raw_key).map_err(|e| Problem::invalid_request(e.0))?;
    require_json(&headers)?;
    let request = read_request(&headers, body).await?;
    let highest_token = FencingToken::new(request.highest_token)
        .map_err(|e| Problem::invalid_request(format!("highest_token: {}", e.0)))?;
    let reason = ResetReason::parse(&request.reason).map_err(|e| Problem::invalid_request(e.0))?;
    let reset = Reset {
        key,
        highest_token,
        reason,
        caller: caller.and_then(|Extension(Caller(name))| name),
    };
    match state.service.reset(&reset).await? {
        Some(done) => Ok(json_ok(&ResetAnswer {
            members: members(&done.entry),
            previous_highest_token: done.previous_highest_token,
        })),
        None => Err(Problem::new(
            ProblemType::NotFound,
            format!(
                "resource {:?} has never been written: there is no fence to reset",
                reset.key.as_str()
            ),
        )),
    }
}

/// Declared JSON, as the lease endpoints' bodies: a page of another origin cannot send that
/// without a preflight, which it never passes.
fn require_json(headers: &HeaderMap) -> Result<(), Problem> {
    let declared = headers
        .get(header::CONTENT_TYPE)
        .and_then(|value| value.to_str().ok())
        .unwrap_or_default();
    let essence = declared.split(';').next().unwrap_or_default().trim();
    if essence.eq_ignore_ascii_case("application/json") {
        Ok(())
    } else {
        Err(Problem::new(
            ProblemType::UnsupportedMediaType,
            format!(
                "a reset's body must be sent with Content-Type: application/json, not {declared:?}"
            ),
        ))
    }
}

/// The body, within `--body-read-timeout` (`408` when it stalls) and its size limit, as a
/// `ResetRequest`.
async fn read_request(headers: &HeaderMap, body: Body) -> Result<ResetRequest, Problem> {
    let bytes = read_limited(content_length(headers), body, MAX_BODY_BYTES)
        .await
        .map_err(|error| {
            error.problem(|limit| format!("a reset's body is limited to {limit} bytes"))
        })?;
    let invalid =
        |e: serde_json::Error| Problem::invalid_request(format!("invalid JSON body: {e}"));
    let value: serde_json::Value = serde_json::from_slice(&bytes).map_err(invalid)?;
    // A derived struct would also take `[N, "reason"]`: only the documented object is one.
    if !value.is_object() {
        return Err(Problem::invalid_request(
            "the body must be a JSON object: {\"highest_token\": N, \"reason\": \"…\"}",
        ));
    }
    serde_json::from_value(value).map_err(invalid)
}
