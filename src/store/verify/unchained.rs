//! Rows without a place in any chain. Only rows written before the audit was chained may lack
//! one, and migration 28 recorded the highest id such a row had (`audit_chain_boundary`): rows
//! at or below it are counted as older rows, any above it was added outside fencewatch. The
//! walks cannot tell the two apart where an added row comes first in its chain (a resource
//! never audited before), so this reads them itself, through the partial index that holds only
//! unchained rows (empty on a database that never had any), in every run, full or not.

use super::{Breach, VerifyReport};
use crate::store::native::{on_db, Tx};
use crate::store::StoreError;
use futures_util::TryStreamExt;
use std::collections::BTreeMap;

/// The highest id an unchained row may have: 0 when the boundary's row is missing, the
/// strictest reading (deleting it only makes more rows breaches).
pub(super) async fn boundary(tx: &mut Tx<'_>) -> Result<i64, StoreError> {
    let last: Option<i64> = on_db!(tx.conn(), conn => sqlx::query_scalar(
        "SELECT last_unchained_id FROM audit_chain_boundary WHERE id = 1",
    )
    .fetch_optional(conn)
    .await?);
    Ok(last.unwrap_or(0))
}

/// Adds a breach for each resource with an unchained row above `boundary`, naming its first
/// such row, unless a walk already named that row.
pub(super) async fn check(
    tx: &mut Tx<'_>,
    boundary: i64,
    report: &mut VerifyReport,
) -> Result<(), StoreError> {
    // Each resource's first such row and how many: counted here, for a `GROUP BY resource` made
    // SQLite's planner walk the whole `(resource, id)` index instead of the empty partial one.
    let mut added: BTreeMap<String, (i64, u64)> = BTreeMap::new();
    on_db!(tx.conn(), conn => {
        let mut rows = sqlx::query_as::<_, (String, i64)>(
            "SELECT resource, id FROM audit WHERE seq IS NULL AND id > $1 ORDER BY id",
        )
        .bind(boundary)
        .fetch(conn);
        while let Some((resource, id)) = rows.try_next().await? {
            added.entry(resource).or_insert((id, 0)).1 += 1;
        }
    });
    for (resource, (first, count)) in added {
        if report
            .breaches
            .iter()
            .any(|b| b.resource == resource && b.audit_id == Some(first))
        {
            continue;
        }
        let more = match count {
            1 => String::new(),
            n => format!(" ({} more such rows after it)", n - 1),
        };
        report.breaches.push(Breach {
            resource,
            audit_id: Some(first),
            seq: None,
            problem: format!(
                "row {first} has no place in the chain: it was added outside fencewatch{more}"
            ),
        });
    }
    Ok(())
}
