//! Attempts refused before any decision (malformed or not allowed): each audited in a
//! transaction of its own, outside group commit.

use super::batch::plan::link;
use super::batch::shared::{placeholder_rows, power_of_two_chunks, Link};
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
/// concurrent appends to one resource take turns and a chain never forks.
async fn append_audit(
    conn: &mut AnyConnection,
    backend: Backend,
    resources: &BTreeSet<&str>,
    entries: &[AuditEntry],
) -> Result<Vec<i64>, StoreError> {
    let mut heads = LockedHeads::lock(conn, backend, resources).await?;
    let links = link(&mut heads.heads, entries)?;

    let rows: Vec<(&AuditEntry, &Link)> = entries.iter().zip(&links).collect();
    // The order of RETURNING rows is not promised; (resource, seq) names each row.
    let mut ids: HashMap<(String, i64), i64> = HashMap::with_capacity(rows.len());
    for chunk in power_of_two_chunks(&rows) {
        let sql = format!(
            "INSERT INTO audit (at_us, resource, outcome, token, highest_token, revision, \
             idempotency_key, expected_revision, owner, lease, body_sha256, body_len, detail, \
             caller, seq, prev_hash, hash) VALUES {} RETURNING id, resource, seq",
            placeholder_rows(17, chunk.len())
        );
        let mut query = sqlx::query(&sql);
        for (
            entry,
            Link {
                seq,
                prev_hash,
                hash,
            },
        ) in chunk
        {
            query = query
                .bind(entry.at.timestamp_micros())
                .bind(entry.resource.as_str())
                .bind(entry.outcome.as_str())
                .bind(entry.token)
                .bind(entry.highest_token)
                .bind(entry.revision)
                .bind(entry.idempotency_key.as_deref())
                .bind(entry.expected_revision)
                .bind(entry.owner.as_deref())
                .bind(entry.lease.as_deref())
                .bind(entry.body_sha256.as_deref())
                .bind(entry.body_len)
                .bind(entry.detail.as_deref())
                .bind(entry.caller.as_deref())
                .bind(*seq)
                .bind(prev_hash.as_str())
                .bind(hash.as_str());
        }
        for row in query.fetch_all(&mut *conn).await? {
            ids.insert(
                (row.try_get("resource")?, row.try_get("seq")?),
                row.try_get("id")?,
            );
        }
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
