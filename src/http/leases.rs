//! The lease authority: `POST /v1/leases/{name}/acquire|renew|release`, `GET /v1/leases/{name}`,
//! and a lease's history, `GET /v1/lease-history/{name}`.

use super::body::{content_length, read_limited};
use super::problem::{json_ok, Problem};
use super::query::{After, Before, Limit, QueryParams, StrictQuery, Time};
use super::AppState;
use crate::api::leases::{
    AcquireRequest, LeaseHistory, LeaseState as ViewState, LeaseView, ReleaseRequest, RenewRequest,
};
use crate::api::problem::ProblemType;
use crate::domain::audit::format_rfc3339_micros;
use crate::domain::{FencingToken, Holder, LeaseName, LeaseRecord, ParseError, Ttl};
use crate::store::{AcquireResult, LeaseHistoryQuery, LeaseState, ReleaseResult, RenewResult};
use axum::body::{Body, Bytes};
use axum::extract::State;
use axum::http::{header, HeaderMap, StatusCode, Uri};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::Router;
use chrono::DateTime;
use serde::de::DeserializeOwned;
use serde::Deserialize;

const PREFIX: &str = "/v1/leases/";

/// A lease request's body is a small JSON object; anything longer is refused unread.
pub const MAX_BODY_BYTES: usize = 64 * 1024;

/// The history's own prefix: under `/v1/leases/` a `/history` suffix could not be told from a
/// lease whose name ends in it (names may contain `/`). Being a monitoring read, it needs the
/// `read` scope, like the audit.
const HISTORY_PREFIX: &str = "/v1/lease-history/";

pub const DEFAULT_HISTORY_LIMIT: u32 = 100;
pub const MAX_HISTORY_LIMIT: u32 = 1000;

pub fn router() -> Router<AppState> {
    Router::new()
        .route("/v1/leases/{*rest}", get(show).post(act))
        .route("/v1/lease-history/{*rest}", get(history))
}

/// `GET /v1/lease-history/{name}`'s parameters: event ids to page by, like the audit's, and a
/// time to read back from.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HistoryParams {
    limit: Option<Limit<MAX_HISTORY_LIMIT>>,
    before: Option<Before>,
    after: Option<After>,
    until: Option<Time>,
}

impl QueryParams for HistoryParams {
    const KNOWN: &'static [&'static str] = &["limit", "before", "after", "until"];
}

impl From<HistoryParams> for LeaseHistoryQuery {
    fn from(params: HistoryParams) -> Self {
        LeaseHistoryQuery {
            before: params.before.map(|Before(id)| id),
            after: params.after.map(|After(id)| id),
            until_us: params.until.map(|Time(at)| at),
            limit: params
                .limit
                .map_or(DEFAULT_HISTORY_LIMIT, |Limit(limit)| limit),
        }
    }
}

/// Reserved (`fencewatch/…`) names are readable, as `GET /v1/leases/{name}` is: only taking
/// one is refused.
async fn history(
    State(state): State<AppState>,
    uri: Uri,
    StrictQuery(params): StrictQuery<HistoryParams>,
) -> Result<Response, Problem> {
    let name = lease_name(uri.path().strip_prefix(HISTORY_PREFIX).unwrap_or_default())?;
    match state.service.lease_history(&name, &params.into()).await? {
        Some(events) => Ok(json_ok(&LeaseHistory {
            lease: name.as_str().to_owned(),
            events,
        })),
        None if crate::domain::authority::ExternalLock::from_lease(&name).is_some() => {
            Err(Problem::new(
                ProblemType::NotFound,
                format!("no write has seen lock {:?} held", name.as_str()),
            ))
        }
        None => Err(Problem::new(
            ProblemType::NotFound,
            format!("lease {:?} has never been acquired", name.as_str()),
        )),
    }
}

/// A grant just made or renewed: held by definition.
fn granted(record: &LeaseRecord) -> LeaseView {
    view(record, record.expires_at_us - 1)
}

/// A lease as the API shows it at `now_us`.
fn view(record: &LeaseRecord, now_us: i64) -> LeaseView {
    let state = if record.released {
        ViewState::Released
    } else if record.expires_at_us <= now_us {
        ViewState::Expired
    } else {
        ViewState::Held
    };
    LeaseView {
        lease: record.name.as_str().to_owned(),
        holder: record.holder.as_str().to_owned(),
        token: record.token.get(),
        expires_at: expires_at(record),
        ttl_ms: record.ttl.millis(),
        state,
    }
}

fn expires_at(record: &LeaseRecord) -> String {
    DateTime::from_timestamp_micros(record.expires_at_us)
        .map(|at| format_rfc3339_micros(&at))
        .unwrap_or_default()
}

fn invalid(error: ParseError) -> Problem {
    Problem::invalid_request(error.0)
}

fn lease_name(raw: &str) -> Result<LeaseName, Problem> {
    let bytes: Vec<u8> = percent_encoding::percent_decode_str(raw).collect();
    let text = String::from_utf8(bytes)
        .map_err(|_| Problem::invalid_request("lease name is not valid UTF-8"))?;
    LeaseName::parse(&text).map_err(invalid)
}

/// Lease bodies must be declared JSON. A browser sends `text/plain`, form and multipart bodies
/// across origins without asking first (a CORS "simple request"); JSON it sends only after a
/// preflight, which a foreign origin never passes.
fn require_json(headers: &HeaderMap) -> Result<(), Problem> {
    let declared = headers
        .get(header::CONTENT_TYPE)
        .and_then(|value| value.to_str().ok())
        .unwrap_or_default();
    let essence = declared.split(';').next().unwrap_or_default().trim();
    if essence.eq_ignore_ascii_case("application/json") {
        Ok(())
    } else if declared.is_empty() {
        Err(Problem::new(
            ProblemType::UnsupportedMediaType,
            "a lease request's body must be sent with Content-Type: application/json",
        ))
    } else {
        Err(Problem::new(
            ProblemType::UnsupportedMediaType,
            format!("a lease request's body must be application/json, not {declared:?}"),
        ))
    }
}

/// The body, read here rather than by an extractor so that a refusal is a problem like any
/// other (an extractor answers a too-long body with plain text), and a stalled one `408`.
async fn read_body(headers: &HeaderMap, body: Body) -> Result<Bytes, Problem> {
    read_limited(content_length(headers), body, MAX_BODY_BYTES)
        .await
        .map_err(|error| {
            error.problem(|limit| format!("a lease request's body is limited to {limit} bytes"))
        })
}

fn json_body<T: DeserializeOwned>(body: &Bytes) -> Result<T, Problem> {
    serde_json::from_slice(body)
        .map_err(|e| Problem::invalid_request(format!("invalid JSON body: {e}")))
}

async fn show(State(state): State<AppState>, uri: Uri) -> Result<Response, Problem> {
    let name = lease_name(uri.path().strip_prefix(PREFIX).unwrap_or_default())?;
    match state.service.lease(&name).await? {
        Some(LeaseState { record, now_us }) => Ok(json_ok(&view(&record, now_us))),
        None => Err(Problem::new(
            ProblemType::NotFound,
            format!("lease {:?} has never been acquired", name.as_str()),
        )),
    }
}

async fn act(
    State(state): State<AppState>,
    uri: Uri,
    headers: HeaderMap,
    body: Body,
) -> Result<Response, Problem> {
    let rest = uri.path().strip_prefix(PREFIX).unwrap_or_default();
    let Some((raw_name, action)) = rest.rsplit_once('/') else {
        return Err(Problem::new(
            ProblemType::NotFound,
            "POST to /v1/leases/NAME/acquire, renew or release",
        ));
    };
    let name = lease_name(raw_name)?;
    if name.is_reserved() {
        return Err(Problem::new(
            ProblemType::ReservedName,
            format!(
                "lease names under {:?} belong to the daemon itself",
                LeaseName::RESERVED_PREFIX
            ),
        ));
    }
    if crate::domain::authority::ExternalLock::from_lease(&name).is_some() {
        let detail = format!(
            "lease {:?} names a lock of an external authority, which this daemon does not grant",
            name.as_str()
        );
        return Err(Problem::new(ProblemType::ReservedName, detail));
    }
    require_json(&headers)?;
    let body = read_body(&headers, body).await?;
    let service = &state.service;
    match action {
        "acquire" => {
            let request: AcquireRequest = json_body(&body)?;
            let holder = Holder::parse(&request.holder).map_err(invalid)?;
            let ttl = Ttl::from_millis(request.ttl_ms).map_err(invalid)?;
            match service.acquire_lease(&name, &holder, ttl).await? {
                AcquireResult::Granted(record) => Ok(json_ok(&granted(&record))),
                AcquireResult::Held(current) => Err(Problem::new(
                    ProblemType::LeaseHeld,
                    format!(
                        "lease {:?} is held by {:?} until {}",
                        name.as_str(),
                        current.holder.as_str(),
                        expires_at(&current)
                    ),
                )
                .with_members(serde_json::json!({
                    "lease": name.as_str(),
                    "holder": current.holder.as_str(),
                    "expires_at": expires_at(&current),
                }))),
            }
        }
        "renew" => {
            let request: RenewRequest = json_body(&body)?;
            let holder = Holder::parse(&request.holder).map_err(invalid)?;
            let token = FencingToken::new(request.token).map_err(invalid)?;
            let ttl = request
                .ttl_ms
                .map(Ttl::from_millis)
                .transpose()
                .map_err(invalid)?;
            match service.renew_lease(&name, &holder, token, ttl).await? {
                RenewResult::Renewed(record) => Ok(json_ok(&granted(&record))),
                RenewResult::Lost(current) => Err(lost(&name, &holder, token, current.as_ref())),
            }
        }
        "release" => {
            let request: ReleaseRequest = json_body(&body)?;
            let holder = Holder::parse(&request.holder).map_err(invalid)?;
            let token = FencingToken::new(request.token).map_err(invalid)?;
            match service.release_lease(&name, &holder, token).await? {
                ReleaseResult::Released => Ok(StatusCode::NO_CONTENT.into_response()),
                ReleaseResult::Lost(current) => Err(lost(&name, &holder, token, current.as_ref())),
            }
        }
        other => Err(Problem::new(
            ProblemType::NotFound,
            format!("unknown lease action {other:?}: use acquire, renew or release"),
        )),
    }
}

/// `409 lease-lost`, saying why: superseded, expired, or never held.
fn lost(
    name: &LeaseName,
    holder: &Holder,
    token: FencingToken,
    current: Option<&LeaseState>,
) -> Problem {
    let Some(LeaseState { record, now_us }) = current else {
        return Problem::new(
            ProblemType::LeaseLost,
            format!("lease {:?} has never been acquired", name.as_str()),
        );
    };
    let why = if record.token != token || &record.holder != holder {
        format!(
            "generation {token} of {:?} is superseded: generation {} is held by {:?}",
            holder.as_str(),
            record.token,
            record.holder.as_str()
        )
    } else if record.released {
        format!("generation {token} was released")
    } else {
        format!("generation {token} expired at {}", expires_at(record))
    };
    Problem::new(
        ProblemType::LeaseLost,
        format!("lease {:?}: {why}", name.as_str()),
    )
    .with_members(serde_json::json!({ "lease": view(record, *now_us) }))
}
