//! Reading the audit: a page at a time, and the first row at or after a time; a lease's
//! history beside it.

use super::encode::encode_segment;
use super::{ClientError, DaemonClient};
use crate::api::leases::LeaseHistory;
use crate::api::monitoring::AuditPage;
use crate::domain::audit::format_rfc3339_micros;
use crate::domain::incident::IncidentReport;
use chrono::{DateTime, Utc};
use std::fmt::Write as _;

/// A request for a page of `GET /v1/audit`, as its query string: the rows of `resource` (all
/// without one), with ids below `before` and above `after`, the newest `limit` of them (the
/// daemon's default without one).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct AuditRequest<'a> {
    pub resource: Option<&'a str>,
    pub before: Option<i64>,
    pub after: Option<i64>,
    pub limit: Option<u32>,
}

impl AuditRequest<'_> {
    fn path(&self) -> String {
        let mut query = String::new();
        let mut add = |name: &str, value: &dyn std::fmt::Display| {
            let separator = if query.is_empty() { '?' } else { '&' };
            // Writing to a String cannot fail.
            let _ = write!(query, "{separator}{name}={value}");
        };
        if let Some(resource) = self.resource {
            add("resource", &encode_segment(resource));
        }
        if let Some(before) = self.before {
            add("before", &before);
        }
        if let Some(after) = self.after {
            add("after", &after);
        }
        if let Some(limit) = self.limit {
            add("limit", &limit);
        }
        format!("/v1/audit{query}")
    }
}

impl DaemonClient {
    /// `GET /v1/overlaps/{id}/report`: an incident's facts and condensed timeline.
    pub async fn incident_report(&self, id: i64) -> Result<IncidentReport, ClientError> {
        self.read(&format!("/v1/overlaps/{id}/report")).await
    }

    /// `GET /v1/lease-history/{name}`: the newest `limit` events of `lease` at or before
    /// `until` (all without it), newest first.
    pub async fn lease_history(
        &self,
        lease: &str,
        until: Option<DateTime<Utc>>,
        limit: u32,
    ) -> Result<LeaseHistory, ClientError> {
        self.read(&lease_history_path(lease, until, limit)).await
    }

    /// A page of the audit, newest first.
    pub async fn audit(&self, query: AuditRequest<'_>) -> Result<AuditPage, ClientError> {
        self.read(&query.path()).await
    }

    /// The id of the first row of `resource` at or after `at`: a binary search over ids, a
    /// row at a time, so an incident is found however many writes came after it.
    pub async fn first_at_or_after(
        &self,
        resource: &str,
        at: DateTime<Utc>,
    ) -> Result<Option<i64>, ClientError> {
        let newest = |before: Option<i64>| AuditRequest {
            resource: Some(resource),
            before,
            limit: Some(1),
            ..AuditRequest::default()
        };
        let Some(newest_row) = self.audit(newest(None)).await?.entries.pop() else {
            return Ok(None);
        };
        if newest_row.at < at {
            return Ok(Some(newest_row.id));
        }
        // The row below `lo` is older than `at` (or absent); the row below `hi` is not.
        let (mut lo, mut hi) = (1i64, newest_row.id + 1);
        while hi - lo > 1 {
            let mid = lo + (hi - lo) / 2;
            match self.audit(newest(Some(mid))).await?.entries.pop() {
                Some(row) if row.at >= at => hi = mid,
                _ => lo = mid,
            }
        }
        Ok(self
            .audit(newest(Some(hi)))
            .await?
            .entries
            .pop()
            .map(|row| row.id))
    }
}

fn lease_history_path(lease: &str, until: Option<DateTime<Utc>>, limit: u32) -> String {
    let mut path = format!("/v1/lease-history/{}?limit={limit}", encode_segment(lease));
    if let Some(until) = until {
        // UTC with a `Z`: nothing in it needs escaping.
        let _ = write!(path, "&until={}", format_rfc3339_micros(&until));
    }
    path
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_query_names_only_what_it_sets_with_the_resource_encoded() {
        let query = AuditRequest {
            resource: Some("jobs/a b"),
            before: Some(10),
            limit: Some(50),
            ..AuditRequest::default()
        };
        assert_eq!(
            query.path(),
            "/v1/audit?resource=jobs%2Fa%20b&before=10&limit=50"
        );
        assert_eq!(AuditRequest::default().path(), "/v1/audit");
    }

    #[test]
    fn a_lease_history_path_encodes_the_name_and_reads_back_from_a_time() {
        let at = DateTime::from_timestamp_micros(1_764_474_006_000_001).unwrap();
        assert_eq!(
            lease_history_path("jobs/a", Some(at), 200),
            "/v1/lease-history/jobs%2Fa?limit=200&until=2025-11-30T03:40:06.000001Z"
        );
        assert_eq!(
            lease_history_path("j", None, 5),
            "/v1/lease-history/j?limit=5"
        );
    }
}
