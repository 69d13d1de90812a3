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
use super::batch::rows::AuditRow;
use super::batch::shared::ChainHeads;
use super::error::corrupt;
use super::native::{on_db, Conn, Native, NativeRow};
use super::refused::insert_audit_rows;
use super::tx::{begin_audited, retrying};
use super::{Store, StoreError};
use crate::domain::{AuditEntry, Reset, ResetDone, Revision};
use chrono::SubsecRound;

impl Store {
    /// Sets the resource's highest accepted generation as `reset` says, audited; `None`, with
    /// nothing changed, when the resource was never written.
    pub async fn reset_highest(&self, reset: &Reset) -> Result<Option<ResetDone>, StoreError> {
        let key = reset.key.as_str();
        let done = retrying(|| async {
            let mut tx = begin_audited(self.writer()).await?;
            let lock = match tx {
                Native::Postgres(_) => " FOR UPDATE",
                Native::Sqlite(_) => "",
            };
            let sql = format!(
                "SELECT highest_token, revision, chain_seq, chain_hash FROM resources \
                 WHERE key = $1{lock}"
            );
            let found = on_db!(tx.conn(), conn => sqlx::query(&sql)
                .bind(key)
                .fetch_optional(conn)
                .await?
                .map(|row| reset_target(&row))
                .transpose()?);
            let Some((previous_highest_token, revision, head)) = found else {
                tx.rollback().await?;
                return Ok(None);
            };
            let mut heads = ChainHeads::from([(key.to_owned(), head)]);
            let entry = reset.audit_entry(revision, self.clock.now().trunc_subsecs(6));
            let id = insert_linked(tx.conn(), &mut heads, &entry).await?;
            let (chain_seq, chain_hash) = heads
                .remove(key)
                .ok_or_else(|| corrupt("the reset resource's chain head went missing"))?;
            // `highest_owner` names whoever set the generation now highest: the caller.
            on_db!(tx.conn(), conn => sqlx::query(
                "UPDATE resources SET highest_token = $2, highest_owner = $3, chain_seq = $4, \
                 chain_hash = $5 WHERE key = $1",
            )
            .bind(key)
            .bind(entry.highest_token)
            .bind(entry.owner.as_deref())
            .bind(chain_seq)
            .bind(chain_hash).execute(conn).await?.rows_affected());
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

/// The resource's highest token, revision and chain head.
fn reset_target(row: &impl NativeRow) -> Result<(i64, Revision, (i64, String)), StoreError> {
    Ok((
        row.try_get("highest_token")?,
        Revision::new(row.try_get("revision")?).map_err(|e| corrupt(e.0))?,
        (row.try_get("chain_seq")?, row.try_get("chain_hash")?),
    ))
}

/// Inserts `entry` as its resource's next chain link, by the audit statement every row takes
/// (`AuditRow`), and returns its id; `heads` moves past it.
async fn insert_linked(
    conn: Conn<'_>,
    heads: &mut ChainHeads,
    entry: &AuditEntry,
) -> Result<i64, StoreError> {
    let links = link(heads, std::slice::from_ref(entry))?;
    let link = links
        .first()
        .ok_or_else(|| corrupt("an audit row got no chain link"))?;
    // On PostgreSQL the statement draws the id for the row's place in it.
    let id = matches!(conn, Native::Postgres(_)).then_some(1);
    let returned = insert_audit_rows(conn, &[AuditRow::new(entry, link, id)]).await?;
    returned
        .first()
        .map(|(id, _, _)| *id)
        .ok_or_else(|| corrupt("the audit row got no id"))
}
