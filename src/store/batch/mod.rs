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
//! This file runs a batch; `plan` decides it, `rows` turns the plan into the statements'
//! parameters, `sqlite` and `postgres` are the dialects' statements, and `shared` holds what
//! they all name.

mod dialect;
mod known;
pub(crate) mod plan;
pub(crate) mod postgres;
pub(crate) mod rows;
mod sessions;
pub(crate) mod shared;
pub(crate) mod sqlite;

use crate::domain::clock::Clock;
use crate::domain::{FencedWrite, LeasePolicy, WriteResult};
use crate::store::authority;
use crate::store::chain_heads::StartingHeads;
use crate::store::leases::{lease_record, LEASE_COLUMNS};
use crate::store::native::{on_db, Conn, Native};
use crate::store::tx::{begin_audited_on, clock_us, retrying};
use crate::store::wal_sync::{CommitTicket, Durability, WalSync};
use crate::store::{Store, StoreError};
use dialect::{Application, Closing, Dialect, Opening};
pub(crate) use known::KnownResources;
use plan::Plan;
use postgres::{DecidedOn, Postgres};
pub(crate) use sessions::BatchSessions;
use shared::{padded, placeholders, Observed, ObservedLeases};
use sqlite::Sqlite;
use sqlx::{Executor, PgConnection, SqliteConnection};
use std::collections::{BTreeSet, HashMap};
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Arc;

/// The most writes one transaction takes. Bounds every multi-row statement well under SQLite's
/// 32,766 bound parameters (an audit row binds 17).
pub const MAX_BATCH: usize = 256;

/// Decisions of a batch made before giving up on a resource that concurrent commits keep
/// changing between observation and update.
const MAX_OBSERVATIONS: u32 = 64;

impl Store {
    /// Decides `write` against the resource's committed state (and, when it names a lease, the
    /// authority's) and applies the decision with its audit row, atomically: a batch of one.
    pub async fn apply_write(
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
    /// database's and fails the batch.
    pub async fn apply_batch(
        &self,
        writes: &[FencedWrite],
        policy: LeasePolicy,
    ) -> Result<Vec<WriteResult>, StoreError> {
        Ok(self.apply_chunks(writes, policy, None).await?.results)
    }

    /// As `apply_batch`, but returns as soon as the batch has committed, so that the next one
    /// can be decided while this one's commit is synced; its results may be given out only once
    /// `CommittedBatch::durable` returns. Group commit's path.
    pub async fn apply_batch_committed(
        &self,
        writes: &[FencedWrite],
        policy: LeasePolicy,
    ) -> Result<CommittedBatch, StoreError> {
        self.apply_chunks(writes, policy, self.wal.as_ref()).await
    }

    async fn apply_chunks(
        &self,
        writes: &[FencedWrite],
        policy: LeasePolicy,
        unsynced: Option<&Arc<WalSync>>,
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
            } = retrying(|| self.try_apply_batch(chunk, policy, &observations, unsynced)).await?;
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
        unsynced: Option<&Arc<WalSync>>,
    ) -> Result<Attempt, StoreError> {
        match &self.writer {
            Native::Sqlite(writer) => {
                observations.fetch_add(1, Ordering::Relaxed);
                let mut conn = writer.acquire().await?;
                let (results, durability) = self
                    .try_apply_sqlite(&mut conn, writes, policy, unsynced)
                    .await?;
                Ok(Attempt {
                    results,
                    durability,
                    dead_ids: Vec::new(),
                })
            }
            Native::Postgres(_) => self.try_apply_postgres(writes, policy, observations).await,
        }
    }

    /// PostgreSQL: first, where it can, the batch decided on what this daemon knows and applied
    /// in one statement; then observed in a transaction, decided and applied. A resource found
    /// changed when the batch locks it means a concurrent batch committed after what the
    /// decision was made on; the batch is rolled back and decided again. The audit ids a
    /// rolled-back run drew will never be used, and are returned as such.
    async fn try_apply_postgres(
        &self,
        writes: &[FencedWrite],
        policy: LeasePolicy,
        observations: &AtomicU32,
    ) -> Result<Attempt, StoreError> {
        let sessions = self
            .batch_sessions
            .as_ref()
            .ok_or_else(|| crate::store::error::corrupt("a read-only store was asked to write"))?;
        let mut session = sessions.take().await?;
        let attempt = self
            .apply_postgres_on(&mut session, writes, policy, observations)
            .await;
        session.finish(&attempt);
        attempt
    }

    async fn apply_postgres_on(
        &self,
        conn: &mut PgConnection,
        writes: &[FencedWrite],
        policy: LeasePolicy,
        observations: &AtomicU32,
    ) -> Result<Attempt, StoreError> {
        let mut dead_ids = Vec::new();
        match self
            .try_apply_known(conn, writes, policy, observations)
            .await?
        {
            OnKnown::Applied(attempt) => return Ok(attempt),
            OnKnown::Changed { drawn_ids } => dead_ids = drawn_ids,
            OnKnown::NotKnown => {}
        }
        let mut runs = 0;
        'run: loop {
            runs += 1;
            let seen = observations.fetch_add(1, Ordering::Relaxed) + 1;
            if runs > MAX_OBSERVATIONS {
                return Err(StoreError::Contention { attempts: seen });
            }
            let mut tx = begin_audited_on(conn).await?;
            let mut results = Vec::with_capacity(writes.len());
            for segment in plan::segments(writes) {
                let applied = self
                    .apply_segment(
                        &Postgres,
                        &mut *tx,
                        segment,
                        policy,
                        Opening::Within,
                        Closing::Within,
                    )
                    .await;
                match applied {
                    Ok(Segment::Applied {
                        results: mut applied,
                        ..
                    }) => results.append(&mut applied),
                    Ok(Segment::Changed { drawn_ids }) => {
                        tx.rollback().await?;
                        self.forget(writes);
                        dead_ids.extend(results.iter().map(|result| result.entry.id));
                        dead_ids.extend(drawn_ids);
                        continue 'run;
                    }
                    Err(error) => {
                        self.forget(writes);
                        return Err(error);
                    }
                }
            }
            if let Err(error) = tx.commit().await {
                self.forget(writes);
                return Err(error.into());
            }
            return Ok(Attempt {
                results,
                durability: None,
                dead_ids,
            });
        }
    }

    /// PostgreSQL: the batch decided on the state of its resources as this daemon's own commits
    /// left it, without reading it, and applied and committed by one statement that checks
    /// that state (`postgres`). Only for a batch of one segment (no operation repeated) that
    /// names no lease, since a lease is the authority's state, not the resource's.
    async fn try_apply_known(
        &self,
        conn: &mut PgConnection,
        writes: &[FencedWrite],
        policy: LeasePolicy,
        observations: &AtomicU32,
    ) -> Result<OnKnown, StoreError> {
        let eligible = writes
            .iter()
            .all(|write| write.lease.is_none() && write.authority.is_none())
            && plan::segments(writes).len() == 1;
        let keys: BTreeSet<&str> = writes.iter().map(|w| w.key.as_str()).collect();
        let known = match eligible {
            true => self.known.all_of(&keys),
            false => None,
        };
        let Some(known) = known else {
            return Ok(OnKnown::NotKnown);
        };
        observations.fetch_add(1, Ordering::Relaxed);
        let no_leases = ObservedLeases {
            records: HashMap::new(),
            now_us: 0,
        };
        let decided = plan::decide_in_order(
            writes,
            &keys,
            policy,
            &plan::Observations {
                resources: &known,
                operations: &HashMap::new(),
                leases: &no_leases,
            },
            &mut HashMap::new(),
            &*self.clock,
        )?;
        if let Some(hook) = &self.observe_hook {
            hook().await;
        }
        let StartingHeads {
            mut heads,
            unwritten: unwritten_seen,
        } = StartingHeads::new(&keys, &known, Vec::new())?;
        let links = plan::link(&mut heads, &decided.entries)?;
        let changes = decided.changes(&known, &heads)?;
        let unwritten = plan::unwritten_moves(&unwritten_seen, &changes);
        let plan = Plan {
            writes,
            decisions: &decided.decisions,
            changes: &changes,
            entries: &decided.entries,
            links: &links,
            unwritten: &unwritten,
            sightings: &decided.sightings,
        };
        // Known before the statement is sent, not after it commits: a batch formed meanwhile is
        // decided on this one's outcome, and its statement, waiting on this one's row locks,
        // finds exactly that once this one commits (or nothing as it knew, should this fail).
        self.known.remember(&changes);
        let applied = postgres::apply(conn, &plan, DecidedOn::Known { writes }).await;
        match applied {
            Ok(postgres::Application::Applied { ids }) => {
                let mut results = decided.into_results(ids);
                for result in &mut results {
                    result.decided_on_known_state = true;
                }
                Ok(OnKnown::Applied(Attempt {
                    results,
                    durability: None,
                    dead_ids: Vec::new(),
                }))
            }
            Ok(postgres::Application::Changed { drawn_ids }) => {
                self.forget(writes);
                Ok(OnKnown::Changed { drawn_ids })
            }
            Err(error) => {
                self.forget(writes);
                Err(error)
            }
        }
    }

    fn forget(&self, writes: &[FencedWrite]) {
        self.known.forget(writes.iter().map(|w| w.key.as_str()));
    }

    /// Forgets what this daemon knows of `key`, changed outside group commit (a reset).
    pub(crate) fn forget_known(&self, key: &str) {
        self.known.forget([key]);
    }

    /// SQLite: the batch's first observation begins the transaction and its last application
    /// commits it (`sqlite`), so the writer connection makes two round trips per batch. A stale
    /// snapshot cannot write (`SQLITE_BUSY_SNAPSHOT`): the error ends this run, and `retrying`
    /// runs the batch again.
    async fn try_apply_sqlite(
        &self,
        conn: &mut SqliteConnection,
        writes: &[FencedWrite],
        policy: LeasePolicy,
        unsynced: Option<&Arc<WalSync>>,
    ) -> Result<(Vec<WriteResult>, Option<Durability>), StoreError> {
        let segments = plan::segments(writes);
        let Some(last) = segments.len().checked_sub(1) else {
            return Ok((Vec::new(), None));
        };
        let mut results = Vec::with_capacity(writes.len());
        let mut ticket = None;
        for (index, segment) in segments.into_iter().enumerate() {
            let opening = match index {
                0 => Opening::Begin {
                    unsynced: unsynced.is_some(),
                },
                _ => Opening::Within,
            };
            let closing = match index == last {
                true => Closing::Commit { unsynced },
                false => Closing::Within,
            };
            let applied = self
                .apply_segment(&Sqlite, conn, segment, policy, opening, closing)
                .await;
            match applied {
                Ok(Segment::Applied {
                    results: mut applied,
                    ticket: committed,
                }) => {
                    results.append(&mut applied);
                    ticket = committed;
                }
                Ok(Segment::Changed { .. }) => {
                    roll_back(conn).await;
                    return Err(crate::store::error::corrupt(
                        "a SQLite batch found a resource changed",
                    ));
                }
                Err(error) => {
                    roll_back(conn).await;
                    return Err(error);
                }
            }
        }
        // Committed and back to FULL by the last statement: no check needed on release.
        self.writer_clean.store(true, Ordering::SeqCst);
        Ok((results, ticket.as_ref().map(CommitTicket::durability)))
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
        let leases = observe_leases(D::native(conn), &*self.clock, writes).await?;
        let lock_names: BTreeSet<String> = writes
            .iter()
            .filter_map(|w| w.authority.as_ref().map(|view| view.lock.lease_name()))
            .collect();
        let mut locks = authority::observe(D::native(conn), &lock_names).await?;

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
            &*self.clock,
        )?;
        if !locks.is_empty() {
            let stored = authority::store(D::native(conn), &locks, self.clock.now_us()).await?;
            D::expect_changes(&mut audit, stored);
        }
        if let Some(hook) = &self.observe_hook {
            hook().await;
        }

        let StartingHeads {
            mut heads,
            unwritten: unwritten_seen,
        } = StartingHeads::new(&keys, &observed, unwritten_heads)?;
        // From here on, the heads after the batch.
        let links = plan::link(&mut heads, &decided.entries)?;
        let changes = decided.changes(&observed, &heads)?;
        let unwritten = plan::unwritten_moves(&unwritten_seen, &changes);
        let plan = Plan {
            writes,
            decisions: &decided.decisions,
            changes: &changes,
            entries: &decided.entries,
            links: &links,
            unwritten: &unwritten,
            sightings: &decided.sightings,
        };
        let (ids, ticket) = match dialect.apply(conn, audit, &plan, closing).await? {
            Application::Applied { ids, ticket } => (ids, ticket),
            Application::Changed { drawn_ids } => return Ok(Segment::Changed { drawn_ids }),
        };
        if D::KNOWS_STATE {
            // Before the commit: should it fail, the batch forgets them again.
            self.known.remember(&changes);
        }
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

/// What became of a batch decided on what this daemon knows.
enum OnKnown {
    Applied(Attempt),
    /// Something was not as known: nothing was applied, and the ids drawn are dead.
    Changed {
        drawn_ids: Vec<i64>,
    },
    /// Not all of its resources are known, or it is not a batch for that path.
    NotKnown,
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

/// Ends a SQLite batch that failed with its transaction perhaps still open. Best effort: should
/// this fail too, the writer's check on release closes the connection.
async fn roll_back(conn: &mut SqliteConnection) {
    if let Err(error) = conn.execute("ROLLBACK").await {
        tracing::debug!(%error, "rolling back a failed batch");
    }
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
mod tests {
    use super::plan::{segments, test_write as write};
    use super::*;
    use crate::domain::{Decision, ResourceKey};

    #[tokio::test]
    async fn a_group_commit_on_sqlite_is_synced_after_its_commit_and_leaves_full_behind() {
        let dir = tempfile::tempdir().unwrap();
        let url = format!("sqlite://{}", dir.path().join("x.db").display());
        let store = Store::open(&url, &Default::default()).await.unwrap();
        let wal = store.wal.clone().expect("SQLite syncs its WAL itself");
        let committed = store
            .apply_batch_committed(&[write("a", None), write("b", None)], Default::default())
            .await
            .unwrap();
        let results = committed.durable().await.unwrap();
        assert_eq!(results.len(), 2);
        assert!(results
            .iter()
            .all(|r| matches!(r.decision, Decision::Accept { .. })));
        wal.settle().await.unwrap();
        // The unsynced level was the batch's own: the next transaction syncs its commit again.
        let level: i64 = sqlx::query_scalar("PRAGMA synchronous")
            .fetch_one(store.sqlite_writer())
            .await
            .unwrap();
        assert_eq!(level, 2, "FULL");
        // And the plain path still commits with FULL, durable on return.
        store
            .apply_batch(&[write("a", None)], Default::default())
            .await
            .unwrap();
        store.close().await;
    }

    #[tokio::test]
    async fn a_failed_sqlite_batch_commits_nothing_and_leaves_the_writer_usable() {
        let dir = tempfile::tempdir().unwrap();
        let url = format!("sqlite://{}", dir.path().join("x.db").display());
        let store = Store::open(&url, &Default::default()).await.unwrap();
        sqlx::query(
            "CREATE TRIGGER poison BEFORE INSERT ON audit WHEN NEW.resource = 'poison' \
             BEGIN SELECT RAISE(ABORT, 'poisoned write'); END",
        )
        .execute(store.sqlite_writer())
        .await
        .unwrap();
        // Two segments (the repeated operation starts the second); the second one's statement
        // fails after the first one's changes were made in the same transaction.
        let batch = [
            write("a", Some("op-1")),
            write("a", Some("op-1")),
            write("poison", None),
        ];
        assert_eq!(segments(&batch).len(), 2);
        let error = store
            .apply_batch_committed(&batch, Default::default())
            .await
            .err()
            .expect("the poisoned batch fails");
        assert!(error.to_string().contains("poisoned write"), "{error}");
        let a = ResourceKey::parse("a").unwrap();
        assert!(
            store.read_value(&a).await.unwrap().is_none(),
            "the first segment was rolled back with the rest"
        );

        // The writer is outside any transaction and syncs its commits again.
        let results = store
            .apply_batch(&[write("a", Some("op-1"))], Default::default())
            .await
            .unwrap();
        assert!(matches!(results[0].decision, Decision::Accept { .. }));
        assert!(store.read_value(&a).await.unwrap().is_some());
        let level: i64 = sqlx::query_scalar("PRAGMA synchronous")
            .fetch_one(store.sqlite_writer())
            .await
            .unwrap();
        assert_eq!(level, 2, "FULL");
        store.close().await;
    }
}
