//! Group commit's store half: fenced writes decided one after another, in order, and applied
//! together in one transaction with one durable commit.
//!
//! Statements are about the whole batch, not each write: on either backend one observes it and
//! one applies it (`sqlite`, `postgres`). So a batch costs about as much as a single write did,
//! and the commit's fsync is shared by all of it.
//!
//! Decisions are exactly those of one-at-a-time: each write is decided on the state its
//! predecessors in the batch left, kept in memory per resource (`plan`). On PostgreSQL the
//! application is a compare-and-set on what the decision was made on (each resource's revision,
//! each chain head's position and hash, rows observed missing still missing), its rows locked
//! in key order as it goes so that concurrent batches wait for each other rather than deadlock.
//! Any difference means a concurrent commit came between, and the whole batch is rolled back
//! and decided again. A batch whose resources this daemon knows from its own commits (`known`),
//! that names no lease and repeats no operation, is decided on that knowledge and applied and
//! committed by one statement: one round trip. On SQLite a transaction whose read snapshot went
//! stale cannot write at all (`SQLITE_BUSY_SNAPSHOT`) and runs again.
//!
//! This file hands a batch to its engine's run (`sqlite_run`, `postgres_run`) and decides and
//! applies a segment of it the same way on both (`Decider::apply_segment`); `plan` decides it,
//! `rows` turns the plan into the statements' parameters, `sqlite` and `postgres` are the
//! dialects' statements, and `shared` holds what they all name.

mod dialect;
pub(in crate::store) mod known;
pub(crate) mod pg_application;
pub(crate) mod pg_columns;
pub(crate) mod plan;
pub(crate) mod postgres;
mod postgres_run;
pub(crate) mod rows;
pub(in crate::store) mod sessions;
pub(crate) mod shared;
pub(crate) mod sqlite;
mod sqlite_run;

use crate::domain::clock::Clock;
use crate::domain::{FencedWrite, LeasePolicy, WriteResult};
use crate::store::engine::Engine;
use crate::store::leases::{lease_record, LEASE_COLUMNS};
use crate::store::lock_records;
use crate::store::native::{on_db, Conn, Native};
use crate::store::tx::{clock_us, retrying};
use crate::store::wal_sync::{CommitTicket, Durability};
use crate::store::{ObserveHook, Store, StoreError};
use dialect::{Application, Closing, Dialect, Opening};
use plan::chained::Chained;
use shared::{padded, placeholders, Observed, ObservedLeases};
use std::collections::{BTreeSet, HashMap};
use std::sync::atomic::{AtomicU32, Ordering};

/// The most writes one transaction takes. Bounds every multi-row statement well under SQLite's
/// 32,766 bound parameters (an audit row binds 17).
pub const MAX_BATCH: usize = 256;

/// Decisions of a batch made before giving up on a resource that concurrent commits keep
/// changing between observation and update.
const MAX_OBSERVATIONS: u32 = 64;

impl Store {
    /// Decides `write` against the resource's committed state (and, when it names a lease, the
    /// authority's) and applies the decision with its audit row, atomically: a batch of one.
    /// No lock-service check (see `UncheckedWrites`): the crate's only, for group commit's
    /// lone writes and the bench's baseline.
    pub(crate) async fn apply_write(
        &self,
        write: &FencedWrite,
        policy: LeasePolicy,
    ) -> Result<WriteResult, StoreError> {
        self.apply_batch(std::slice::from_ref(write), policy)
            .await?
            .pop()
            .ok_or_else(|| crate::store::error::corrupt("a batch of one gave no result"))
    }

    /// Decides `writes` in order against the committed state (and, where a write names a lease,
    /// the authority's) and applies every decision with its audit row in one transaction,
    /// durable when this returns. Rejections are results, not errors; an error is the
    /// database's and fails the batch. No lock-service check: the crate's only (tests outside
    /// it go through `UncheckedWrites`).
    pub(crate) async fn apply_batch(
        &self,
        writes: &[FencedWrite],
        policy: LeasePolicy,
    ) -> Result<Vec<WriteResult>, StoreError> {
        Ok(self
            .apply_chunks(writes, policy, Wait::Durable)
            .await?
            .results)
    }

    /// As `apply_batch`, but returns as soon as the batch has committed, so that the next one
    /// can be decided while this one's commit is synced; its results may be given out only once
    /// `CommittedBatch::durable` returns. Group commit's path, behind `FenceService::write`'s
    /// lock-service check.
    pub(crate) async fn apply_batch_committed(
        &self,
        writes: &[FencedWrite],
        policy: LeasePolicy,
    ) -> Result<CommittedBatch, StoreError> {
        self.apply_chunks(writes, policy, Wait::Committed).await
    }

    async fn apply_chunks(
        &self,
        writes: &[FencedWrite],
        policy: LeasePolicy,
        wait: Wait,
    ) -> Result<CommittedBatch, StoreError> {
        let mut results = Vec::with_capacity(writes.len());
        let mut durability = None;
        let mut dead_audit_ids = Vec::new();
        for chunk in writes.chunks(MAX_BATCH) {
            let observations = AtomicU32::new(0);
            let Attempt {
                results: mut done,
                durability: synced,
                mut dead_ids,
            } = retrying(|| self.try_apply_batch(chunk, policy, &observations, wait)).await?;
            dead_audit_ids.append(&mut dead_ids);
            let observations = observations.load(Ordering::Relaxed);
            for result in &mut done {
                result.observations = observations;
                result.batch_size = chunk.len();
            }
            results.append(&mut done);
            // Commits are synced in order, so the last one's covers the others.
            durability = synced;
        }
        Ok(CommittedBatch {
            results,
            durability,
            dead_audit_ids,
        })
    }

    async fn try_apply_batch(
        &self,
        writes: &[FencedWrite],
        policy: LeasePolicy,
        observations: &AtomicU32,
        wait: Wait,
    ) -> Result<Attempt, StoreError> {
        let decider = Decider {
            clock: &*self.clock,
            observe_hook: self.observe_hook.as_ref(),
        };
        match &self.engine {
            Engine::Sqlite(sqlite) => {
                observations.fetch_add(1, Ordering::Relaxed);
                sqlite.try_apply_batch(&decider, writes, policy, wait).await
            }
            Engine::Postgres(postgres) => {
                postgres
                    .try_apply_batch(&decider, writes, policy, observations)
                    .await
            }
        }
    }
}

/// How long applying a batch waits.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Wait {
    /// Until it is durable.
    Durable,
    /// Until it has committed: `CommittedBatch::durable` waits for the rest (SQLite's WAL sync
    /// after the commit; a PostgreSQL commit is durable already).
    Committed,
}

/// What deciding a batch takes from the store, the same on every engine: the clock, and the
/// tests' hook between deciding and applying.
struct Decider<'s> {
    clock: &'s dyn Clock,
    observe_hook: Option<&'s ObserveHook>,
}

impl Decider<'_> {
    /// Runs the tests' hook, if any, once a batch is decided and before it is applied.
    async fn decided(&self) {
        if let Some(hook) = self.observe_hook {
            hook().await;
        }
    }

    /// Decides and applies writes of which no two share an operation (resource and
    /// idempotency key), so each can be decided on the records committed before the segment.
    async fn apply_segment<D: Dialect>(
        &self,
        dialect: &D,
        conn: &mut D::Connection,
        writes: &[FencedWrite],
        policy: LeasePolicy,
        opening: Opening,
        closing: Closing<'_>,
    ) -> Result<Segment, StoreError> {
        let keys: BTreeSet<&str> = writes.iter().map(|w| w.key.as_str()).collect();
        let Observed {
            resources: observed,
            operations,
            unwritten_heads,
            mut audit,
        } = dialect.observe(conn, opening, &keys, writes).await?;
        let leases = observe_leases(D::native(conn), self.clock, writes).await?;
        let lock_names: BTreeSet<String> = writes
            .iter()
            .filter_map(|w| w.authority.as_ref().map(|view| view.lock.lease_name()))
            .collect();
        let mut locks = lock_records::observe(D::native(conn), &lock_names).await?;

        let decided = plan::decide_in_order(
            writes,
            &keys,
            policy,
            &plan::Observations {
                resources: &observed,
                operations: &operations,
                leases: &leases,
            },
            &mut locks,
            self.clock,
        )?;
        if !locks.is_empty() {
            let stored = lock_records::store(D::native(conn), &locks, self.clock.now_us()).await?;
            D::expect_changes(&mut audit, stored);
        }
        self.decided().await;

        let chained = Chained::new(&decided, &keys, &observed, unwritten_heads)?;
        let plan = chained.plan(&decided, &observed)?;
        let (ids, ticket) = match dialect.apply(conn, audit, &plan, closing).await? {
            Application::Applied { ids, ticket } => (ids, ticket),
            Application::Changed { drawn_ids } => return Ok(Segment::Changed { drawn_ids }),
        };
        dialect.applied(&plan.changes);
        Ok(Segment::Applied {
            results: decided.into_results(ids),
            ticket,
        })
    }
}

/// One run of a batch that committed.
struct Attempt {
    results: Vec<WriteResult>,
    durability: Option<Durability>,
    /// PostgreSQL audit ids drawn by runs that were rolled back.
    dead_ids: Vec<i64>,
}

/// What became of a segment.
enum Segment {
    /// Applied as observed; with the batch's commit, the ticket for its sync (SQLite).
    Applied {
        results: Vec<WriteResult>,
        ticket: Option<CommitTicket>,
    },
    /// Something was no longer as observed: nothing of it may be committed. The audit ids it
    /// drew (PostgreSQL) die with its transaction.
    Changed { drawn_ids: Vec<i64> },
}

/// A batch that has committed; on SQLite's group-commit path possibly not yet on disk.
pub struct CommittedBatch {
    results: Vec<WriteResult>,
    durability: Option<Durability>,
    dead_audit_ids: Vec<i64>,
}

impl CommittedBatch {
    /// Audit ids drawn for this batch by runs that were rolled back (PostgreSQL): no row will
    /// ever have them, so the live tail need not wait for them.
    pub fn take_dead_audit_ids(&mut self) -> Vec<i64> {
        std::mem::take(&mut self.dead_audit_ids)
    }

    /// The results, once the batch is durable.
    pub async fn durable(self) -> Result<Vec<WriteResult>, StoreError> {
        if let Some(durability) = self.durability {
            durability.wait().await?;
        }
        Ok(self.results)
    }

    /// Whether this batch is the only one waiting for a sync (always, where none is needed).
    pub fn alone_in_waiting(&self) -> bool {
        self.durability
            .as_ref()
            .is_none_or(Durability::earlier_commits_durable)
    }

    /// As `durable`, with any fsync it leads run on the calling thread, which blocks: for a
    /// thread of its own with nothing else to do (group commit's, when no write is waiting).
    pub async fn durable_on_this_thread(self) -> Result<Vec<WriteResult>, StoreError> {
        if let Some(durability) = self.durability {
            durability.wait_on_this_thread().await?;
        }
        Ok(self.results)
    }
}

/// The leases the batch names, with the authority's clock; share-locked on PostgreSQL (see
/// `ObservedLeases`).
async fn observe_leases(
    mut conn: Conn<'_>,
    clock: &dyn Clock,
    writes: &[FencedWrite],
) -> Result<ObservedLeases, StoreError> {
    let names: BTreeSet<&str> = writes
        .iter()
        .filter(|w| w.authority.is_none())
        .filter_map(|w| w.lease.as_ref().map(|l| l.as_str()))
        .collect();
    if names.is_empty() {
        return Ok(ObservedLeases {
            records: HashMap::new(),
            now_us: 0,
        });
    }
    let lock = match conn {
        Native::Postgres(_) => " ORDER BY name FOR SHARE",
        Native::Sqlite(_) => "",
    };
    let names = padded(names.into_iter().collect());
    let sql = format!(
        "SELECT {LEASE_COLUMNS} FROM leases WHERE name IN ({}){lock}",
        placeholders(1, names.len())
    );
    let records = on_db!(conn.reborrow(), conn => {
        let mut query = sqlx::query(&sql);
        for name in names {
            query = query.bind(name);
        }
        query
            .fetch_all(conn)
            .await?
            .iter()
            .map(|row| {
                let record = lease_record(row)?;
                Ok((record.name.as_str().to_owned(), record))
            })
            .collect::<Result<HashMap<_, _>, StoreError>>()?
    });
    let now_us = clock_us(conn, clock).await?;
    Ok(ObservedLeases { records, now_us })
}

#[cfg(test)]
mod tests;
