//! Attempts refused before any decision (malformed or not allowed): each audited in a
//! transaction of its own, outside group commit.

use super::batch::pg_application::{bind_audit_alone, insert_audit_alone};
use super::batch::plan::link;
use super::batch::rows::{to_json, AuditRow};
use super::batch::sqlite::INSERT_AUDIT_ALONE;
use super::chain_heads::LockedHeads;
use super::error::corrupt;
use super::native::{on_db, Conn, Native, NativeRow};
use super::tx::{begin_audited, retrying};
use super::{Store, StoreError};
use crate::domain::{AuditEntry, RefusedAttempt, ResourceKey, ResourceState, Revision};
use chrono::SubsecRound;
use std::collections::{BTreeSet, HashMap};

impl Store {
    /// Records an attempt that was refused before the fence was consulted.
    pub async fn record_refused(&self, attempt: &RefusedAttempt) -> Result<AuditEntry, StoreError> {
        retrying(|| async {
            let mut tx = begin_audited(self.writer()).await?;
            // The head first, then the state the row records: read before the lock, a batch
            // committed in between (PostgreSQL) left the row, at the chain's head, recording a
            // generation the resource no longer had, which `audit verify` holds it to.
            let resources = BTreeSet::from([attempt.key.as_str()]);
            let heads = LockedHeads::lock(tx.conn(), &resources).await?;
            let state = observe_resource(tx.conn(), &attempt.key)
                .await?
                .unwrap_or(ResourceState::FRESH);
            let entry = attempt
                .clone()
                .into_audit_entry(state, self.clock.now().trunc_subsecs(6));
            let ids = append_audit(tx.conn(), heads, std::slice::from_ref(&entry)).await?;
            tx.commit().await?;
            let id = ids
                .first()
                .copied()
                .ok_or_else(|| corrupt("the audit row got no id"))?;
            Ok(AuditEntry { id, ..entry })
        })
        .await
    }
}

async fn observe_resource(
    conn: Conn<'_>,
    key: &ResourceKey,
) -> Result<Option<ResourceState>, StoreError> {
    on_db!(conn, conn => sqlx::query("SELECT highest_token, revision FROM resources WHERE key = $1")
        .bind(key.as_str())
        .fetch_optional(conn)
        .await?
        .map(|row| resource_state(&row))
        .transpose())
}

fn resource_state(row: &impl NativeRow) -> Result<ResourceState, StoreError> {
    Ok(ResourceState {
        highest_token: row.try_get("highest_token")?,
        revision: Revision::new(row.try_get("revision")?).map_err(|e| corrupt(e.0))?,
    })
}

/// Appends the entries to their resources' hash chains and the audit, in order, and returns
/// their ids. The chain heads were locked (in resource order) until the transaction ends, so
/// concurrent appends to one resource take turns and a chain never forks. The rows go in as
/// group commit's do: `AuditRow`s, by the dialect's own audit statement.
async fn append_audit(
    mut conn: Conn<'_>,
    mut heads: LockedHeads,
    entries: &[AuditEntry],
) -> Result<Vec<i64>, StoreError> {
    let numbered = matches!(conn, Native::Postgres(_));
    let links = link(&mut heads.heads, entries)?;
    let rows: Vec<AuditRow<'_>> = entries
        .iter()
        .zip(&links)
        .zip(1..)
        .map(|((entry, link), place)| {
            // PostgreSQL's audit ids are drawn with the rows; SQLite's are its row ids.
            AuditRow::new(entry, link, numbered.then_some(place))
        })
        .collect();
    let returned = insert_audit_rows(conn.reborrow(), &rows).await?;
    // The order of RETURNING rows is not promised; (resource, seq) names each row.
    let ids: HashMap<(String, i64), i64> = returned
        .into_iter()
        .map(|(id, resource, seq)| ((resource, seq), id))
        .collect();
    let ids = entries
        .iter()
        .zip(&links)
        .map(|(entry, link)| {
            ids.get(&(entry.resource.clone(), link.seq))
                .copied()
                .ok_or_else(|| corrupt("an inserted audit row was not returned"))
        })
        .collect::<Result<Vec<_>, _>>()?;

    heads.store(conn).await?;
    Ok(ids)
}

/// Inserts audit rows outside a batch, by the dialect's own audit statement, and answers each
/// row's `(id, resource, seq)`, in no promised order.
pub(super) async fn insert_audit_rows(
    conn: Conn<'_>,
    rows: &[AuditRow<'_>],
) -> Result<Vec<(i64, String, i64)>, StoreError> {
    Ok(match conn {
        Native::Sqlite(conn) => {
            sqlx::query_as(INSERT_AUDIT_ALONE)
                .bind(to_json(rows)?)
                .fetch_all(conn)
                .await?
        }
        Native::Postgres(conn) => {
            let sql = insert_audit_alone();
            let rows = bind_audit_alone(rows, sqlx::query(&sql))
                .fetch_all(conn)
                .await?;
            rows.iter()
                .map(|row| Ok(<(i64, String, i64) as sqlx::FromRow<_>>::from_row(row)?))
                .collect::<Result<_, StoreError>>()?
        }
    })
}
