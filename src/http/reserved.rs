//! The daemon's own leases (`fencewatch/…`, the alert evaluator's among them) fence nothing a
//! client writes: a write naming one in `Fencing-Lease` would be checked against the daemon's
//! generation, which any caller can guess (the first evaluator's is 1). Such a write is refused
//! `403 reserved-name` before the fence, whatever its key, token or body: counted like every
//! refusal before the fence, never audited, nothing changed. Leases' own routes refuse these
//! names themselves (`leases`).

use super::auth::Caller;
use super::problem::Problem;
use super::refusal::{refuse, RESOURCES_PREFIX};
use super::write_request::named_lease;
use super::AppState;
use crate::api::problem::ProblemType;
use crate::domain::LeaseName;
use axum::extract::{Request, State};
use axum::http::Method;
use axum::middleware::Next;
use axum::response::Response;

/// Middleware for `/v1`, inside the key check (a key's scopes are decided first): refuses a
/// `PUT` of a resource whose `Fencing-Lease` names a reserved lease.
pub(super) async fn guard(State(state): State<AppState>, request: Request, next: Next) -> Response {
    let is_write =
        request.method() == Method::PUT && request.uri().path().starts_with(RESOURCES_PREFIX);
    let reserved =
        is_write && named_lease(request.headers()).is_some_and(|lease| lease.is_reserved());
    if !reserved {
        return next.run(request).await;
    }
    let caller = request
        .extensions()
        .get::<Caller>()
        .and_then(|Caller(name)| name.clone());
    let detail = format!(
        "Fencing-Lease names a lease under {:?}, which belongs to the daemon itself; a write \
         cannot be fenced by it",
        LeaseName::RESERVED_PREFIX
    );
    let problem = Problem::new(ProblemType::ReservedName, detail);
    refuse(&state, request, problem, caller).await
}
