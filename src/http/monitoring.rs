//! `GET /v1/overlaps` and `GET /v1/stats`.

use super::problem::{json_ok, Problem};
use super::query::{Limit, QueryParams, Resource, StateFilter, StrictQuery};
use super::AppState;
use crate::api::monitoring::{AlertList, OverlapList};
use crate::api::problem::ProblemType;
use crate::metrics::Exposition;
use crate::store::OverlapQuery;
use axum::extract::{Path, State};
use axum::http::{header, HeaderMap, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::Router;
use serde::Deserialize;

pub fn router() -> Router<AppState> {
    Router::new()
        .route("/v1/overlaps", get(overlaps))
        .route("/v1/overlaps/{id}/report", get(report))
        .route("/v1/stats", get(stats))
        .route("/v1/alerts", get(alerts))
}

/// `GET /v1/overlaps`' parameters: `state=open|closed|all` (default all), `resource=KEY`,
/// `limit` 1 to 1000 (default 100).
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct OverlapParams {
    state: Option<StateFilter>,
    resource: Option<Resource>,
    limit: Option<Limit<MAX_OVERLAPS>>,
}

impl QueryParams for OverlapParams {
    const KNOWN: &'static [&'static str] = &["state", "resource", "limit"];
}

/// Overlaps answered when no `limit` is given, and at most.
const DEFAULT_OVERLAPS: u32 = 100;
const MAX_OVERLAPS: u32 = 1000;

async fn overlaps(
    State(state): State<AppState>,
    StrictQuery(params): StrictQuery<OverlapParams>,
) -> Result<Response, Problem> {
    let query = OverlapQuery {
        state: params.state.and_then(|StateFilter(state)| state),
        resource: params.resource.map(|Resource(key)| key.as_str().to_owned()),
        limit: params.limit.map_or(DEFAULT_OVERLAPS, |Limit(limit)| limit),
    };
    let overlaps = state.service.overlaps(&query).await?;
    Ok(json_ok(&OverlapList { overlaps }))
}

/// `GET /v1/overlaps/{id}/report` takes no parameters.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct NoParams {}

impl QueryParams for NoParams {
    const KNOWN: &'static [&'static str] = &[];
}

/// An incident's report: the facts of the overlap from the audit and the lease history.
async fn report(
    State(state): State<AppState>,
    Path(id): Path<String>,
    StrictQuery(_): StrictQuery<NoParams>,
) -> Result<Response, Problem> {
    let id = overlap_id(&id)?;
    match state.service.incident_report(id).await? {
        Some(report) => Ok(json_ok(&report)),
        None => Err(Problem::new(
            ProblemType::NotFound,
            format!("no overlap {id}"),
        )),
    }
}

/// An overlap's id: a positive integer.
fn overlap_id(text: &str) -> Result<i64, Problem> {
    text.parse::<i64>()
        .ok()
        .filter(|id| *id > 0)
        .ok_or_else(|| {
            Problem::invalid_request(format!(
                "{text:?} is not an overlap id (a positive integer)"
            ))
        })
}

/// `/metrics`, outside `/v1` so that scrapers need no API key.
pub fn metrics_router() -> Router<AppState> {
    Router::new().route("/metrics", get(metrics))
}

async fn metrics(State(state): State<AppState>, headers: HeaderMap) -> Response {
    let format = Exposition::negotiate(
        headers
            .get(header::ACCEPT)
            .and_then(|accept| accept.to_str().ok()),
    );
    if let (Some(gauge), Some(size)) = (
        &state.live.metrics().sqlite_wal_bytes,
        state.service.wal_bytes().await,
    ) {
        match size {
            Ok(bytes) => {
                gauge.set(i64::try_from(bytes).unwrap_or(i64::MAX));
            }
            // The other metrics are still worth scraping; the gauge keeps its last reading.
            Err(error) => tracing::warn!(%error, "cannot read the size of the SQLite WAL"),
        }
    }
    let mut response = (StatusCode::OK, state.live.metrics().render_as(format)).into_response();
    let headers = response.headers_mut();
    headers.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static(format.content_type()),
    );
    headers.insert(header::VARY, HeaderValue::from_static("accept"));
    response
}

async fn alerts(State(state): State<AppState>) -> Result<Response, Problem> {
    let stored = state.service.alert_states().await?;
    Ok(json_ok(&AlertList {
        alerts: state.live.alert_views(&stored),
    }))
}

async fn stats(State(state): State<AppState>) -> Response {
    json_ok(&state.live.stats_view().await)
}
