//! `GET /v1/audit`.

use super::problem::{json_ok, Problem};
use super::query::{After, Before, Limit, QueryParams, Resource, StrictQuery};
use super::AppState;
use crate::api::monitoring::AuditPage;
use crate::store::AuditQuery;
use axum::extract::State;
use axum::response::Response;
use axum::routing::get;
use axum::Router;
use serde::Deserialize;

pub const DEFAULT_LIMIT: u32 = 100;
pub const MAX_LIMIT: u32 = 1000;

pub fn router() -> Router<AppState> {
    Router::new().route("/v1/audit", get(list))
}

/// `GET /v1/audit`'s parameters.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AuditParams {
    resource: Option<Resource>,
    limit: Option<Limit<MAX_LIMIT>>,
    before: Option<Before>,
    after: Option<After>,
}

impl QueryParams for AuditParams {
    const KNOWN: &'static [&'static str] = &["resource", "limit", "before", "after"];
}

impl From<AuditParams> for AuditQuery {
    fn from(params: AuditParams) -> Self {
        AuditQuery {
            resource: params.resource.map(|Resource(key)| key),
            before: params.before.map(|Before(id)| id),
            after: params.after.map(|After(id)| id),
            limit: params.limit.map_or(DEFAULT_LIMIT, |Limit(limit)| limit),
        }
    }
}

async fn list(
    State(state): State<AppState>,
    StrictQuery(params): StrictQuery<AuditParams>,
) -> Result<Response, Problem> {
    let entries = state.service.audit(&params.into()).await?;
    Ok(json_ok(&AuditPage { entries }))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse_query(raw: &str) -> Result<AuditQuery, Problem> {
        super::super::query::parse::<AuditParams>(raw).map(AuditQuery::from)
    }

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

    #[test]
    fn refusals_say_what_is_wrong_with_which_parameter() {
        let detail = |raw: &str| parse_query(raw).map(|_| ()).unwrap_err().detail;
        assert_eq!(detail("limit=0"), "limit must be an integer from 1 to 1000");
        assert_eq!(
            detail("before=0"),
            "before must be an id (a positive integer)"
        );
        assert_eq!(detail("after=x"), "after must be an id (an integer from 0)");
        assert_eq!(detail("limit=1&limit=2"), "limit is given more than once");
        assert_eq!(
            detail("owner=x"),
            "unknown parameter \"owner\"; known: resource, limit, before, after"
        );
        assert_eq!(
            detail("resource=%FF"),
            "query parameter \"%FF\" is not valid UTF-8"
        );
    }
}
