//! `/healthz` (the process runs) and `/readyz` (the database answers).

use super::problem::Problem;
use super::AppState;
use axum::extract::State;
use axum::routing::get;
use axum::{Json, Router};
use serde_json::{json, Value};
use std::time::Duration;

pub fn router() -> Router<AppState> {
    Router::new()
        .route("/healthz", get(healthz))
        .route("/readyz", get(readyz))
}

async fn healthz() -> Json<Value> {
    Json(json!({ "status": "ok" }))
}

async fn readyz(State(state): State<AppState>) -> Result<Json<Value>, Problem> {
    match tokio::time::timeout(Duration::from_secs(2), state.service.store().ping()).await {
        Ok(Ok(())) => {
            match tokio::time::timeout(Duration::from_secs(2), state.service.authorities().ready())
                .await
            {
                Ok(Ok(())) => Ok(Json(json!({ "status": "ready" }))),
                Ok(Err(error)) => Err(Problem::unavailable(format!(
                    "the lock service does not answer: {error}"
                ))),
                Err(_) => Err(Problem::unavailable(
                    "the lock service did not answer within 2 s",
                )),
            }
        }
        Ok(Err(error)) => Err(Problem::from(error)),
        Err(_) => Err(Problem::unavailable(
            "the database did not answer within 2 s",
        )),
    }
}
