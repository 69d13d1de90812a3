//! `GET /v1/overlaps` and `GET /v1/stats`.

use super::problem::{json_ok, Problem};
use super::AppState;
use crate::domain::{Overlap, OverlapState, ResourceKey};
use crate::metrics::Exposition;
use crate::store::OverlapQuery;
use axum::extract::{RawQuery, State};
use axum::http::{header, HeaderMap, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::Router;
use serde::Serialize;

pub fn router() -> Router<AppState> {
    Router::new()
        .route("/v1/overlaps", get(overlaps))
        .route("/v1/stats", get(stats))
        .route("/v1/alerts", get(alerts))
}

#[derive(Serialize)]
struct OverlapList {
    overlaps: Vec<Overlap>,
}

/// `state=open|closed|all` (default all), `resource=KEY`, `limit` 1 to 1000 (default 100).
async fn overlaps(
    State(state): State<AppState>,
    RawQuery(raw): RawQuery,
) -> Result<Response, Problem> {
    let pairs = super::query_pairs(raw.as_deref().unwrap_or(""))?;
    let mut query = OverlapQuery {
        limit: 100,
        ..OverlapQuery::default()
    };
    let mut seen: Vec<String> = Vec::new();
    for (name, value) in pairs {
        if seen.contains(&name) {
            return Err(Problem::invalid_request(format!(
                "{name} is given more than once"
            )));
        }
        match name.as_str() {
            "state" => {
                query.state = match value.as_str() {
                    "all" => None,
                    other => Some(OverlapState::parse(other).ok_or_else(|| {
                        Problem::invalid_request("state must be open, closed or all")
                    })?),
                }
            }
            "resource" => {
                let key = ResourceKey::parse(value).map_err(|e| Problem::invalid_request(e.0))?;
                query.resource = Some(key.as_str().to_owned());
            }
            "limit" => {
                query.limit = value
                    .parse::<u32>()
                    .ok()
                    .filter(|limit| (1..=1000).contains(limit))
                    .ok_or_else(|| {
                        Problem::invalid_request("limit must be an integer from 1 to 1000")
                    })?;
            }
            other => {
                return Err(Problem::invalid_request(format!(
                    "unknown parameter {other:?}; known: state, resource, limit"
                )))
            }
        }
        seen.push(name);
    }
    let overlaps = state.live.store.overlaps(&query).await?;
    Ok(json_ok(&OverlapList { overlaps }))
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
        &state.live.metrics.sqlite_wal_bytes,
        state.live.store.wal_bytes().await,
    ) {
        match size {
            Ok(bytes) => {
                gauge.set(i64::try_from(bytes).unwrap_or(i64::MAX));
            }
            // The other metrics are still worth scraping; the gauge keeps its last reading.
            Err(error) => tracing::warn!(%error, "cannot read the size of the SQLite WAL"),
        }
    }
    let mut response = (StatusCode::OK, state.live.metrics.render_as(format)).into_response();
    let headers = response.headers_mut();
    headers.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static(format.content_type()),
    );
    headers.insert(header::VARY, HeaderValue::from_static("accept"));
    response
}

#[derive(Serialize)]
struct AlertList {
    alerts: Vec<crate::live::alerts::AlertView>,
}

async fn alerts(State(state): State<AppState>) -> Result<Response, Problem> {
    let stored = state.live.store.alert_states().await?;
    Ok(json_ok(&AlertList {
        alerts: crate::live::alerts::views(&state.live.config.alerts, &stored),
    }))
}

async fn stats(State(state): State<AppState>) -> Response {
    json_ok(&state.live.stats_view().await)
}
