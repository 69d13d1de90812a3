//! API keys (`serve --api-key-file`): every `/v1` request must present one as a bearer token.
//! Keys are kept only as SHA-256 digests, compared in constant time, and never logged.

use super::problem::Problem;
use super::write_request;
use super::AppState;
use crate::domain::{Outcome, ResourceKey};
use axum::extract::{Request, State};
use axum::http::{header, Method};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use sha2::{Digest, Sha256};
use std::path::Path;

/// The identity a request was authenticated as: its key's name, if the key has one.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Caller(pub Option<String>);

struct ApiKey {
    name: Option<String>,
    digest: [u8; 32],
}

pub struct ApiKeys {
    keys: Vec<ApiKey>,
}

impl std::fmt::Debug for ApiKeys {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "ApiKeys({} keys)", self.keys.len())
    }
}

impl ApiKeys {
    pub fn load(path: &Path) -> Result<Self, String> {
        let text = std::fs::read_to_string(path)
            .map_err(|e| format!("cannot read API key file {}: {e}", path.display()))?;
        Self::parse(&text).map_err(|e| format!("{}: {e}", path.display()))
    }

    /// One key per line, optionally `name:key`; blank lines and `#` comments are skipped.
    pub fn parse(text: &str) -> Result<Self, String> {
        let mut keys = Vec::new();
        for (index, line) in text.lines().enumerate() {
            let line = line.trim();
            if line.is_empty() || line.starts_with('#') {
                continue;
            }
            let (name, key) = match line.split_once(':') {
                Some((name, key)) => (Some(name.trim().to_owned()), key.trim()),
                None => (None, line),
            };
            if key.is_empty() || name.as_deref() == Some("") {
                return Err(format!("line {}: expected KEY or NAME:KEY", index + 1));
            }
            if !key.bytes().all(|b| b.is_ascii_graphic()) {
                return Err(format!(
                    "line {}: a key must be printable ASCII without spaces",
                    index + 1
                ));
            }
            keys.push(ApiKey {
                name,
                digest: Sha256::digest(key.as_bytes()).into(),
            });
        }
        if keys.is_empty() {
            return Err("no keys".into());
        }
        Ok(Self { keys })
    }

    /// The caller presenting `key`, if any. Every configured key is compared, in constant time,
    /// so the time taken says nothing about which key (or how much of one) matched.
    pub fn authenticate(&self, key: &str) -> Option<Caller> {
        let presented: [u8; 32] = Sha256::digest(key.as_bytes()).into();
        let mut found = None;
        for candidate in &self.keys {
            let difference = candidate
                .digest
                .iter()
                .zip(presented.iter())
                .fold(0u8, |acc, (a, b)| acc | (a ^ b));
            if difference == 0 {
                found = Some(Caller(candidate.name.clone()));
            }
        }
        found
    }
}

/// Middleware for `/v1`: lets authenticated requests through with their `Caller`, answers the
/// rest with `401`, auditing the refused writes.
pub async fn require_key(
    State(state): State<AppState>,
    mut request: Request,
    next: Next,
) -> Response {
    let Some(keys) = state.api_keys.as_deref() else {
        return next.run(request).await;
    };
    let presented = request
        .headers()
        .get(header::AUTHORIZATION)
        .and_then(|value| value.to_str().ok())
        .and_then(|value| {
            let (scheme, token) = value.split_once(' ')?;
            scheme.eq_ignore_ascii_case("bearer").then(|| token.trim())
        });
    if let Some(caller) = presented.and_then(|key| keys.authenticate(key)) {
        request.extensions_mut().insert(caller);
        return next.run(request).await;
    }
    let detail = if presented.is_some() {
        "the API key is not valid"
    } else {
        "an API key is required: send Authorization: Bearer KEY"
    };
    let problem = Problem::unauthorized(detail);
    if request.method() == Method::PUT {
        if let Some(key) = request
            .uri()
            .path()
            .strip_prefix(super::resources::PREFIX)
            .and_then(|raw| ResourceKey::from_percent_encoded(raw).ok())
        {
            let attempt = write_request::refused_from_headers(
                key,
                request.headers(),
                Outcome::Unauthorized,
                detail,
                None,
            );
            return match state.service.refuse(&attempt).await {
                Ok(entry) => problem
                    .with_members(super::resources::members(&entry))
                    .into_response(),
                Err(error) => Problem::from(error).into_response(),
            };
        }
    }
    problem.into_response()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn named_and_anonymous_keys() {
        let keys = ApiKeys::parse("# ops\nalice:k-alice-1\n\nk-anon-2\n").unwrap();
        assert_eq!(
            keys.authenticate("k-alice-1"),
            Some(Caller(Some("alice".into())))
        );
        assert_eq!(keys.authenticate("k-anon-2"), Some(Caller(None)));
        assert_eq!(keys.authenticate("k-alice"), None);
        assert_eq!(keys.authenticate(""), None);
        assert!(
            !format!("{keys:?}").contains("k-alice-1"),
            "keys never reach logs"
        );
    }

    #[test]
    fn malformed_files_are_refused() {
        assert!(ApiKeys::parse("").is_err());
        assert!(ApiKeys::parse("# only comments\n").is_err());
        assert!(ApiKeys::parse("name:").is_err());
        assert!(ApiKeys::parse(":key").is_err());
        assert!(ApiKeys::parse("has space").is_err());
    }
}
