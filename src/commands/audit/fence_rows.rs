//! A fence's audit rows as the audit tools read them: all of them in id order, a page at a
//! time, and which of them the filter flags keep.

use crate::cli::AuditFilterArgs;
use crate::domain::fence_audit::FenceAuditRow;
use crate::owndb::OwnDb;
use crate::store::AuditFilter;
use chrono::{DateTime, Utc};

/// Rows read per query.
const PAGE: u32 = 5_000;

/// Which rows, as the filter flags say: the daemon's audit filter, applied to a fence's rows as
/// they are read.
pub(super) struct Filter(AuditFilter);

impl Filter {
    pub(super) fn new(args: &AuditFilterArgs, now: DateTime<Utc>) -> anyhow::Result<Self> {
        Ok(Self(super::filter(args, now)?))
    }

    /// One scope's rows between the times.
    pub(super) fn scope(resource: &str, since_us: Option<i64>, until_us: Option<i64>) -> Self {
        Self(AuditFilter {
            resource: Some(resource.to_owned()),
            since_us,
            until_us,
            ..AuditFilter::default()
        })
    }

    pub(super) fn matches(&self, row: &FenceAuditRow) -> bool {
        let Self(filter) = self;
        let at = row.at.timestamp_micros();
        filter.resource.as_ref().is_none_or(|r| *r == row.resource)
            && filter
                .owner
                .as_ref()
                .is_none_or(|o| row.owner.as_ref() == Some(o))
            && filter.outcome.is_none_or(|o| o.as_str() == row.outcome)
            && filter.token.is_none_or(|t| row.token == Some(t))
            && filter.since_us.is_none_or(|s| at >= s)
            && filter.until_us.is_none_or(|u| at <= u)
    }
}

/// Visits every row in id order, a page at a time (constant memory).
pub(super) async fn each_row(
    db: &OwnDb,
    mut visit: impl FnMut(&FenceAuditRow) -> anyhow::Result<()>,
) -> anyhow::Result<()> {
    let mut after = 0;
    loop {
        let page = db.audit_after(after, PAGE).await?;
        let Some(last) = page.last() else {
            return Ok(());
        };
        after = last.id;
        for row in &page {
            visit(row)?;
        }
    }
}
