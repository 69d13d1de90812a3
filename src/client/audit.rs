//! Reading the audit: a page at a time, and the first row at or after a time.

use super::encode::encode_segment;
use super::{ClientError, DaemonClient};
use crate::api::monitoring::AuditPage;
use chrono::{DateTime, Utc};
use std::fmt::Write as _;

/// Which rows `GET /v1/audit` returns: those of `resource` (all without one), with ids below
/// `before` and above `after`, the newest `limit` of them.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct AuditQuery<'a> {
    pub resource: Option<&'a str>,
    pub before: Option<i64>,
    pub after: Option<i64>,
    pub limit: Option<u32>,
}

impl AuditQuery<'_> {
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
    /// A page of the audit, newest first.
    pub async fn audit(&self, query: AuditQuery<'_>) -> Result<AuditPage, ClientError> {
        self.read(&query.path()).await
    }

    /// The id of the first row of `resource` at or after `at`: a binary search over ids, a
    /// row at a time, so an incident is found however many writes came after it.
    pub async fn first_at_or_after(
        &self,
        resource: &str,
        at: DateTime<Utc>,
    ) -> Result<Option<i64>, ClientError> {
        let newest = |before: Option<i64>| AuditQuery {
            resource: Some(resource),
            before,
            limit: Some(1),
            ..AuditQuery::default()
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_query_names_only_what_it_sets_with_the_resource_encoded() {
        let query = AuditQuery {
            resource: Some("jobs/a b"),
            before: Some(10),
            limit: Some(50),
            ..AuditQuery::default()
        };
        assert_eq!(
            query.path(),
            "/v1/audit?resource=jobs%2Fa%20b&before=10&limit=50"
        );
        assert_eq!(AuditQuery::default().path(), "/v1/audit");
    }
}
