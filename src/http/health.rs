//! `/healthz` (the process runs) and `/readyz` (the database answers).

use super::problem::Problem;
use super::AppState;
use crate::app::service::Readiness;
use axum::extract::State;
use axum::routing::get;
use axum::{Json, Router};
use serde::Serialize;
use std::time::Duration;

pub fn router() -> Router<AppState> {
    Router::new()
        .route("/healthz", get(healthz))
        .route("/readyz", get(readyz))
}

/// `{"status": "ok"}` or `{"status": "ready"}`.
#[derive(Serialize)]
struct Health {
    status: &'static str,
}

async fn healthz() -> Json<Health> {
    Json(Health { status: "ok" })
}

/// How long a readiness probe waits for each dependency.
const PROBE_WAIT: Duration = Duration::from_secs(2);

async fn readyz(State(state): State<AppState>) -> Result<Json<Health>, Problem> {
    let silent = |what: &str, wait: Duration| {
        Problem::unavailable(format!("{what} did not answer within {} s", wait.as_secs()))
    };
    match state.service.readiness(PROBE_WAIT).await {
        Readiness::Ready => Ok(Json(Health { status: "ready" })),
        Readiness::DatabaseFailed(error) => Err(Problem::from(error)),
        Readiness::DatabaseSilent(wait) => Err(silent("the database", wait)),
        Readiness::AuthorityFailed(error) => Err(Problem::unavailable(format!(
            "the lock service does not answer: {error}"
        ))),
        Readiness::AuthoritySilent(wait) => Err(silent("the lock service", wait)),
    }
}
