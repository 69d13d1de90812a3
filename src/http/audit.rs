//! `GET /v1/audit`.

use super::problem::{json_ok, Problem};
use super::query::{AuditId, Limit, Resource, StrictQuery};
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
    before: Option<AuditId<1>>,
    after: Option<AuditId<0>>,
}

impl From<AuditParams> for AuditQuery {
    fn from(params: AuditParams) -> Self {
        AuditQuery {
            resource: params.resource.map(|Resource(key)| key),
            before: params.before.map(|AuditId(id)| id),
            after: params.after.map(|AuditId(id)| id),
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
    use axum::extract::FromRequestParts;

    fn parse_query(raw: &str) -> Result<AuditQuery, Problem> {
        let (mut parts, ()) = axum::http::Request::get(format!("/v1/audit?{raw}"))
            .body(())
            .expect("a request")
            .into_parts();
        let parsed = futures_util::FutureExt::now_or_never(
            StrictQuery::<AuditParams>::from_request_parts(&mut parts, &()),
        )
        .expect("parsing a query never waits");
        parsed.map(|StrictQuery(params)| params.into())
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
}
