//! Attempts refused before any decision (malformed or not allowed): each audited in a
//! transaction of its own, outside group commit.

use super::batch::plan::link;
use super::batch::postgres::insert_audit_alone;
use super::batch::rows::{to_json, AuditRow};
use super::batch::sqlite::INSERT_AUDIT_ALONE;
use super::chain_heads::LockedHeads;
use super::error::corrupt;
use super::tx::{begin_audited, retrying};
use super::{Backend, Store, StoreError};
use crate::domain::{AuditEntry, RefusedAttempt, ResourceKey, ResourceState, Revision};
use chrono::SubsecRound;
use sqlx::{Any, AnyConnection, Row, Transaction};
use std::collections::{BTreeSet, HashMap};

impl Store {
    /// Records an attempt that was refused before the fence was consulted.
    pub async fn record_refused(&self, attempt: &RefusedAttempt) -> Result<AuditEntry, StoreError> {
        retrying(|| async {
            let mut tx = begin_audited(&self.writer, self.backend).await?;
            let state = observe_resource(&mut tx, &attempt.key)
                .await?
                .unwrap_or(ResourceState::FRESH);
            let entry = attempt
                .clone()
                .into_audit_entry(state, self.clock.now().trunc_subsecs(6));
            let resources = BTreeSet::from([entry.resource.as_str()]);
            let ids = append_audit(
                &mut tx,
                self.backend,
                &resources,
                std::slice::from_ref(&entry),
            )
            .await?;
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
    tx: &mut Transaction<'_, Any>,
    key: &ResourceKey,
) -> Result<Option<ResourceState>, StoreError> {
    let row = sqlx::query("SELECT highest_token, revision FROM resources WHERE key = $1")
        .bind(key.as_str())
        .fetch_optional(&mut **tx)
        .await?;
    let Some(row) = row else {
        return Ok(None);
    };
    Ok(Some(ResourceState {
        highest_token: row.try_get("highest_token")?,
        revision: Revision::new(row.try_get("revision")?).map_err(|e| corrupt(e.0))?,
    }))
}

/// Appends the entries to their resources' hash chains and the audit, in order, and returns
/// their ids. The chain heads are locked (in resource order) until the transaction ends, so
/// concurrent appends to one resource take turns and a chain never forks. The rows go in as
/// group commit's do: `AuditRow`s, by the dialect's own audit statement.
async fn append_audit(
    conn: &mut AnyConnection,
    backend: Backend,
    resources: &BTreeSet<&str>,
    entries: &[AuditEntry],
) -> Result<Vec<i64>, StoreError> {
    let mut heads = LockedHeads::lock(conn, backend, resources).await?;
    let links = link(&mut heads.heads, entries)?;
    let rows: Vec<AuditRow<'_>> = entries
        .iter()
        .zip(&links)
        .zip(1..)
        .map(|((entry, link), place)| {
            let id = match backend {
                Backend::Postgres => Some(place),
                Backend::Sqlite => None,
            };
            AuditRow::new(entry, link, id)
        })
        .collect();
    let rows_json = to_json(&rows)?;
    let returned = match backend {
        Backend::Sqlite => {
            sqlx::query(INSERT_AUDIT_ALONE)
                .bind(rows_json)
                .fetch_all(&mut *conn)
                .await?
        }
        Backend::Postgres => {
            sqlx::query(&insert_audit_alone())
                .bind(i64::try_from(rows.len()).unwrap_or(i64::MAX))
                .bind(rows_json)
                .fetch_all(&mut *conn)
                .await?
        }
    };
    // The order of RETURNING rows is not promised; (resource, seq) names each row.
    let mut ids: HashMap<(String, i64), i64> = HashMap::with_capacity(returned.len());
    for row in returned {
        ids.insert(
            (row.try_get("resource")?, row.try_get("seq")?),
            row.try_get("id")?,
        );
    }
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
