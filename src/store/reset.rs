//! An operator's reset of a resource's highest accepted generation, in a transaction of its own
//! outside group commit (resets are rare, and each is one row).
//!
//! The resource's row is locked (PostgreSQL; SQLite's writer is the only one), the reset's
//! audit row is linked onto the resource's chain like any other, and the row's generation and
//! chain head move together. Moving the chain head is what keeps batches decided on known state
//! honest (`batch::known`): the statement applying such a batch compare-and-sets each
//! resource's revision and chain head, and the reset leaves the revision as it was but never
//! the head, so a batch decided on the generation before the reset, by this daemon or another,
//! finds the resource changed and is decided again on what the reset left.

use super::batch::plan::link;
use super::batch::postgres::insert_audit_alone;
use super::batch::rows::{to_json, AuditRow};
use super::batch::shared::ChainHeads;
use super::batch::sqlite::INSERT_AUDIT_ALONE;
use super::error::corrupt;
use super::tx::{begin_audited, retrying};
use super::{Backend, Store, StoreError};
use crate::domain::{AuditEntry, Reset, ResetDone, Revision};
use chrono::SubsecRound;
use sqlx::{AnyConnection, Row};

impl Store {
    /// Sets the resource's highest accepted generation as `reset` says, audited; `None`, with
    /// nothing changed, when the resource was never written.
    pub async fn reset_highest(&self, reset: &Reset) -> Result<Option<ResetDone>, StoreError> {
        let key = reset.key.as_str();
        let done = retrying(|| async {
            let mut tx = begin_audited(&self.writer, self.backend).await?;
            let lock = match self.backend {
                Backend::Postgres => " FOR UPDATE",
                Backend::Sqlite => "",
            };
            let row = sqlx::query(&format!(
                "SELECT highest_token, revision, chain_seq, chain_hash FROM resources \
                 WHERE key = $1{lock}"
            ))
            .bind(key)
            .fetch_optional(&mut *tx)
            .await?;
            let Some(row) = row else {
                tx.rollback().await?;
                return Ok(None);
            };
            let previous_highest_token: i64 = row.try_get("highest_token")?;
            let revision = Revision::new(row.try_get("revision")?).map_err(|e| corrupt(e.0))?;
            let mut heads = ChainHeads::from([(
                key.to_owned(),
                (row.try_get("chain_seq")?, row.try_get("chain_hash")?),
            )]);
            let entry = reset.audit_entry(revision, self.clock.now().trunc_subsecs(6));
            let id = insert_linked(&mut tx, self.backend, &mut heads, &entry).await?;
            let (chain_seq, chain_hash) = heads
                .remove(key)
                .ok_or_else(|| corrupt("the reset resource's chain head went missing"))?;
            // `highest_owner` names whoever set the generation now highest: the caller.
            sqlx::query(
                "UPDATE resources SET highest_token = $2, highest_owner = $3, chain_seq = $4, \
                 chain_hash = $5 WHERE key = $1",
            )
            .bind(key)
            .bind(entry.highest_token)
            .bind(entry.owner.as_deref())
            .bind(chain_seq)
            .bind(chain_hash)
            .execute(&mut *tx)
            .await?;
            tx.commit().await?;
            Ok(Some(ResetDone {
                entry: AuditEntry { id, ..entry },
                previous_highest_token,
            }))
        })
        .await;
        // What this daemon knew of the resource is no longer so. The applying statement's check
        // would find that out anyway; forgetting saves the batch a round trip, whatever the
        // reset's outcome (it may have committed before an error reached us).
        self.forget_known(key);
        done
    }
}

/// Inserts `entry` as its resource's next chain link, by the audit statement every row takes
/// (`AuditRow`), and returns its id; `heads` moves past it.
async fn insert_linked(
    conn: &mut AnyConnection,
    backend: Backend,
    heads: &mut ChainHeads,
    entry: &AuditEntry,
) -> Result<i64, StoreError> {
    let links = link(heads, std::slice::from_ref(entry))?;
    let link = links
        .first()
        .ok_or_else(|| corrupt("an audit row got no chain link"))?;
    let id = match backend {
        // On PostgreSQL the statement draws the id for the row's place in it.
        Backend::Postgres => Some(1),
        Backend::Sqlite => None,
    };
    let rows = to_json(&[AuditRow::new(entry, link, id)])?;
    let returned = match backend {
        Backend::Sqlite => {
            sqlx::query(INSERT_AUDIT_ALONE)
                .bind(rows)
                .fetch_one(&mut *conn)
                .await?
        }
        Backend::Postgres => {
            sqlx::query(&insert_audit_alone())
                .bind(1_i64)
                .bind(rows)
                .fetch_one(&mut *conn)
                .await?
        }
    };
    Ok(returned.try_get("id")?)
}
