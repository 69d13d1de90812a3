//! A fence's audit rows as the audit tools read them: all of them in id order, a page at a
//! time, and which of them the filter flags keep.

use super::micros;
use crate::cli::AuditFilterArgs;
use crate::domain::fence_audit::FenceAuditRow;
use crate::domain::Outcome;
use crate::owndb::OwnDb;
use chrono::{DateTime, Utc};

/// Rows read per query.
const PAGE: u32 = 5_000;

/// Which rows, as the filter flags say.
pub(super) struct Filter {
    resource: Option<String>,
    owner: Option<String>,
    outcome: Option<Outcome>,
    token: Option<i64>,
    since_us: Option<i64>,
    until_us: Option<i64>,
}

impl Filter {
    pub(super) fn new(args: &AuditFilterArgs, now: DateTime<Utc>) -> anyhow::Result<Self> {
        Ok(Self {
            resource: args.resource.clone(),
            owner: args.owner.clone(),
            outcome: args
                .outcome
                .as_deref()
                .map(|o| Outcome::parse(o).ok_or_else(|| anyhow::anyhow!("unknown outcome {o:?}")))
                .transpose()?,
            token: args.token,
            since_us: micros(args.since.as_deref(), now)?,
            until_us: micros(args.until.as_deref(), now)?,
        })
    }

    /// One scope's rows between the times.
    pub(super) fn scope(resource: &str, since_us: Option<i64>, until_us: Option<i64>) -> Self {
        Self {
            resource: Some(resource.to_owned()),
            owner: None,
            outcome: None,
            token: None,
            since_us,
            until_us,
        }
    }

    pub(super) fn matches(&self, row: &FenceAuditRow) -> bool {
        let at = row.at.timestamp_micros();
        self.resource.as_ref().is_none_or(|r| *r == row.resource)
            && self
                .owner
                .as_ref()
                .is_none_or(|o| row.owner.as_ref() == Some(o))
            && self.outcome.is_none_or(|o| o.as_str() == row.outcome)
            && self.token.is_none_or(|t| row.token == Some(t))
            && self.since_us.is_none_or(|s| at >= s)
            && self.until_us.is_none_or(|u| at <= u)
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
