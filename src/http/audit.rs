//! `GET /v1/audit`.

use super::problem::{json_ok, Problem};
use super::AppState;
use crate::domain::{AuditEntry, ResourceKey};
use crate::store::AuditQuery;
use axum::extract::{RawQuery, State};
use axum::response::Response;
use axum::routing::get;
use axum::Router;
use serde::Serialize;

pub const DEFAULT_LIMIT: u32 = 100;
pub const MAX_LIMIT: u32 = 1000;

pub fn router() -> Router<AppState> {
    Router::new().route("/v1/audit", get(list))
}

#[derive(Serialize)]
struct AuditPage<'a> {
    entries: &'a [AuditEntry],
}

async fn list(
    State(state): State<AppState>,
    RawQuery(query): RawQuery,
) -> Result<Response, Problem> {
    let query = parse_query(query.as_deref().unwrap_or(""))?;
    let entries = state.service.audit(&query).await?;
    Ok(json_ok(&AuditPage { entries: &entries }))
}

/// Parses the query strictly: an unknown or repeated parameter is an error rather than
/// silently ignored, so a typo never returns the wrong rows.
pub fn parse_query(raw: &str) -> Result<AuditQuery, Problem> {
    let pairs = super::query_pairs(raw)?;
    let mut query = AuditQuery {
        limit: DEFAULT_LIMIT,
        ..AuditQuery::default()
    };
    let mut seen = Vec::new();
    for (name, value) in pairs {
        if seen.contains(&name) {
            return Err(Problem::invalid_request(format!(
                "{name} is given more than once"
            )));
        }
        match name.as_str() {
            "resource" => {
                query.resource =
                    Some(ResourceKey::parse(value).map_err(|e| Problem::invalid_request(e.0))?);
            }
            "limit" => {
                query.limit = value
                    .parse::<u32>()
                    .ok()
                    .filter(|limit| (1..=MAX_LIMIT).contains(limit))
                    .ok_or_else(|| {
                        Problem::invalid_request(format!(
                            "limit must be an integer from 1 to {MAX_LIMIT}"
                        ))
                    })?;
            }
            "before" => {
                query.before = Some(
                    value
                        .parse::<i64>()
                        .ok()
                        .filter(|before| *before >= 1)
                        .ok_or_else(|| {
                            Problem::invalid_request(
                                "before must be an audit id (a positive integer)",
                            )
                        })?,
                );
            }
            "after" => {
                query.after = Some(
                    value
                        .parse::<i64>()
                        .ok()
                        .filter(|after| *after >= 0)
                        .ok_or_else(|| {
                            Problem::invalid_request(
                                "after must be an audit id (an integer from 0)",
                            )
                        })?,
                );
            }
            other => {
                return Err(Problem::invalid_request(format!(
                    "unknown parameter {other:?}; known: resource, limit, before, after"
                )))
            }
        }
        seen.push(name);
    }
    Ok(query)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_and_bounds() {
        let query = parse_query("").unwrap();
        assert_eq!(query.limit, 100);
        assert!(query.resource.is_none() && query.before.is_none());
        let query = parse_query("resource=accounts%2Ftotals&limit=1000&before=42").unwrap();
        assert_eq!(query.resource.unwrap().as_str(), "accounts/totals");
        assert_eq!((query.limit, query.before), (1000, Some(42)));
        let query = parse_query("after=0&before=9").unwrap();
        assert_eq!((query.after, query.before), (Some(0), Some(9)));
        assert_eq!(
            parse_query("resource=a+b%2Fc")
                .unwrap()
                .resource
                .unwrap()
                .as_str(),
            "a b/c"
        );
        for bad in [
            "resource=%FF",
            "limit=0",
            "limit=1001",
            "limit=-1",
            "limit=ten",
            "limit=",
            "before=0",
            "before=-3",
            "after=-1",
            "after=x",
            "after=1&after=2",
            "before=99999999999999999999",
            "resource=",
            "resource=%00",
            "owner=x",
            "limit=1&limit=2",
        ] {
            assert!(parse_query(bad).is_err(), "{bad:?} was accepted");
        }
    }
}
