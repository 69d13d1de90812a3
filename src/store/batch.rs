//! Group commit's store half: fenced writes decided one after another, in order, and applied
//! together in one transaction with one durable commit.
//!
//! Statements are about the whole batch, not each write: on either backend one observes it and
//! one applies it (`batch_sqlite`, `batch_postgres`). So a batch costs about as much as a single
//! write did, and the commit's fsync is shared by all of it.
//!
//! Decisions are exactly those of one-at-a-time: each write is decided on the state its
//! predecessors in the batch left, kept in memory per resource. On PostgreSQL the application
//! is a compare-and-set on what was observed (each resource's revision, each chain head's
//! position, rows observed missing still missing), its rows locked in key order as it goes so
//! that concurrent batches wait for each other rather than deadlock. Any difference means a
//! concurrent commit came between, and the whole batch is rolled back and decided again. On SQLite a transaction
//! whose read snapshot went stale cannot write at all (`SQLITE_BUSY_SNAPSHOT`) and runs again.

use super::authority;
use super::batch_rows::Plan;
use super::batch_sqlite::{Closing, Opening};
use super::chain_heads::{LockedHeads, StartingHeads, UnwrittenMoves};
use super::leases::{lease_record, LEASE_COLUMNS};
use super::tx::{begin_batch, clock_us, retrying};
use super::wal_sync::{CommitTicket, Durability, WalSync};
use super::writes::{audit_entry, FencedWrite, LeasePolicy, WriteResult};
use super::{batch_postgres, batch_sqlite, Backend, Store, StoreError};
use crate::domain::authority::Anomaly;
use crate::domain::chain;
use crate::domain::{
    decide, AuditEntry, Decision, FencingToken, LeaseCheck, LeaseRecord, RecordedOperation,
    ResourceState, Revision, WriteIntent,
};
use chrono::{DateTime, SubsecRound, Utc};
use sqlx::{AnyConnection, Executor, Row};
use std::collections::{BTreeSet, HashMap, HashSet};
use std::fmt::Write as _;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Arc;

/// The most writes one transaction takes. Bounds every multi-row statement well under SQLite's
/// 32,766 bound parameters (an audit row binds 17).
pub const MAX_BATCH: usize = 256;

/// Decisions of a batch made before giving up on a resource that concurrent commits keep
/// changing between observation and update.
const MAX_OBSERVATIONS: u32 = 64;

impl Store {
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
        match self.backend {
            Backend::Sqlite => {
                observations.fetch_add(1, Ordering::Relaxed);
                let (results, durability) = self.try_apply_sqlite(writes, policy, unsynced).await?;
                Ok(Attempt {
                    results,
                    durability,
                    dead_ids: Vec::new(),
                })
            }
            Backend::Postgres => self.try_apply_postgres(writes, policy, observations).await,
        }
    }

    /// PostgreSQL: a resource found changed when the batch locks it means a concurrent batch
    /// committed after the observation; the batch is rolled back and decided again. The audit
    /// ids a rolled-back run drew will never be used, and are returned as such.
    async fn try_apply_postgres(
        &self,
        writes: &[FencedWrite],
        policy: LeasePolicy,
        observations: &AtomicU32,
    ) -> Result<Attempt, StoreError> {
        let mut runs = 0;
        let mut dead_ids = Vec::new();
        'run: loop {
            runs += 1;
            let seen = observations.fetch_add(1, Ordering::Relaxed) + 1;
            if runs > MAX_OBSERVATIONS {
                return Err(StoreError::Contention { attempts: seen });
            }
            let mut tx = begin_batch(&self.writer).await?;
            let mut results = Vec::with_capacity(writes.len());
            for segment in segments(writes) {
                let applied = self
                    .apply_segment(&mut tx, segment, policy, Opening::Within, Closing::Within)
                    .await?;
                match applied {
                    Ok((mut applied, _)) => results.append(&mut applied),
                    Err(Changed { drawn_ids }) => {
                        tx.rollback().await?;
                        dead_ids.extend(results.iter().map(|result| result.entry.id));
                        dead_ids.extend(drawn_ids);
                        continue 'run;
                    }
                }
            }
            tx.commit().await?;
            return Ok(Attempt {
                results,
                durability: None,
                dead_ids,
            });
        }
    }

    /// SQLite: the batch's first observation begins the transaction and its last application
    /// commits it (`batch_sqlite`), so the writer connection makes two round trips per batch. A
    /// stale snapshot cannot write (`SQLITE_BUSY_SNAPSHOT`): the error ends this run, and
    /// `retrying` runs the batch again.
    async fn try_apply_sqlite(
        &self,
        writes: &[FencedWrite],
        policy: LeasePolicy,
        unsynced: Option<&Arc<WalSync>>,
    ) -> Result<(Vec<WriteResult>, Option<Durability>), StoreError> {
        let segments = segments(writes);
        let Some(last) = segments.len().checked_sub(1) else {
            return Ok((Vec::new(), None));
        };
        let mut conn = self.writer.acquire().await?;
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
                .apply_segment(&mut conn, segment, policy, opening, closing)
                .await;
            match applied {
                Ok(Ok((mut applied, committed))) => {
                    results.append(&mut applied);
                    ticket = committed;
                }
                Ok(Err(Changed { .. })) => {
                    roll_back(&mut conn).await;
                    return Err(internal("a SQLite batch found a resource changed"));
                }
                Err(error) => {
                    roll_back(&mut conn).await;
                    return Err(error);
                }
            }
        }
        // Committed and back to FULL by the last statement: no check needed on release.
        self.writer_clean.store(true, Ordering::SeqCst);
        drop(conn);
        Ok((results, ticket.as_ref().map(CommitTicket::durability)))
    }

    /// Decides and applies writes of which no two share an operation (resource and
    /// idempotency key), so each can be decided on the records committed before the segment.
    /// `None` when a concurrent commit changed a resource after it was observed.
    async fn apply_segment(
        &self,
        conn: &mut AnyConnection,
        writes: &[FencedWrite],
        policy: LeasePolicy,
        opening: Opening,
        closing: Closing<'_>,
    ) -> Result<Result<(Vec<WriteResult>, Option<CommitTicket>), Changed>, StoreError> {
        let keys: BTreeSet<&str> = writes.iter().map(|w| w.key.as_str()).collect();
        let Observed {
            resources: observed,
            operations,
            unwritten_heads,
            mut audit,
        } = match self.backend {
            Backend::Postgres => batch_postgres::observe(conn, &keys, writes).await?,
            Backend::Sqlite => batch_sqlite::observe(conn, opening, &keys, writes).await?,
        };
        let leases = observe_leases(conn, self.backend, writes).await?;
        let lock_names: BTreeSet<String> = writes
            .iter()
            .filter_map(|w| w.authority.as_ref().map(|view| view.lock.lease_name()))
            .collect();
        let mut locks = authority::observe(conn, self.backend, &lock_names).await?;

        let mut working: HashMap<&str, Working> = keys
            .iter()
            .map(|key| {
                let seen = observed.get(*key);
                (
                    *key,
                    Working {
                        state: seen.map(|s| s.state).unwrap_or(ResourceState::FRESH),
                        owner: seen.and_then(|s| s.owner.clone()),
                        last_accepted: None,
                    },
                )
            })
            .collect();
        let mut decisions = Vec::with_capacity(writes.len());
        let mut entries = Vec::with_capacity(writes.len());
        let mut sightings = Vec::new();
        let mut anomalies = Vec::with_capacity(writes.len());
        for (index, write) in writes.iter().enumerate() {
            let resource = working
                .get_mut(write.key.as_str())
                .ok_or_else(|| internal("a write's resource was not observed"))?;
            let recorded = write.idempotency_key.as_ref().and_then(|key| {
                operations.get(&(write.key.as_str().to_owned(), key.as_str().to_owned()))
            });
            let mut anomaly = None;
            let lease = match &write.authority {
                Some(view) => {
                    let working = locks.entry(view.lock.lease_name()).or_default();
                    let judged = authority::judge(
                        view,
                        write.token.get(),
                        write.owner.as_ref().map(|o| o.as_str()),
                        policy.strict,
                        working,
                    );
                    anomaly = judged
                        .shared_generation
                        .then_some(Anomaly::SharedGeneration);
                    Some(LeaseObservation {
                        check: judged.check,
                        note: Some(judged.note),
                        holder: judged.holder,
                    })
                }
                None => lease_observation(write, policy, &leases),
            };
            let decision = decide(
                resource.state,
                recorded,
                WriteIntent {
                    token: write.token,
                    body_sha256: &write.body_sha256,
                    expected_revision: write.expected_revision,
                    lease: lease.as_ref().map(|observed| observed.check),
                },
            );
            let at = Utc::now().trunc_subsecs(6);
            if let Decision::Accept { revision, .. } = decision {
                resource.state = ResourceState {
                    highest_token: write.token.get(),
                    revision,
                };
                resource.owner = write.owner.as_ref().map(|o| o.as_str().to_owned());
                resource.last_accepted = Some(index);
            }
            let after = resource.state;
            if matches!(decision, Decision::Stale | Decision::Superseded) {
                sightings.push(sighting(
                    write,
                    &decision,
                    after,
                    resource.owner.clone(),
                    lease.as_ref(),
                    at,
                ));
            }
            let note = lease.and_then(|observed| observed.note);
            entries.push(audit_entry(write, &decision, after, at, note));
            decisions.push(decision);
            anomalies.push(anomaly);
        }
        if !locks.is_empty() {
            let stored = authority::store(conn, &locks).await?;
            // SQLite's application checks the rows it changed against a count taken when the
            // batch observed; these were changed since, on purpose.
            if let AuditPosition::Sqlite(position) = &mut audit {
                position.changes_before += stored;
            }
        }
        if let Some(hook) = &self.observe_hook {
            hook().await;
        }

        let StartingHeads {
            mut heads,
            unwritten: unwritten_seen,
        } = StartingHeads::new(&keys, &observed, unwritten_heads)?;
        // From here on, the heads after the batch.
        let links = link(&mut heads, &entries)?;
        // Key order: the order PostgreSQL locks them in, the same in every batch.
        let mut changes: Vec<Change<'_>> = working
            .iter()
            .map(|(key, resource)| {
                let head = heads
                    .get(*key)
                    .ok_or_else(|| internal("a resource of the batch has no chain head"))?;
                Ok(Change {
                    key,
                    observed: observed.get(*key),
                    accepted: resource.last_accepted.map(|index| Accepted {
                        state: resource.state,
                        owner: resource.owner.as_deref(),
                        write: &writes[index],
                        at: entries[index].at,
                    }),
                    head,
                })
            })
            .collect::<Result<_, StoreError>>()?;
        changes.sort_unstable_by_key(|change| change.key);
        let unwritten = UnwrittenMoves::new(
            &unwritten_seen,
            changes
                .iter()
                .filter(|change| change.observed.is_none())
                .map(|change| (change.key, change.accepted.is_some(), change.head)),
        );
        let plan = Plan {
            writes,
            decisions: &decisions,
            changes: &changes,
            entries: &entries,
            links: &links,
            unwritten: &unwritten,
            sightings: &sightings,
        };
        let (ids, ticket) = match audit {
            AuditPosition::Sqlite(audit) => {
                batch_sqlite::apply(conn, audit, &plan, closing).await?
            }
            AuditPosition::Postgres(audit) => {
                match batch_postgres::apply(conn, audit, &plan).await? {
                    Ok(ids) => (ids, None),
                    Err(drawn_ids) => return Ok(Err(Changed { drawn_ids })),
                }
            }
        };
        let results = decisions
            .into_iter()
            .zip(entries)
            .zip(ids)
            .zip(anomalies)
            .map(|(((decision, mut entry), id), anomaly)| {
                entry.id = id;
                WriteResult {
                    decision,
                    entry,
                    observations: 0,
                    batch_size: 0,
                    anomaly,
                }
            })
            .collect();
        Ok(Ok((results, ticket)))
    }
}

/// One run of a batch that committed.
struct Attempt {
    results: Vec<WriteResult>,
    durability: Option<Durability>,
    /// PostgreSQL audit ids drawn by runs that were rolled back.
    dead_ids: Vec<i64>,
}

/// A segment found something no longer as observed: nothing of it may be committed. The audit
/// ids it drew (PostgreSQL) die with its transaction.
struct Changed {
    drawn_ids: Vec<i64>,
}

/// Ends a SQLite batch that failed with its transaction perhaps still open. Best effort: should
/// this fail too, the writer's check on release closes the connection.
async fn roll_back(conn: &mut AnyConnection) {
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

/// Splits a batch where an operation repeats, so a repeat is decided on the recorded result of
/// the first (which needs the first's audit id).
fn segments(writes: &[FencedWrite]) -> Vec<&[FencedWrite]> {
    let mut segments = Vec::new();
    let mut start = 0;
    let mut seen: HashSet<(&str, &str)> = HashSet::new();
    for (index, write) in writes.iter().enumerate() {
        if let Some(operation) = write.operation() {
            if !seen.insert(operation) {
                segments.push(&writes[start..index]);
                start = index;
                seen.clear();
                seen.insert(operation);
            }
        }
    }
    segments.push(&writes[start..]);
    segments
}

/// A resource as the batch has it so far.
struct Working {
    state: ResourceState,
    /// Who wrote the highest accepted generation.
    owner: Option<String>,
    /// The last write of the batch accepted here: its value is what the resource will hold.
    last_accepted: Option<usize>,
}

/// What one resource of the batch becomes when it commits.
pub(super) struct Change<'a> {
    pub key: &'a str,
    /// As committed when the batch looked; `None` if it had no row.
    pub observed: Option<&'a ObservedResource>,
    /// The batch's last accepted write here, whose value the resource will hold; `None` if it
    /// accepted none.
    pub accepted: Option<Accepted<'a>>,
    /// Its chain's head after the batch.
    pub head: &'a (i64, String),
}

/// The state an accepted write leaves.
pub(super) struct Accepted<'a> {
    pub state: ResourceState,
    pub owner: Option<&'a str>,
    pub write: &'a FencedWrite,
    pub at: DateTime<Utc>,
}

/// What a batch reads before deciding.
pub(super) struct Observed {
    pub resources: HashMap<String, ObservedResource>,
    pub operations: HashMap<(String, String), RecordedOperation>,
    /// The `chain_heads` rows of the batch's resources (see `chain_heads`).
    pub unwritten_heads: Vec<(String, i64, String)>,
    /// Where the batch's audit rows go, read with the rest.
    pub audit: AuditPosition,
}

pub(super) enum AuditPosition {
    Sqlite(batch_sqlite::AuditPosition),
    Postgres(batch_postgres::AuditPosition),
}

pub(super) struct ObservedResource {
    pub state: ResourceState,
    pub owner: Option<String>,
    /// The head of its audit chain: position and hash.
    pub chain: (i64, String),
}

impl ObservedResource {
    pub(super) fn decode(
        highest_token: i64,
        revision: i64,
        owner: Option<String>,
        chain: (i64, String),
    ) -> Result<Self, StoreError> {
        let revision = Revision::new(revision).map_err(|e| internal(&e.0))?;
        Ok(Self {
            state: ResourceState {
                highest_token,
                revision,
            },
            owner,
            chain,
        })
    }
}

/// A row of `operations`, from its columns in table order.
pub(super) fn recorded_operation(
    token: i64,
    body_sha256: String,
    status: i64,
    revision: i64,
    highest_token: i64,
    audit_id: i64,
) -> Result<RecordedOperation, StoreError> {
    let decode = |e: crate::domain::ParseError| internal(&e.0);
    Ok(RecordedOperation {
        token: FencingToken::new(token).map_err(decode)?,
        body_sha256,
        status: u16::try_from(status).map_err(|e| internal(&e.to_string()))?,
        revision: Revision::new(revision).map_err(decode)?,
        highest_token,
        audit_id,
    })
}

/// The leases the batch names, with the authority's clock. On PostgreSQL they are share-locked
/// until the batch commits, so no new generation can be granted between check and write.
struct ObservedLeases {
    records: HashMap<String, LeaseRecord>,
    now_us: i64,
}

async fn observe_leases(
    conn: &mut AnyConnection,
    backend: Backend,
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
    let lock = match backend {
        Backend::Postgres => " ORDER BY name FOR SHARE",
        Backend::Sqlite => "",
    };
    let names = padded(names.into_iter().collect());
    let sql = format!(
        "SELECT {LEASE_COLUMNS} FROM leases WHERE name IN ({}){lock}",
        placeholders(1, names.len())
    );
    let mut query = sqlx::query(&sql);
    for name in names {
        query = query.bind(name);
    }
    let rows = query.fetch_all(&mut *conn).await?;
    let mut records = HashMap::with_capacity(rows.len());
    for row in &rows {
        let record = lease_record(row)?;
        records.insert(record.name.as_str().to_owned(), record);
    }
    let now_us = clock_us(conn, backend).await?;
    Ok(ObservedLeases { records, now_us })
}

/// What the authority knows of the lease a write names.
struct LeaseObservation {
    check: LeaseCheck,
    /// For the audit, when the grant had lapsed.
    note: Option<String>,
    /// Who holds the lease's current generation.
    holder: Option<String>,
}

fn lease_observation(
    write: &FencedWrite,
    policy: LeasePolicy,
    leases: &ObservedLeases,
) -> Option<LeaseObservation> {
    let never_issued = |in_scope| LeaseObservation {
        check: LeaseCheck {
            issued: 0,
            lapsed: false,
            in_scope,
            strict: policy.strict,
        },
        note: None,
        holder: None,
    };
    let Some(name) = &write.lease else {
        // No lease named where one is required: no generation is known to be issued.
        return policy.require_lease.then(|| never_issued(true));
    };
    let in_scope = policy.scope.allows(name, &write.key);
    let Some(record) = leases.records.get(name.as_str()) else {
        return Some(never_issued(in_scope));
    };
    let lapsed = record.lapsed(leases.now_us);
    let note = (lapsed && record.token == write.token).then(|| {
        let how = if record.released {
            "was released"
        } else {
            "had expired"
        };
        let at = DateTime::from_timestamp_micros(record.expires_at_us)
            .map(|t| crate::domain::audit::format_rfc3339_micros(&t))
            .unwrap_or_default();
        format!(
            "lease {} generation {} {how} at {at} (held by {})",
            name.as_str(),
            record.token,
            record.holder.as_str()
        )
    });
    Some(LeaseObservation {
        check: LeaseCheck {
            issued: record.token.get(),
            lapsed,
            in_scope,
            strict: policy.strict,
        },
        note,
        holder: Some(record.holder.as_str().to_owned()),
    })
}

/// An overlap a stale or superseded write shows, recorded once the batch is applied.
pub(super) struct Sighting {
    pub resource: String,
    pub stale_token: i64,
    pub superseding_token: i64,
    pub stale_owner: Option<String>,
    pub superseding_owner: Option<String>,
    pub at_us: i64,
}

fn sighting(
    write: &FencedWrite,
    decision: &Decision,
    state: ResourceState,
    resource_owner: Option<String>,
    lease: Option<&LeaseObservation>,
    at: DateTime<Utc>,
) -> Sighting {
    // A superseded write may not have met its successor here yet: the lease knows it.
    let issued = lease.map(|observed| observed.check.issued).unwrap_or(0);
    let (superseding_token, superseding_owner) =
        if matches!(decision, Decision::Superseded) && issued > state.highest_token {
            (issued, lease.and_then(|observed| observed.holder.clone()))
        } else {
            (state.highest_token, resource_owner)
        };
    Sighting {
        resource: write.key.as_str().to_owned(),
        stale_token: write.token.get(),
        superseding_token,
        stale_owner: write.owner.as_ref().map(|o| o.as_str().to_owned()),
        superseding_owner,
        at_us: at.timestamp_micros(),
    }
}

/// Appends the entries to their resources' hash chains and the audit, in order, and returns
/// their ids. The chain heads are locked (in resource order) until the transaction ends, so
/// concurrent appends to one resource take turns and a chain never forks.
pub(super) async fn append_audit(
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
                .ok_or_else(|| internal("an inserted audit row was not returned"))
        })
        .collect::<Result<Vec<_>, _>>()?;

    heads.store(conn).await?;
    Ok(ids)
}

/// An audit row's place in its resource's hash chain.
pub(super) struct Link {
    pub seq: i64,
    pub prev_hash: String,
    pub hash: String,
}

/// The last seq and hash of each resource's chain.
pub(super) type ChainHeads = HashMap<String, (i64, String)>;

/// Links `entries`, in order, onto their resources' chains, advancing `heads` past them.
pub(super) fn link(
    heads: &mut ChainHeads,
    entries: &[AuditEntry],
) -> Result<Vec<Link>, StoreError> {
    entries
        .iter()
        .map(|entry| {
            let head = heads
                .get_mut(&entry.resource)
                .ok_or_else(|| internal("an audited resource has no chain head"))?;
            let seq = head.0 + 1;
            let hash = chain::row_hash(entry, seq, &head.1);
            let prev_hash = std::mem::replace(&mut head.1, hash.clone());
            head.0 = seq;
            Ok(Link {
                seq,
                prev_hash,
                hash,
            })
        })
        .collect()
}

/// Splits `items` into runs whose lengths are powers of two, largest first. A statement's text
/// depends on how many rows it carries; with these lengths there are only a few texts, which stay
/// prepared, instead of a new one (prepared anew, a third of a millisecond for an audit insert)
/// for every batch size.
pub(super) fn power_of_two_chunks<T>(items: &[T]) -> Vec<&[T]> {
    let mut chunks = Vec::new();
    let mut rest = items;
    while !rest.is_empty() {
        let size = 1 << rest.len().ilog2();
        let (chunk, tail) = rest.split_at(size);
        chunks.push(chunk);
        rest = tail;
    }
    chunks
}

/// Pads a list for `IN (…)` to a power of two by repeating its last item, which changes nothing
/// a membership test answers, so that few statement texts exist (see `power_of_two_chunks`).
pub(super) fn padded<T: Copy>(mut items: Vec<T>) -> Vec<T> {
    if let Some(&last) = items.last() {
        items.resize(items.len().next_power_of_two(), last);
    }
    items
}

/// `$first, $first+1, …` for `count` parameters.
pub(super) fn placeholders(first: usize, count: usize) -> String {
    let mut sql = String::with_capacity(count * 5);
    for index in 0..count {
        if index > 0 {
            sql.push_str(", ");
        }
        let _ = write!(sql, "${}", first + index);
    }
    sql
}

/// `($1, …, $width), ($width+1, …), …` for `rows` rows.
pub(super) fn placeholder_rows(width: usize, rows: usize) -> String {
    let mut sql = String::with_capacity(rows * width * 5);
    for row in 0..rows {
        if row > 0 {
            sql.push_str(", ");
        }
        sql.push('(');
        sql.push_str(&placeholders(row * width + 1, width));
        sql.push(')');
    }
    sql
}

pub(super) fn internal(message: &str) -> StoreError {
    StoreError::Internal(sqlx::Error::Decode(message.to_owned().into()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::{FencingToken, IdempotencyKey, ResourceKey};

    fn write(key: &str, idempotency_key: Option<&str>) -> FencedWrite {
        FencedWrite {
            key: ResourceKey::parse(key).unwrap(),
            token: FencingToken::new(1).unwrap(),
            idempotency_key: idempotency_key.map(|k| IdempotencyKey::parse_header(k).unwrap()),
            expected_revision: None,
            owner: None,
            lease: None,
            body: "x".into(),
            body_sha256: "x".into(),
            content_type: None,
            caller: None,
            authority: None,
        }
    }

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
            .fetch_one(&store.writer)
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
        .execute(&store.writer)
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
            .fetch_one(&store.writer)
            .await
            .unwrap();
        assert_eq!(level, 2, "FULL");
        store.close().await;
    }

    #[test]
    fn a_repeated_operation_starts_a_new_segment() {
        let writes = [
            write("a", Some("op-1")),
            write("b", Some("op-1")),
            write("a", None),
            write("a", Some("op-1")),
            write("a", Some("op-2")),
        ];
        let lengths: Vec<usize> = segments(&writes).iter().map(|s| s.len()).collect();
        assert_eq!(lengths, vec![3, 2]);
    }

    #[test]
    fn a_batch_without_repeats_is_one_segment() {
        let writes = [write("a", None), write("a", None), write("b", Some("k"))];
        assert_eq!(segments(&writes).len(), 1);
    }

    #[test]
    fn statements_take_few_shapes() {
        let items: Vec<u32> = (0..22).collect();
        let lengths: Vec<usize> = power_of_two_chunks(&items)
            .iter()
            .map(|c| c.len())
            .collect();
        assert_eq!(lengths, vec![16, 4, 2]);
        assert_eq!(power_of_two_chunks(&items).concat(), items);
        assert!(power_of_two_chunks::<u32>(&[]).is_empty());
        assert_eq!(padded(vec![1, 2, 3]), vec![1, 2, 3, 3]);
        assert_eq!(padded(vec![1, 2, 3, 4]), vec![1, 2, 3, 4]);
        assert!(padded(Vec::<u8>::new()).is_empty());
    }

    #[test]
    fn placeholders_number_rows_consecutively() {
        assert_eq!(placeholder_rows(2, 2), "($1, $2), ($3, $4)");
    }
}
