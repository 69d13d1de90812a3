//! Query strings, parsed strictly into typed parameters: an unknown or repeated parameter, a
//! value out of range, or an escape that is not UTF-8 is a `400`, never a silently different
//! answer (a typo must not return the wrong rows).

use super::problem::Problem;
use crate::domain::{OverlapState, ParseError, ResourceKey};
use axum::extract::FromRequestParts;
use axum::http::request::Parts;
use serde::de::DeserializeOwned;
use serde::Deserialize;

/// A query's parameters: a struct that deserializes from the query string, and the names it
/// knows, so that an unknown one is refused by name.
pub trait QueryParams: DeserializeOwned {
    const KNOWN: &'static [&'static str];
}

/// `T` from the query string, strictly: every escape must decode to UTF-8 (the form decoder
/// would replace a bad one with U+FFFD and carry on), every name must be one `T` knows, no
/// name may repeat, and each value must parse.
pub struct StrictQuery<T>(pub T);

impl<T: QueryParams, S: Send + Sync> FromRequestParts<S> for StrictQuery<T> {
    type Rejection = Problem;

    async fn from_request_parts(parts: &mut Parts, _: &S) -> Result<Self, Problem> {
        parse(parts.uri.query().unwrap_or_default()).map(Self)
    }
}

/// Parses a query string into `T`, with the refusals `StrictQuery` answers.
pub fn parse<T: QueryParams>(raw: &str) -> Result<T, Problem> {
    if let Some(part) = raw.split(['&', '=']).find(|part| {
        percent_encoding::percent_decode_str(part)
            .decode_utf8()
            .is_err()
    }) {
        return Err(Problem::invalid_request(format!(
            "query parameter {part:?} is not valid UTF-8"
        )));
    }
    let pairs: Vec<(String, String)> = serde_urlencoded::from_str(raw)
        .map_err(|error| Problem::invalid_request(format!("malformed query string: {error}")))?;
    let mut seen: Vec<&str> = Vec::with_capacity(pairs.len());
    for (name, _) in &pairs {
        if !T::KNOWN.contains(&name.as_str()) {
            return Err(Problem::invalid_request(format!(
                "unknown parameter {name:?}; known: {}",
                T::KNOWN.join(", ")
            )));
        }
        if seen.contains(&name.as_str()) {
            return Err(Problem::invalid_request(format!(
                "{name} is given more than once"
            )));
        }
        seen.push(name);
    }
    serde_urlencoded::from_str(raw).map_err(|error| Problem::invalid_request(error.to_string()))
}

/// `limit`: how many rows, from 1 to `MAX`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(try_from = "String")]
pub struct Limit<const MAX: u32>(pub u32);

impl<const MAX: u32> TryFrom<String> for Limit<MAX> {
    type Error = ParseError;

    fn try_from(text: String) -> Result<Self, ParseError> {
        text.parse::<u32>()
            .ok()
            .filter(|limit| (1..=MAX).contains(limit))
            .map(Self)
            .ok_or_else(|| ParseError(format!("limit must be an integer from 1 to {MAX}")))
    }
}

/// `before`: only rows with an id below this one.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(try_from = "String")]
pub struct Before(pub i64);

impl TryFrom<String> for Before {
    type Error = ParseError;

    fn try_from(text: String) -> Result<Self, ParseError> {
        text.parse::<i64>()
            .ok()
            .filter(|id| *id >= 1)
            .map(Self)
            .ok_or_else(|| ParseError::new("before must be an id (a positive integer)"))
    }
}

/// `after`: only rows with an id above this one (0: from the start).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(try_from = "String")]
pub struct After(pub i64);

impl TryFrom<String> for After {
    type Error = ParseError;

    fn try_from(text: String) -> Result<Self, ParseError> {
        text.parse::<i64>()
            .ok()
            .filter(|id| *id >= 0)
            .map(Self)
            .ok_or_else(|| ParseError::new("after must be an id (an integer from 0)"))
    }
}

/// A resource key, by the same rules as in a path.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(try_from = "String")]
pub struct Resource(pub ResourceKey);

impl TryFrom<String> for Resource {
    type Error = ParseError;

    fn try_from(text: String) -> Result<Self, ParseError> {
        ResourceKey::parse(text).map(Self)
    }
}

/// `state=open|closed|all`; `all` is no filter.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(try_from = "String")]
pub struct StateFilter(pub Option<OverlapState>);

impl TryFrom<String> for StateFilter {
    type Error = ParseError;

    fn try_from(text: String) -> Result<Self, ParseError> {
        match text.as_str() {
            "all" => Ok(Self(None)),
            other => OverlapState::parse(other)
                .map(|state| Self(Some(state)))
                .ok_or_else(|| ParseError::new("state must be open, closed or all")),
        }
    }
}

/// A time in RFC 3339 (`2026-12-01T10:00:00Z`, any offset), as microseconds since the epoch.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(try_from = "String")]
pub struct Time(pub i64);

impl TryFrom<String> for Time {
    type Error = ParseError;

    fn try_from(text: String) -> Result<Self, ParseError> {
        chrono::DateTime::parse_from_rfc3339(&text)
            .map(|at| Self(at.timestamp_micros()))
            .map_err(|_| ParseError::new("a time must be RFC 3339, like 2026-12-01T10:00:00Z"))
    }
}
