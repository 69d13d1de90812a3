//! Browsers: a request that carries an `Origin` header comes from a web page, and only the
//! origins named with `serve --allow-origin` may reach the daemon. Everything else gets
//! `403 cross-origin` before any handler runs, so a page on another site can neither take a
//! lease nor write, whatever it sends; allowed origins get CORS answers, preflights included.

use super::problem::Problem;
use super::AppState;
use crate::api::problem::ProblemType;
use axum::extract::{Request, State};
use axum::http::{header, HeaderName, HeaderValue, Method};
use axum::middleware::Next;
use axum::response::Response;
use std::time::Duration;
use tower_http::cors::{AllowOrigin, CorsLayer};

/// The origins `--allow-origin` names, in the form browsers send them (`scheme://host[:port]`).
#[derive(Debug, Clone, Default)]
pub struct AllowedOrigins(Vec<HeaderValue>);

#[derive(Debug, PartialEq, Eq, thiserror::Error)]
#[error("--allow-origin {0:?}: expected an origin such as https://ops.example.com or http://127.0.0.1:8080, with no path")]
pub struct InvalidOrigin(pub String);

impl AllowedOrigins {
    pub fn parse<S: AsRef<str>>(origins: &[S]) -> Result<Self, InvalidOrigin> {
        origins
            .iter()
            .map(|origin| normalise(origin.as_ref()))
            .collect::<Result<Vec<_>, _>>()
            .map(Self)
    }

    fn allows(&self, origin: &HeaderValue) -> bool {
        let presented = origin.to_str().map(str::to_ascii_lowercase);
        presented.is_ok_and(|presented| self.0.iter().any(|allowed| allowed == &presented))
    }

    /// The CORS answers for the allowed origins (none for an empty list). Credentials are not
    /// allowed: a key travels in `Authorization`, which a page must set itself.
    pub fn cors(&self) -> CorsLayer {
        CorsLayer::new()
            .allow_origin(AllowOrigin::list(self.0.clone()))
            .allow_methods([Method::GET, Method::HEAD, Method::PUT, Method::POST])
            .allow_headers([
                header::AUTHORIZATION,
                header::CONTENT_TYPE,
                header::IF_MATCH,
                HeaderName::from_static("fencing-token"),
                HeaderName::from_static("fencing-owner"),
                HeaderName::from_static("fencing-lease"),
                HeaderName::from_static("idempotency-key"),
                HeaderName::from_static("last-event-id"),
            ])
            .expose_headers([
                header::ETAG,
                HeaderName::from_static("fencing-token"),
                HeaderName::from_static("idempotent-replayed"),
            ])
            .max_age(Duration::from_secs(600))
    }
}

fn normalise(origin: &str) -> Result<HeaderValue, InvalidOrigin> {
    let invalid = || InvalidOrigin(origin.to_owned());
    let lower = origin.trim_end_matches('/').to_ascii_lowercase();
    let host = lower
        .strip_prefix("https://")
        .or_else(|| lower.strip_prefix("http://"))
        .ok_or_else(invalid)?;
    let well_formed = !host.is_empty()
        && host
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"-.:[]".contains(&b));
    if !well_formed {
        return Err(invalid());
    }
    HeaderValue::from_str(&lower).map_err(|_| invalid())
}

/// Refuses every request whose `Origin` is not allowed; a refused write is audited.
pub async fn guard(State(state): State<AppState>, request: Request, next: Next) -> Response {
    let Some(origin) = request.headers().get(header::ORIGIN) else {
        return next.run(request).await;
    };
    if state.allowed_origins.allows(origin) {
        return next.run(request).await;
    }
    let shown = String::from_utf8_lossy(origin.as_bytes()).into_owned();
    let detail = format!(
        "requests from the web origin {shown:?} are refused; serve --allow-origin ORIGIN allows one"
    );
    let problem = Problem::new(ProblemType::CrossOrigin, detail);
    super::refusal::refuse(&state, request, problem, None).await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn origins_are_compared_as_browsers_send_them() {
        let allowed =
            AllowedOrigins::parse(&["https://Ops.Example.com/", "http://127.0.0.1:8080"]).unwrap();
        let value = |text: &str| HeaderValue::from_str(text).unwrap();
        assert!(allowed.allows(&value("https://ops.example.com")));
        assert!(allowed.allows(&value("http://127.0.0.1:8080")));
        assert!(!allowed.allows(&value("http://127.0.0.1:8081")));
        assert!(!allowed.allows(&value("http://ops.example.com")));
        assert!(!allowed.allows(&value("null")));
        assert!(!AllowedOrigins::default().allows(&value("http://127.0.0.1:8080")));
    }

    #[test]
    fn malformed_origins_are_refused() {
        for bad in [
            "ops.example.com",
            "https://ops.example.com/path",
            "ftp://x",
            "https://",
            "*",
        ] {
            assert_eq!(
                AllowedOrigins::parse(&[bad]).unwrap_err(),
                InvalidOrigin(bad.into())
            );
        }
    }
}
