//! Checking the audit's hash chains: every row (`full`, chains in parallel) or only the rows
//! after the positions an earlier run verified or a witness signed (`incremental`). Both read heads, checkpoints and
//! rows in one snapshot, and walk each chain with `walk::ChainVerifier`; in the same snapshot,
//! every run also finds rows added without a place in a chain (`unchained`) and holds each
//! resource's stored state to its audit (`state`).

mod full;
mod incremental;
mod pages;
mod rows;
mod state;
mod unchained;
mod walk;
mod witnessed;

pub use witnessed::{WitnessSnapshot, WitnessSummary};

use super::native::{on_db, Conn, Native, Tx};
use super::{Store, StoreError};
use crate::domain::witness::{PublicKey, WitnessedAudit};
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

/// The first broken link of one resource's chain.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Breach {
    pub resource: String,
    /// The row where the chain breaks (none when rows are missing at its end).
    pub audit_id: Option<i64>,
    pub seq: Option<i64>,
    pub problem: String,
}

/// Where a chain was verified up to: its last position and hash, and the id of the row there
/// (none when no row of it remained, a prune having taken them all).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ChainPosition {
    pub seq: i64,
    pub hash: String,
    pub audit_id: Option<i64>,
}

/// Verified positions by resource: what an incremental run starts from and records.
pub type VerifiedPositions = BTreeMap<String, ChainPosition>;

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct VerifyReport {
    /// Chains read by this run.
    pub resources: u64,
    /// Rows read and checked by this run.
    pub rows: u64,
    /// Rows written before the chain existed (older databases), not covered.
    pub unchained: u64,
    pub breaches: Vec<Breach>,
    /// Whether every row was read (rather than only those after the verified positions).
    pub full: bool,
    /// Chains whose rows up to a verified position were not read again, and those rows.
    pub covered_chains: u64,
    pub covered_rows: u64,
    /// Resources whose stored state (highest generation, revision, value) was held to their
    /// audit.
    pub states: u64,
    /// What of a resource's state the audit no longer records, so could not be checked.
    pub unchecked_states: Vec<UncheckedState>,
    /// Rows read again whole because the database's encoding of them did not give their hash
    /// (SQLite's full run): each a change, or an escaping SQLite does differently.
    #[serde(skip)]
    pub rechecked: u64,
    /// Every chain's end after this run, to start the next one from (meaningful when there is
    /// no breach).
    #[serde(skip)]
    pub positions: VerifiedPositions,
    /// What the witness vouched for, when the run was held to one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub witness: Option<WitnessSummary>,
}

/// Part of a resource's stored state its audit no longer records: said, not guessed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct UncheckedState {
    pub resource: String,
    /// "highest generation and revision", or "value".
    pub what: String,
    pub why: String,
}

impl VerifyReport {
    fn add(&mut self, walked: walk::WalkedChain) {
        self.resources += 1;
        self.rows += walked.rows;
        self.unchained += walked.unchained;
        match walked.end {
            walk::ChainEnd::Verified(position) => {
                self.positions.insert(walked.resource, position);
            }
            walk::ChainEnd::Broken(breach) => self.breaches.push(breach),
        }
    }
}

/// What a run checks besides the chains' rows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Scope {
    Rows,
    /// Also each resource's stored state against its audit (`state`).
    RowsAndState,
}

/// Chain positions by resource: heads or checkpoints.
pub(super) type ChainTable = HashMap<String, (i64, String)>;

/// What every run holds the rows to, read in the run's snapshot.
struct Anchors {
    /// Each chain's head: the last position and hash its writers recorded.
    heads: ChainTable,
    /// Where each pruned chain now starts.
    checkpoints: ChainTable,
    /// The signatures of the starts a prune holding the witness's key moved.
    signatures: HashMap<String, String>,
}

impl Store {
    /// Walks every chain in order and reports the first broken link of each.
    pub async fn verify_audit(&self) -> Result<VerifyReport, StoreError> {
        self.verify_audit_from(None).await
    }

    /// With `verified` positions, checks only the rows after them (and that the rows at them
    /// are still there); without, every row. Everything is read in one snapshot (a
    /// repeatable-read transaction on PostgreSQL, one read transaction on SQLite): read one
    /// after the other, a prune or a write committed in between made an honest audit look
    /// broken.
    pub async fn verify_audit_from(
        &self,
        verified: Option<&VerifiedPositions>,
    ) -> Result<VerifyReport, StoreError> {
        Ok(self
            .verify_in_snapshot(verified, None, Scope::RowsAndState)
            .await?
            .0)
    }

    /// The audit held to what a witness's checkpoints vouch for (signed with `key`): heads it
    /// saw still reached with the hashes it saw, chains it saw still there, chain starts moved
    /// since only by signed prunes. With `full`, every row is read; without, only the rows after
    /// the heads it saw (each checkpoint's signer verified the rows up to it, after the one
    /// before), checked to be still there as with an earlier run's record.
    pub async fn verify_audit_witnessed(
        &self,
        witnessed: &WitnessedAudit,
        key: &PublicKey,
        full: bool,
    ) -> Result<VerifyReport, StoreError> {
        // With no checkpoint, every chain is new: one pass reads them cheaper than one query
        // each.
        let heads = (!full && !witnessed.chains.is_empty()).then(|| witnessed::heads(witnessed));
        Ok(self
            .verify_in_snapshot(heads.as_ref(), Some((witnessed, key)), Scope::RowsAndState)
            .await?
            .0)
    }

    /// What a witness signs: the chains verified after `previous` (its last checkpoint's heads;
    /// none: every row), and every chain's start, read in the same snapshot.
    pub async fn witness_snapshot(
        &self,
        previous: Option<&VerifiedPositions>,
    ) -> Result<WitnessSnapshot, StoreError> {
        // What is signed is the chains; the state is held to its audit by every `verify`, and
        // on PostgreSQL that check was most of a round's time (docs/performance.md).
        let (report, anchors) = self.verify_in_snapshot(previous, None, Scope::Rows).await?;
        Ok(WitnessSnapshot::new(report, anchors))
    }

    async fn verify_in_snapshot(
        &self,
        verified: Option<&VerifiedPositions>,
        witness: Option<(&WitnessedAudit, &PublicKey)>,
        scope: Scope,
    ) -> Result<(VerifyReport, Anchors), StoreError> {
        let mut tx = self.consistent_read().await?;
        let anchors = Anchors::read(tx.conn()).await?;
        let marks = Arc::new(
            witness
                .map(|(w, _)| witnessed::marks(w))
                .unwrap_or_default(),
        );
        let mut report = match verified {
            None => full::verify(&mut tx, &anchors, marks).await?,
            Some(verified) => incremental::verify(&mut tx, &anchors, verified, &marks).await?,
        };
        let boundary = unchained::boundary(&mut tx).await?;
        unchained::check(&mut tx, boundary, &mut report).await?;
        let full = report.full;
        if scope == Scope::RowsAndState {
            state::check(&mut tx, &anchors, boundary > 0, full, &mut report).await?;
        }
        tx.commit().await?;
        if let Some((witnessed, key)) = witness {
            witnessed::check(&mut report, &anchors, witnessed, key);
        }
        // Stable: a resource's breaches stay in the order found, its chain's first.
        report.breaches.sort_by(|a, b| a.resource.cmp(&b.resource));
        Ok((report, anchors))
    }

    /// A read-only transaction that sees one state of the database throughout.
    ///
    /// On PostgreSQL a prune drops whole partitions, and `DROP` is not MVCC-safe: the audit's
    /// share lock, taken before the first query fixes the snapshot, keeps a day from vanishing
    /// between reading the checkpoints and scanning its rows (a prune waits, then retries on
    /// its next pass: `partitions`).
    async fn consistent_read(&self) -> Result<Tx<'static>, StoreError> {
        Ok(match self.reader() {
            Native::Postgres(_) => {
                self.reader()
                    .begin_with(
                        "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY; \
                         LOCK TABLE audit IN ACCESS SHARE MODE",
                    )
                    .await?
            }
            Native::Sqlite(_) => self.reader().begin().await?,
        })
    }
}

impl Anchors {
    async fn read(mut conn: Conn<'_>) -> Result<Self, StoreError> {
        // A written resource's head is in its row, any other's in `chain_heads` (rows marked
        // moved left out).
        let heads = chain_table(
            conn.reborrow(),
            "SELECT key AS resource, chain_seq AS seq, chain_hash AS hash FROM resources \
             WHERE chain_seq > 0 \
             UNION ALL SELECT resource, seq, hash FROM chain_heads WHERE seq >= 0",
        )
        .await?;
        let checkpoints = chain_table(
            conn.reborrow(),
            "SELECT resource, seq, hash FROM audit_checkpoints",
        )
        .await?;
        let signatures: Vec<(String, String)> = on_db!(conn, conn => sqlx::query_as(
            "SELECT resource, signature FROM audit_checkpoints WHERE signature IS NOT NULL",
        )
        .fetch_all(conn)
        .await?);
        Ok(Self {
            heads,
            checkpoints,
            signatures: signatures.into_iter().collect(),
        })
    }
}

/// Chain positions by resource from `sql`, which selects `resource, seq, hash` in that order.
async fn chain_table(conn: Conn<'_>, sql: &str) -> Result<ChainTable, StoreError> {
    let rows: Vec<(String, i64, String)> =
        on_db!(conn, conn => sqlx::query_as(sql).fetch_all(conn).await?);
    Ok(rows
        .into_iter()
        .map(|(resource, seq, hash)| (resource, (seq, hash)))
        .collect())
}
