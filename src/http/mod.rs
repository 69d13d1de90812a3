//! The axum edge: each module owns its routes; errors take one shape (`problem`).

mod audit;
pub mod auth;
mod events;
mod health;
mod leases;
mod listener;
mod monitoring;
pub mod openapi;
pub mod origin;
pub mod problem;
mod resources;
pub mod scopes;
mod write_request;

use crate::app::service::FenceService;
use crate::live::{Live, LiveConfig};
use crate::metrics::Metrics;
use crate::store::StoreError;
use auth::ApiKeys;
use axum::http::{Method, Uri};
use axum::Router;
pub use listener::{serve, serve_with, ServeLimits};
use origin::AllowedOrigins;
use problem::Problem;
use std::sync::Arc;

/// What every handler shares. One `Arc`: axum clones the state for each extractor and
/// middleware of every request, and cloning the parts one by one (a dozen reference counts,
/// shared by both cores) was about 6 % of the HTTP workers' samples under load.
#[derive(Clone)]
pub struct AppState(Arc<SharedState>);

pub struct SharedState {
    pub service: FenceService,
    pub live: Live,
    /// When set, every `/v1` request needs one of these keys.
    pub api_keys: Option<Arc<ApiKeys>>,
    /// The web origins whose pages may call the daemon (`--allow-origin`).
    pub allowed_origins: AllowedOrigins,
}

/// Who may reach the API: API keys with their scopes, and the web origins allowed.
#[derive(Debug, Clone, Default)]
pub struct Access {
    pub api_keys: Option<Arc<ApiKeys>>,
    pub allowed_origins: AllowedOrigins,
}

impl std::ops::Deref for AppState {
    type Target = SharedState;

    fn deref(&self) -> &SharedState {
        &self.0
    }
}

impl AppState {
    /// Starts the live side over the service's store and wires the service to wake it.
    pub async fn start(
        service: FenceService,
        live: LiveConfig,
        access: Access,
    ) -> Result<Self, StoreError> {
        let metrics = Metrics::for_backend(service.store().backend());
        let live = Live::start(service.store().clone(), live, metrics.clone()).await?;
        Ok(Self(Arc::new(SharedState {
            service: service
                .publishing_to(live.tail.feed.clone())
                .measured(metrics),
            live,
            api_keys: access.api_keys,
            allowed_origins: access.allowed_origins,
        })))
    }
}

/// The whole HTTP API, ready to serve or to drive in tests.
pub fn router(state: AppState) -> Router {
    let cors = state.allowed_origins.cors();
    let v1 = Router::new()
        .merge(resources::router())
        .merge(audit::router())
        .merge(leases::router())
        .merge(events::router())
        .merge(monitoring::router())
        .merge(openapi::router())
        .route_layer(axum::middleware::from_fn_with_state(
            state.clone(),
            auth::require_key,
        ));
    Router::new()
        .merge(v1)
        .merge(health::router())
        .merge(monitoring::metrics_router())
        .fallback(not_found)
        .method_not_allowed_fallback(method_not_allowed)
        .route_layer(axum::middleware::from_fn_with_state(
            state.clone(),
            settled_reads,
        ))
        .with_state(state.clone())
        .layer(axum::middleware::from_fn(limit_headers))
        .layer(cors)
        // Outside CORS, so that a foreign origin's preflight is refused rather than answered.
        .layer(axum::middleware::from_fn_with_state(state, origin::guard))
        // A bug must still answer in the one error shape, never with a dropped connection.
        .layer(tower_http::catch_panic::CatchPanicLayer::custom(panicked))
}

/// Refuses requests with oversized headers, except writes, which refuse them themselves so that
/// the attempt is audited like any other invalid write.
async fn limit_headers(
    request: axum::extract::Request,
    next: axum::middleware::Next,
) -> axum::response::Response {
    use axum::response::IntoResponse;
    let is_write =
        request.method() == Method::PUT && request.uri().path().starts_with(resources::PREFIX);
    match write_request::oversized_headers(request.headers()) {
        Some(detail) if !is_write => Problem::invalid_request(detail).into_response(),
        _ => next.run(request).await,
    }
}

/// Answers a read only once everything it may have seen is on disk (`Store::settle`): on
/// SQLite a group commit is visible a moment before its sync ends. Writes wait for their own
/// durability instead.
async fn settled_reads(
    axum::extract::State(state): axum::extract::State<AppState>,
    request: axum::extract::Request,
    next: axum::middleware::Next,
) -> axum::response::Response {
    use axum::response::IntoResponse;
    let is_read = matches!(*request.method(), Method::GET | Method::HEAD);
    let response = next.run(request).await;
    if !is_read {
        return response;
    }
    match state.service.store().settle().await {
        Ok(()) => response,
        Err(error) => Problem::from(error).into_response(),
    }
}

fn panicked(_: Box<dyn std::any::Any + Send + 'static>) -> axum::response::Response {
    use axum::response::IntoResponse;
    tracing::error!("a request handler panicked");
    Problem::internal().into_response()
}

/// Splits a query string into decoded pairs, strictly: `+` is a space, escapes must decode to
/// UTF-8, and anything else is a `400` rather than a silently different value.
pub(crate) fn query_pairs(raw: &str) -> Result<Vec<(String, String)>, Problem> {
    let decode = |part: &str| {
        let spaced = part.replace('+', " ");
        let bytes: Vec<u8> = percent_encoding::percent_decode_str(&spaced).collect();
        String::from_utf8(bytes).map_err(|_| {
            Problem::invalid_request(format!("query parameter {part:?} is not valid UTF-8"))
        })
    };
    raw.split('&')
        .filter(|pair| !pair.is_empty())
        .map(|pair| {
            let (name, value) = pair.split_once('=').unwrap_or((pair, ""));
            Ok((decode(name)?, decode(value)?))
        })
        .collect()
}

async fn not_found(uri: Uri) -> Problem {
    Problem::not_found(format!("no such endpoint: {}", uri.path()))
}

async fn method_not_allowed(method: Method, uri: Uri) -> Problem {
    Problem::method_not_allowed(format!("{method} is not allowed on {}", uri.path()))
}
