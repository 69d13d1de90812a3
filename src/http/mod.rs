//! The axum edge: each module owns its routes; errors take one shape (`problem`).

mod audit;
pub mod auth;
mod body;
mod events;
mod health;
pub mod hosts;
mod leases;
mod listener;
mod monitoring;
pub mod openapi;
pub mod origin;
pub mod problem;
mod query;
mod refusal;
mod reserved;
mod reset;
mod resources;
pub mod scopes;
mod slots;
mod write_request;

use crate::api::problem::ProblemType;
use crate::app::service::FenceService;
use crate::live::Live;
use auth::ApiKeys;
use axum::http::{Method, Uri};
use axum::Router;
use hosts::AllowedHosts;
pub use listener::{serve, serve_with, ServeLimits};
use origin::AllowedOrigins;
use problem::Problem;
use std::sync::Arc;

/// What every handler shares. One `Arc`: axum clones the state for each extractor and
/// middleware of every request, and a dozen separate reference counts, shared by both cores,
/// showed in profiles (docs/performance.md, "tried").
#[derive(Clone)]
pub struct AppState(Arc<SharedState>);

pub struct SharedState {
    pub service: FenceService,
    pub live: Live,
    /// When set, every `/v1` request needs one of these keys.
    pub api_keys: Option<Arc<ApiKeys>>,
    /// The web origins whose pages may call the daemon (`--allow-origin`).
    pub allowed_origins: AllowedOrigins,
    /// The host names requests may name (`--allowed-host`).
    pub allowed_hosts: AllowedHosts,
}

/// Who may reach the API: API keys with their scopes, the web origins and the host names
/// allowed.
#[derive(Debug, Clone, Default)]
pub struct Access {
    pub api_keys: Option<Arc<ApiKeys>>,
    pub allowed_origins: AllowedOrigins,
    pub allowed_hosts: AllowedHosts,
}

impl std::ops::Deref for AppState {
    type Target = SharedState;

    fn deref(&self) -> &SharedState {
        &self.0
    }
}

impl AppState {
    /// What the handlers share: the service (already publishing to `live`), the live side, and
    /// who may call. `commands::serve::start` composes them.
    pub fn new(service: FenceService, live: Live, access: Access) -> Self {
        Self(Arc::new(SharedState {
            service,
            live,
            api_keys: access.api_keys,
            allowed_origins: access.allowed_origins,
            allowed_hosts: access.allowed_hosts,
        }))
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
        // Inside the key check: a key's scopes are decided first, whatever the lease.
        .route_layer(axum::middleware::from_fn_with_state(
            state.clone(),
            reserved::guard,
        ))
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
        .layer(axum::middleware::from_fn_with_state(
            state.clone(),
            body::read_deadline,
        ))
        .layer(cors)
        // Outside CORS, so that a foreign origin's preflight is refused rather than answered.
        .layer(axum::middleware::from_fn_with_state(
            state.clone(),
            origin::guard,
        ))
        // Before anything else: a request for another host is not this daemon's to answer.
        .layer(axum::middleware::from_fn_with_state(state, hosts::guard))
        // A bug must still answer in the one error shape, never with a dropped connection.
        .layer(tower_http::catch_panic::CatchPanicLayer::custom(panicked))
        .layer(axum::middleware::from_fn(log_failures))
}

/// Logs every `5xx` once, with what caused it: answers stay free of side effects, and an
/// internal error's details reach the log but never the client.
async fn log_failures(
    request: axum::extract::Request,
    next: axum::middleware::Next,
) -> axum::response::Response {
    let method = request.method().clone();
    let path = request.uri().path().to_owned();
    let response = next.run(request).await;
    let status = response.status();
    if status.is_server_error() {
        let error = response
            .extensions()
            .get::<problem::FailureCause>()
            .map_or("", |cause| cause.0.as_str());
        if status == axum::http::StatusCode::SERVICE_UNAVAILABLE {
            tracing::warn!(%method, %path, %status, error, "request failed: a dependency is unavailable");
        } else {
            tracing::error!(%method, %path, %status, error, "request failed");
        }
    }
    response
}

/// Refuses requests with oversized headers, except writes, which refuse them themselves so that
/// the attempt is audited like any other invalid write.
async fn limit_headers(
    request: axum::extract::Request,
    next: axum::middleware::Next,
) -> axum::response::Response {
    use axum::response::IntoResponse;
    let is_write = request.method() == Method::PUT
        && request.uri().path().starts_with(refusal::RESOURCES_PREFIX);
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
    match state.service.settle().await {
        Ok(()) => response,
        // Not `From<StoreError>`'s answer to a timeout, which speaks of a write's outcome.
        Err(error @ crate::store::StoreError::TimedOut(_)) => Problem::unavailable(format!(
            "{error}; nothing was changed, the read can be retried"
        ))
        .into_response(),
        Err(error) => Problem::from(error).into_response(),
    }
}

fn panicked(_: Box<dyn std::any::Any + Send + 'static>) -> axum::response::Response {
    use axum::response::IntoResponse;
    Problem::internal_because("a request handler panicked").into_response()
}

async fn not_found(uri: Uri) -> Problem {
    Problem::new(
        ProblemType::NotFound,
        format!("no such endpoint: {}", uri.path()),
    )
}

async fn method_not_allowed(method: Method, uri: Uri) -> Problem {
    Problem::new(
        ProblemType::MethodNotAllowed,
        format!("{method} is not allowed on {}", uri.path()),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::body::Body;
    use axum::http::Request;
    use axum::routing::get;
    use std::sync::Mutex;
    use tower::ServiceExt;

    /// A log sink for one test: tracing's formatter writes into the shared buffer.
    #[derive(Clone, Default)]
    struct Captured(Arc<Mutex<Vec<u8>>>);

    impl std::io::Write for Captured {
        fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
            self.0.lock().expect("log buffer").extend_from_slice(bytes);
            Ok(bytes.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    #[tokio::test(flavor = "current_thread")]
    async fn a_5xx_is_logged_once_with_its_cause_which_the_client_never_sees() {
        let log = Captured::default();
        let writer = log.clone();
        let subscriber = tracing_subscriber::fmt()
            .with_ansi(false)
            .with_writer(move || writer.clone())
            .finish();
        let _guard = tracing::subscriber::set_default(subscriber);
        let app = Router::new()
            .route(
                "/boom",
                get(|| async { Problem::internal_because("the disk is on fire") }),
            )
            .route(
                "/missing",
                get(|| async { Problem::new(ProblemType::NotFound, "nothing here") }),
            )
            .layer(axum::middleware::from_fn(log_failures));

        let response = app
            .clone()
            .oneshot(Request::get("/boom").body(Body::empty()).unwrap())
            .await
            .unwrap();
        assert_eq!(
            response.status(),
            axum::http::StatusCode::INTERNAL_SERVER_ERROR
        );
        let body = axum::body::to_bytes(response.into_body(), 4096)
            .await
            .unwrap();
        let body = String::from_utf8_lossy(&body);
        assert!(
            !body.contains("on fire"),
            "the cause stays in the log: {body}"
        );

        let response = app
            .oneshot(Request::get("/missing").body(Body::empty()).unwrap())
            .await
            .unwrap();
        assert_eq!(response.status(), axum::http::StatusCode::NOT_FOUND);

        let logged = String::from_utf8_lossy(&log.0.lock().unwrap()).into_owned();
        assert_eq!(logged.matches("request failed").count(), 1, "{logged}");
        assert!(logged.contains("the disk is on fire"), "{logged}");
        assert!(
            logged.contains("/boom") && logged.contains("ERROR"),
            "{logged}"
        );
    }
}
