//! Reading the audit in id order for the live tail, and knowing how far that order is final.

use super::native::{on_db, Native};
use super::reads::{audit_entry, AUDIT_COLUMNS};
use super::{Store, StoreError};
use crate::domain::{AuditEntry, Outcome, Xids};
use std::collections::HashMap;

impl Store {
    /// Audit rows with ids in `(after, up_to]`, oldest first, at most `limit`.
    pub async fn audit_after(
        &self,
        after: i64,
        up_to: Option<i64>,
        limit: u32,
    ) -> Result<Vec<AuditEntry>, StoreError> {
        let sql = format!(
            "SELECT {AUDIT_COLUMNS} FROM audit WHERE id > $1 AND id <= $2 ORDER BY id LIMIT $3"
        );
        on_db!(self.reader(), pool => sqlx::query(&sql)
            .bind(after)
            .bind(up_to.unwrap_or(i64::MAX))
            .bind(i64::from(limit)).fetch_all(pool).await?.iter().map(audit_entry).collect())
    }

    /// The highest audit id, 0 for an empty audit.
    pub async fn max_audit_id(&self) -> Result<i64, StoreError> {
        let max: Option<i64> = on_db!(self.reader(), pool => sqlx::query_scalar("SELECT MAX(id) FROM audit").fetch_one(pool).await?);
        Ok(max.unwrap_or(0))
    }

    /// The number of audit rows per outcome with ids up to `up_to`.
    pub async fn outcome_totals(&self, up_to: i64) -> Result<HashMap<Outcome, u64>, StoreError> {
        // The outcome index holds only the rarer outcomes (migration 24): they are counted
        // there, and accepted rows are what the whole count leaves (row '' below).
        let rows: Vec<(String, i64)> = on_db!(self.reader(), pool => {
            sqlx::query_as(
                "SELECT outcome, COUNT(*) AS n FROM audit \
                   WHERE id <= $1 AND outcome <> 'accepted' GROUP BY outcome \
                 UNION ALL SELECT '', COUNT(*) FROM audit WHERE id <= $1",
            )
            .bind(up_to)
            .fetch_all(pool)
            .await?
        });
        let mut totals = HashMap::new();
        let (mut all, mut rarer) = (0_u64, 0_u64);
        for (outcome, count) in rows {
            let count = u64::try_from(count).unwrap_or(0);
            if outcome.is_empty() {
                all = count;
                continue;
            }
            rarer += count;
            if let Some(outcome) = Outcome::parse(&outcome) {
                totals.insert(outcome, count);
            }
        }
        let accepted = all.saturating_sub(rarer);
        if accepted > 0 {
            totals.insert(Outcome::Accepted, accepted);
        }
        Ok(totals)
    }

    /// The current snapshot's bounds on PostgreSQL; `None` on SQLite, whose single writer
    /// assigns audit ids in commit order.
    pub async fn snapshot(&self) -> Result<Option<Xids>, StoreError> {
        let Native::Postgres(pool) = self.reader() else {
            return Ok(None);
        };
        let (xmin, xmax) = sqlx::query_as(
            "SELECT pg_snapshot_xmin(s)::text::bigint AS xmin, \
             pg_snapshot_xmax(s)::text::bigint AS xmax FROM pg_current_snapshot() AS s",
        )
        .fetch_one(pool)
        .await?;
        Ok(Some(Xids { xmin, xmax }))
    }
}
