//! Checking the audit's hash chains, and pruning old rows behind a checkpoint that keeps them
//! verifiable.

use super::audit_query::{record, AuditRecord};
use super::native::{on_db, Conn, Native};
use super::reads::AUDIT_COLUMNS;
use super::{Store, StoreError};
use crate::domain::chain::{row_hash, GENESIS};
use futures_util::stream::BoxStream;
use futures_util::{StreamExt, TryStreamExt};
use serde::Serialize;
use std::collections::HashMap;

/// The first broken link of one resource's chain.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Breach {
    pub resource: String,
    /// The row where the chain breaks (none when rows are missing at its end).
    pub audit_id: Option<i64>,
    pub seq: Option<i64>,
    pub problem: String,
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct VerifyReport {
    pub resources: u64,
    pub rows: u64,
    /// Rows written before the chain existed (older databases), not covered.
    pub unchained: u64,
    pub breaches: Vec<Breach>,
}

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

struct Walk {
    resource: String,
    expected_seq: i64,
    expected_prev: String,
    chained: bool,
    broken: bool,
}

impl Store {
    /// Walks every chain in order and reports the first broken link of each.
    ///
    /// Heads, checkpoints and rows are read in one snapshot (a repeatable-read transaction on
    /// PostgreSQL, one read transaction on SQLite): read one after the other, a prune or a
    /// write committed in between made an honest audit look broken.
    pub async fn verify_audit(&self) -> Result<VerifyReport, StoreError> {
        let mut tx = match self.reader() {
            Native::Postgres(_) => {
                self.reader()
                    .begin_with("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY")
                    .await?
            }
            Native::Sqlite(_) => self.reader().begin().await?,
        };
        // A written resource's head is in its row, any other's in `chain_heads` (rows marked
        // moved left out).
        let heads = chain_table(
            tx.conn(),
            "SELECT key AS resource, chain_seq AS seq, chain_hash AS hash FROM resources \
             WHERE chain_seq > 0 \
             UNION ALL SELECT resource, seq, hash FROM chain_heads WHERE seq >= 0",
        )
        .await?;
        let checkpoints = chain_table(
            tx.conn(),
            "SELECT resource, seq, hash FROM audit_checkpoints",
        )
        .await?;
        let mut report = VerifyReport::default();
        let sql = format!(
            "SELECT {AUDIT_COLUMNS}, seq, prev_hash, hash FROM audit ORDER BY resource, id"
        );
        let mut rows: BoxStream<'_, Result<AuditRecord, StoreError>> = on_db!(tx.conn(), conn => {
            sqlx::query(&sql)
                .fetch(conn)
                .map(|row| record(&row?))
                .boxed()
        });
        let mut walk: Option<Walk> = None;
        let mut seen = Vec::new();
        while let Some(row) = rows.try_next().await? {
            let AuditRecord {
                entry,
                seq,
                prev_hash: prev,
                hash,
            } = row;
            report.rows += 1;
            if walk.as_ref().is_none_or(|w| w.resource != entry.resource) {
                if let Some(done) = walk.take() {
                    finish(&done, &heads, &mut report);
                }
                let start = checkpoints.get(&entry.resource);
                walk = Some(Walk {
                    resource: entry.resource.clone(),
                    expected_seq: start.map_or(1, |(seq, _)| seq + 1),
                    expected_prev: start
                        .map_or_else(|| GENESIS.to_owned(), |(_, hash)| hash.clone()),
                    chained: false,
                    broken: false,
                });
                seen.push(entry.resource.clone());
                report.resources += 1;
            }
            let Some(current) = walk.as_mut() else {
                continue;
            };
            if current.broken {
                continue;
            }
            let breach = |problem: String| Breach {
                resource: entry.resource.clone(),
                audit_id: Some(entry.id),
                seq,
                problem,
            };
            let (Some(seq), Some(prev), Some(hash)) = (seq, prev, hash) else {
                if current.chained {
                    report.breaches.push(breach(
                        "a row without a place in the chain was added".into(),
                    ));
                    current.broken = true;
                } else {
                    report.unchained += 1;
                }
                continue;
            };
            current.chained = true;
            let problem = if seq > current.expected_seq {
                Some(format!(
                    "position {seq} where {} was due: rows before it are missing or out of order",
                    current.expected_seq
                ))
            } else if seq < current.expected_seq {
                Some(format!(
                    "position {seq} where {} was due: a row was added or the rows are out of order",
                    current.expected_seq
                ))
            } else if prev != current.expected_prev {
                Some("does not link to the row before it".to_owned())
            } else if row_hash(&entry, seq, &prev) != hash {
                Some("its contents were changed".to_owned())
            } else {
                None
            };
            if let Some(problem) = problem {
                report.breaches.push(breach(problem));
                current.broken = true;
                continue;
            }
            current.expected_seq = seq + 1;
            current.expected_prev = hash;
        }
        if let Some(done) = walk.take() {
            finish(&done, &heads, &mut report);
        }
        drop(rows);
        tx.commit().await?;
        // A chain whose rows were all removed.
        for (resource, (seq, _)) in &heads {
            let anchored = checkpoints.get(resource).map_or(0, |(seq, _)| *seq);
            if *seq > anchored && !seen.contains(resource) {
                report.breaches.push(Breach {
                    resource: resource.clone(),
                    audit_id: None,
                    seq: Some(anchored + 1),
                    problem: format!(
                        "all {} row(s) after position {anchored} are missing",
                        seq - anchored
                    ),
                });
            }
        }
        Ok(report)
    }

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
        let last: Option<(i64, String)> = on_db!(tx.conn(), conn => sqlx::query_as(
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
        on_db!(tx.conn(), conn => sqlx::query(
            "INSERT INTO audit_checkpoints (resource, seq, hash, pruned_at_us) \
             VALUES ($1, $2, $3, $4) \
             ON CONFLICT (resource) DO UPDATE SET seq = excluded.seq, hash = excluded.hash, \
             pruned_at_us = excluded.pruned_at_us WHERE audit_checkpoints.seq < excluded.seq",
        )
        .bind(resource)
        .bind(seq)
        .bind(hash.as_str())
        .bind(now).execute(conn).await?.rows_affected());
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

/// Chain positions by resource: heads or checkpoints.
async fn chain_table(
    conn: Conn<'_>,
    sql: &str,
) -> Result<HashMap<String, (i64, String)>, StoreError> {
    // `sql` selects `resource, seq, hash`, in that order.
    let rows: Vec<(String, i64, String)> =
        on_db!(conn, conn => sqlx::query_as(sql).fetch_all(conn).await?);
    Ok(rows
        .into_iter()
        .map(|(resource, seq, hash)| (resource, (seq, hash)))
        .collect())
}

/// Checks that a chain ends where its head says.
fn finish(walk: &Walk, heads: &HashMap<String, (i64, String)>, report: &mut VerifyReport) {
    if walk.broken || !walk.chained {
        return;
    }
    if let Some((seq, hash)) = heads.get(&walk.resource) {
        let last = walk.expected_seq - 1;
        if *seq != last || hash != &walk.expected_prev {
            report.breaches.push(Breach {
                resource: walk.resource.clone(),
                audit_id: None,
                seq: Some(last + 1),
                problem: format!("the chain ends at position {last} but its head is at {seq}: rows at its end are missing"),
            });
        }
    }
}
