//! A fence's audit rows as the audit tools read them: in id order either way, a page at a
//! time, and which of them the filter flags keep.

use crate::cli::AuditFilterArgs;
use crate::domain::fence_audit::FenceAuditRow;
use crate::owndb::OwnDb;
use crate::store::{AuditFilter, AuditOrder};
use chrono::{DateTime, Utc};
use std::ops::ControlFlow;

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
    walk_rows(db, AuditOrder::OldestFirst, |row| {
        visit(row).map(|()| ControlFlow::Continue(()))
    })
    .await
}

/// Visits the rows in `order`, a page at a time (constant memory), until `visit` breaks: the
/// filters are applied to rows as read, so a limit ends the walk rather than the query.
pub(super) async fn walk_rows(
    db: &OwnDb,
    order: AuditOrder,
    mut visit: impl FnMut(&FenceAuditRow) -> anyhow::Result<ControlFlow<()>>,
) -> anyhow::Result<()> {
    let mut next = match order {
        AuditOrder::OldestFirst => 0,
        AuditOrder::NewestFirst => i64::MAX,
    };
    loop {
        let page = match order {
            AuditOrder::OldestFirst => db.audit_after(next, PAGE).await?,
            AuditOrder::NewestFirst => db.audit_before(next, PAGE).await?,
        };
        let Some(last) = page.last() else {
            return Ok(());
        };
        next = last.id;
        for row in &page {
            if visit(row)?.is_break() {
                return Ok(());
            }
        }
    }
}
