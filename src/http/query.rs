//! Query strings, parsed strictly into typed parameters: an unknown or repeated parameter, a
//! value out of range, or an escape that is not UTF-8 is a `400`, never a silently different
//! answer (a typo must not return the wrong rows).

use super::problem::Problem;
use crate::domain::{OverlapState, ResourceKey};
use axum::extract::{FromRequestParts, Query};
use axum::http::request::Parts;
use serde::de::DeserializeOwned;
use serde::Deserialize;

/// `Query<T>` with `T` denying unknown fields, after a check that every escape decodes to
/// UTF-8 (the form decoder would replace a bad one with U+FFFD and carry on).
pub struct StrictQuery<T>(pub T);

impl<T: DeserializeOwned, S: Send + Sync> FromRequestParts<S> for StrictQuery<T> {
    type Rejection = Problem;

    async fn from_request_parts(parts: &mut Parts, _: &S) -> Result<Self, Problem> {
        let raw = parts.uri.query().unwrap_or_default();
        if let Some(part) = raw.split(['&', '=']).find(|part| {
            percent_encoding::percent_decode_str(part)
                .decode_utf8()
                .is_err()
        }) {
            return Err(Problem::invalid_request(format!(
                "query parameter {part:?} is not valid UTF-8"
            )));
        }
        Query::try_from_uri(&parts.uri)
            .map(|Query(value)| Self(value))
            .map_err(|rejection| Problem::invalid_request(rejection.body_text()))
    }
}

/// `limit`: how many rows, from 1 to `MAX`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(try_from = "String")]
pub struct Limit<const MAX: u32>(pub u32);

impl<const MAX: u32> TryFrom<String> for Limit<MAX> {
    type Error = String;

    fn try_from(text: String) -> Result<Self, String> {
        text.parse::<u32>()
            .ok()
            .filter(|limit| (1..=MAX).contains(limit))
            .map(Self)
            .ok_or_else(|| format!("limit must be an integer from 1 to {MAX}"))
    }
}

/// An audit id to page from: `before` takes ids from 1 (rows below it), `after` ids from 0
/// (rows above it).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(try_from = "String")]
pub struct AuditId<const MIN: i64>(pub i64);

impl<const MIN: i64> TryFrom<String> for AuditId<MIN> {
    type Error = String;

    fn try_from(text: String) -> Result<Self, String> {
        text.parse::<i64>()
            .ok()
            .filter(|id| *id >= MIN)
            .map(Self)
            .ok_or_else(|| format!("an audit id must be an integer from {MIN}"))
    }
}

/// A resource key, by the same rules as in a path.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(try_from = "String")]
pub struct Resource(pub ResourceKey);

impl TryFrom<String> for Resource {
    type Error = String;

    fn try_from(text: String) -> Result<Self, String> {
        ResourceKey::parse(text).map(Self).map_err(|e| e.0)
    }
}

/// `state=open|closed|all`; `all` is no filter.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(try_from = "String")]
pub struct StateFilter(pub Option<OverlapState>);

impl TryFrom<String> for StateFilter {
    type Error = &'static str;

    fn try_from(text: String) -> Result<Self, Self::Error> {
        match text.as_str() {
            "all" => Ok(Self(None)),
            other => OverlapState::parse(other)
                .map(|state| Self(Some(state)))
                .ok_or("state must be open, closed or all"),
        }
    }
}

/// A time in RFC 3339 (`2026-12-01T10:00:00Z`, any offset), as microseconds since the epoch.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(try_from = "String")]
pub struct Time(pub i64);

impl TryFrom<String> for Time {
    type Error = &'static str;

    fn try_from(text: String) -> Result<Self, Self::Error> {
        chrono::DateTime::parse_from_rfc3339(&text)
            .map(|at| Self(at.timestamp_micros()))
            .map_err(|_| "a time must be RFC 3339, like 2026-12-01T10:00:00Z")
    }
}
