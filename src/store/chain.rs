//! Pruning old audit rows behind a checkpoint that keeps the rest verifiable (`verify`).

use super::native::on_db;
use super::{Store, StoreError};
use serde::Serialize;

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct PruneReport {
    pub resources: u64,
    pub rows: u64,
    /// The history kept beside the audit, pruned with it (see `prune_history`).
    pub lease_events: u64,
    pub closed_overlaps: u64,
    pub alert_transitions: u64,
    /// Aggregated rows of requests refused before the fence (`store::refusals`).
    pub refusals: u64,
}

impl Store {
    /// Deletes audit rows older than `before_us`, resource by resource, leaving a checkpoint
    /// with the last deleted row's position and hash so that what remains still verifies.
    ///
    /// On PostgreSQL, the days of the audit's partitions wholly older than `before_us` go first,
    /// dropped whole behind the same checkpoints (`store::partitions`); the rows left before
    /// `before_us` (part of a day, `audit_default`'s) are deleted row by row, and their dead rows
    /// go with their partition when it is dropped.
    pub async fn prune_audit(&self, before_us: i64) -> Result<PruneReport, StoreError> {
        let dropped = self.prune_audit_partitions(before_us).await?;
        let mut pruned = dropped.resources;
        let mut report = PruneReport {
            rows: dropped.rows,
            ..PruneReport::default()
        };
        // A partition that could not be dropped this time waits for the next prune rather than
        // have its rows deleted one by one.
        let rows_before_us = dropped.rows_before_us;
        // Only candidates: where each chain is cut is decided under the prune lock.
        let targets: Vec<String> = on_db!(self.reader(), pool => sqlx::query_scalar(
            "SELECT DISTINCT resource FROM audit WHERE at_us < $1 AND seq IS NOT NULL",
        )
        .bind(rows_before_us).fetch_all(pool).await?);
        for resource in targets {
            let deleted = self.prune_chain(&resource, rows_before_us).await?;
            if deleted > 0 {
                pruned.insert(resource);
                report.rows += deleted;
            }
        }
        report.resources = pruned.len() as u64;
        self.prune_history(before_us, &mut report).await?;
        Ok(report)
    }

    /// Prunes one resource's chain before `before_us`, in a transaction that first takes the
    /// prune lock (`audit_prune_lock`: the row's lock on PostgreSQL, the file's write lock on
    /// SQLite), so that it decides where to cut on what another prune left, never on what that
    /// prune was deleting. Two prunes at once used to cut where each had read the chain's end,
    /// and the later commit put the checkpoint back behind rows the other had deleted: `verify`
    /// then called the audit tampered. The checkpoint also only ever moves forward.
    async fn prune_chain(&self, resource: &str, before_us: i64) -> Result<u64, StoreError> {
        let now = self.clock.now_us();
        let mut tx = self.writer().begin().await?;
        on_db!(tx.conn(), conn => sqlx::query(
            "INSERT INTO audit_prune_lock (id, taken_at_us) VALUES (1, $1) \
             ON CONFLICT (id) DO UPDATE SET taken_at_us = excluded.taken_at_us",
        )
        .bind(now).execute(conn).await?.rows_affected());
        // The audit keeps the hash as bytes, the checkpoint as hex, as every chain head.
        let last: Option<(i64, Vec<u8>)> = on_db!(tx.conn(), conn => sqlx::query_as(
            "SELECT seq, hash FROM audit WHERE resource = $1 AND at_us < $2 \
             AND seq IS NOT NULL ORDER BY seq DESC LIMIT 1",
        )
        .bind(resource)
        .bind(before_us)
        .fetch_optional(conn)
        .await?);
        let Some((seq, hash)) = last else {
            // Another prune got there first.
            tx.commit().await?;
            return Ok(0);
        };
        let hash = hex::encode(hash);
        let signature = self.sign_start(resource, seq, &hash);
        on_db!(tx.conn(), conn => sqlx::query(
            "INSERT INTO audit_checkpoints (resource, seq, hash, pruned_at_us, signature) \
             VALUES ($1, $2, $3, $4, $5) \
             ON CONFLICT (resource) DO UPDATE SET seq = excluded.seq, hash = excluded.hash, \
             pruned_at_us = excluded.pruned_at_us, signature = excluded.signature \
             WHERE audit_checkpoints.seq < excluded.seq",
        )
        .bind(resource)
        .bind(seq)
        .bind(&hash)
        .bind(now)
        .bind(signature).execute(conn).await?.rows_affected());
        let deleted = on_db!(tx.conn(), conn => sqlx::query(
            "DELETE FROM audit WHERE resource = $1 \
             AND (seq <= $2 OR (seq IS NULL AND at_us < $3))",
        )
        .bind(resource)
        .bind(seq)
        .bind(before_us)
        .execute(conn)
        .await?
        .rows_affected());
        tx.commit().await?;
        Ok(deleted)
    }

    /// Deletes the history that explains the audit and is worth no more than it: lease events,
    /// closed overlaps (open ones stay, however old: they are still going on) and alert
    /// transitions, older than `before_us`. Without it, a worker renewing its lease adds a row
    /// every few seconds for ever.
    async fn prune_history(
        &self,
        before_us: i64,
        report: &mut PruneReport,
    ) -> Result<(), StoreError> {
        let mut tx = self.writer().begin().await?;
        let mut delete = async |sql: &str| -> Result<u64, StoreError> {
            Ok(on_db!(tx.conn(), conn => {
                sqlx::query(sql).bind(before_us).execute(conn).await?.rows_affected()
            }))
        };
        report.lease_events = delete("DELETE FROM lease_events WHERE at_us < $1").await?
            // External locks' holders, by when they were last seen holding.
            + delete("DELETE FROM authority_holders WHERE last_seen_us < $1").await?;
        report.closed_overlaps =
            delete("DELETE FROM ownership_overlaps WHERE state = 'closed' AND closed_at_us < $1")
                .await?;
        report.alert_transitions = delete("DELETE FROM alert_transitions WHERE at_us < $1").await?;
        report.refusals = delete("DELETE FROM refusals WHERE last_at_us < $1").await?;
        tx.commit().await?;
        Ok(())
    }
}
