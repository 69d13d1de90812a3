//! Group commit's store half: fenced writes decided one after another, in order, and applied
//! together in one transaction with one durable commit.
//!
//! Every statement is about the whole batch (one read of the resources, one of the operation
//! records, one of the leases, one conditional update, one audit insert…), so a batch costs
//! about as much as a single write did, and the commit's fsync is shared by all of it.
//!
//! Decisions are exactly those of one-at-a-time: each write is decided on the state its
//! predecessors in the batch left, kept in memory per resource. Before anything changes, the
//! rows that will change are checked against what was observed: on PostgreSQL they are locked
//! (in key order, so concurrent batches cannot deadlock on them) and compared; the update is a
//! compare-and-set on the observed revision as well. Any difference means a concurrent commit
//! came between, and the whole batch is rolled back and decided again. On SQLite a transaction
//! whose read snapshot went stale cannot write at all (`SQLITE_BUSY_SNAPSHOT`) and runs again.

use super::leases::{lease_record, LEASE_COLUMNS};
use super::overlaps::{record_sighting, OverlapSighting};
use super::tx::{begin_audited, clock_us, retrying};
use super::writes::{audit_entry, created_or_updated, FencedWrite, LeasePolicy, WriteResult};
use super::{Backend, Store, StoreError};
use crate::domain::chain;
use crate::domain::{
    decide, AuditEntry, Decision, FencingToken, LeaseCheck, LeaseRecord, RecordedOperation,
    ResourceState, Revision, WriteIntent,
};
use chrono::{DateTime, Utc};
use sqlx::any::AnyArguments;
use sqlx::query::Query;
use sqlx::{Any, Row, Transaction};
use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};
use std::fmt::Write as _;
use std::sync::atomic::{AtomicU32, Ordering};

/// The most writes one transaction takes. Bounds every multi-row statement well under SQLite's
/// 32,766 bound parameters (an audit row binds 17).
pub const MAX_BATCH: usize = 256;

/// Decisions of a batch made before giving up on a resource that concurrent commits keep
/// changing between observation and update.
const MAX_OBSERVATIONS: u32 = 64;

impl Store {
    /// Decides `writes` in order against the committed state (and, where a write names a lease,
    /// the authority's) and applies every decision with its audit row in one transaction.
    /// Rejections are results, not errors; an error is the database's and fails the batch.
    pub async fn apply_batch(
        &self,
        writes: &[FencedWrite],
        policy: LeasePolicy,
    ) -> Result<Vec<WriteResult>, StoreError> {
        let mut results = Vec::with_capacity(writes.len());
        for chunk in writes.chunks(MAX_BATCH) {
            let observations = AtomicU32::new(0);
            let mut done = retrying(|| self.try_apply_batch(chunk, policy, &observations)).await?;
            let observations = observations.load(Ordering::Relaxed);
            for result in &mut done {
                result.observations = observations;
                result.batch_size = chunk.len();
            }
            results.append(&mut done);
        }
        Ok(results)
    }

    async fn try_apply_batch(
        &self,
        writes: &[FencedWrite],
        policy: LeasePolicy,
        observations: &AtomicU32,
    ) -> Result<Vec<WriteResult>, StoreError> {
        let mut runs = 0;
        'run: loop {
            runs += 1;
            let seen = observations.fetch_add(1, Ordering::Relaxed) + 1;
            if runs > MAX_OBSERVATIONS {
                return Err(StoreError::Contention { attempts: seen });
            }
            let mut tx = begin_audited(&self.writer, self.backend).await?;
            let mut results = Vec::with_capacity(writes.len());
            for segment in segments(writes) {
                match self.apply_segment(&mut tx, segment, policy).await? {
                    Some(mut applied) => results.append(&mut applied),
                    None => {
                        tx.rollback().await?;
                        continue 'run;
                    }
                }
            }
            tx.commit().await?;
            return Ok(results);
        }
    }

    /// Decides and applies writes of which no two share an operation (resource and
    /// idempotency key), so each can be decided on the records committed before the segment.
    /// `None` when a concurrent commit changed a resource after it was observed.
    async fn apply_segment(
        &self,
        tx: &mut Transaction<'_, Any>,
        writes: &[FencedWrite],
        policy: LeasePolicy,
    ) -> Result<Option<Vec<WriteResult>>, StoreError> {
        let keys: BTreeSet<&str> = writes.iter().map(|w| w.key.as_str()).collect();
        let observed = observe_resources(tx, &keys).await?;
        let operations = observe_operations(tx, writes).await?;
        let leases = observe_leases(tx, self.backend, writes).await?;

        let mut working: HashMap<&str, Working> = keys
            .iter()
            .map(|key| {
                let seen = observed.get(*key);
                (
                    *key,
                    Working {
                        observed: seen.map(|s| s.state),
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
        for (index, write) in writes.iter().enumerate() {
            let resource = working
                .get_mut(write.key.as_str())
                .ok_or_else(|| internal("a write's resource was not observed"))?;
            let recorded = write.idempotency_key.as_ref().and_then(|key| {
                operations.get(&(write.key.as_str().to_owned(), key.as_str().to_owned()))
            });
            let lease = lease_observation(write, policy, &leases);
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
            let at = Utc::now();
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
        }
        if let Some(hook) = &self.observe_hook {
            hook().await;
        }

        let mut changes: Vec<Change<'_>> = working
            .iter()
            .filter_map(|(key, resource)| {
                resource.last_accepted.map(|index| Change {
                    key,
                    observed: resource.observed,
                    state: resource.state,
                    owner: resource.owner.as_deref(),
                    write: &writes[index],
                    at: entries[index].at,
                })
            })
            .collect();
        // Key order: the order PostgreSQL locks them in, the same in every batch.
        changes.sort_unstable_by_key(|change| change.key);
        if self.backend == Backend::Postgres && !still_as_observed(tx, &changes).await? {
            return Ok(None);
        }
        if !apply_changes(tx, self.backend, &changes).await? {
            return Ok(None);
        }

        let ids = append_audit(tx, self.backend, &keys, &entries).await?;
        record_operations(tx, writes, &decisions, &entries, &ids).await?;
        for sighting in &sightings {
            record_sighting(tx, &sighting.borrowed()).await?;
        }

        Ok(Some(
            decisions
                .into_iter()
                .zip(entries)
                .zip(ids)
                .map(|((decision, mut entry), id)| {
                    entry.id = id;
                    WriteResult {
                        decision,
                        entry,
                        observations: 0,
                        batch_size: 0,
                    }
                })
                .collect(),
        ))
    }
}

/// Splits a batch where an operation repeats, so a repeat is decided on the recorded result of
/// the first (which needs the first's audit id).
fn segments(writes: &[FencedWrite]) -> Vec<&[FencedWrite]> {
    let mut segments = Vec::new();
    let mut start = 0;
    let mut seen: HashSet<(&str, &str)> = HashSet::new();
    for (index, write) in writes.iter().enumerate() {
        if let Some(key) = &write.idempotency_key {
            if !seen.insert((write.key.as_str(), key.as_str())) {
                segments.push(&writes[start..index]);
                start = index;
                seen.clear();
                seen.insert((write.key.as_str(), key.as_str()));
            }
        }
    }
    segments.push(&writes[start..]);
    segments
}

/// A resource as the batch has it so far.
struct Working {
    /// As committed when the batch looked; `None` if it had never been written.
    observed: Option<ResourceState>,
    state: ResourceState,
    /// Who wrote the highest accepted generation.
    owner: Option<String>,
    /// The last write of the batch accepted here: its value is what the resource will hold.
    last_accepted: Option<usize>,
}

/// What one resource becomes when the batch commits.
struct Change<'a> {
    key: &'a str,
    observed: Option<ResourceState>,
    state: ResourceState,
    owner: Option<&'a str>,
    write: &'a FencedWrite,
    at: DateTime<Utc>,
}

struct ObservedResource {
    state: ResourceState,
    owner: Option<String>,
}

async fn observe_resources(
    tx: &mut Transaction<'_, Any>,
    keys: &BTreeSet<&str>,
) -> Result<HashMap<String, ObservedResource>, StoreError> {
    let keys = padded(keys.iter().copied().collect());
    let sql = format!(
        "SELECT key, highest_token, revision, highest_owner FROM resources WHERE key IN ({})",
        placeholders(1, keys.len())
    );
    let mut query = sqlx::query(&sql);
    for key in keys {
        query = query.bind(key);
    }
    let rows = query.fetch_all(&mut **tx).await?;
    rows.iter()
        .map(|row| {
            let revision = Revision::new(row.try_get("revision")?).map_err(|e| internal(&e.0))?;
            Ok((
                row.try_get::<String, _>("key")?,
                ObservedResource {
                    state: ResourceState {
                        highest_token: row.try_get("highest_token")?,
                        revision,
                    },
                    owner: row.try_get("highest_owner")?,
                },
            ))
        })
        .collect()
}

/// The recorded operations the batch's idempotency keys name, by (resource, key).
async fn observe_operations(
    tx: &mut Transaction<'_, Any>,
    writes: &[FencedWrite],
) -> Result<HashMap<(String, String), RecordedOperation>, StoreError> {
    let named: Vec<(&str, &str)> = writes
        .iter()
        .filter_map(|w| {
            w.idempotency_key
                .as_ref()
                .map(|k| (w.key.as_str(), k.as_str()))
        })
        .collect();
    if named.is_empty() {
        return Ok(HashMap::new());
    }
    let named = padded(named);
    let mut sql = String::from(
        "SELECT resource, idempotency_key, token, body_sha256, status, revision, highest_token, \
         audit_id FROM operations WHERE ",
    );
    for index in 0..named.len() {
        if index > 0 {
            sql.push_str(" OR ");
        }
        let _ = write!(
            sql,
            "(resource = ${} AND idempotency_key = ${})",
            2 * index + 1,
            2 * index + 2
        );
    }
    let mut query = sqlx::query(&sql);
    for (resource, key) in &named {
        query = query.bind(*resource).bind(*key);
    }
    let rows = query.fetch_all(&mut **tx).await?;
    let decode = |e: crate::domain::ParseError| internal(&e.0);
    rows.iter()
        .map(|row| {
            Ok((
                (row.try_get("resource")?, row.try_get("idempotency_key")?),
                RecordedOperation {
                    token: FencingToken::new(row.try_get("token")?).map_err(decode)?,
                    body_sha256: row.try_get("body_sha256")?,
                    status: u16::try_from(row.try_get::<i64, _>("status")?)
                        .map_err(|e| internal(&e.to_string()))?,
                    revision: Revision::new(row.try_get("revision")?).map_err(decode)?,
                    highest_token: row.try_get("highest_token")?,
                    audit_id: row.try_get("audit_id")?,
                },
            ))
        })
        .collect()
}

/// The leases the batch names, with the authority's clock. On PostgreSQL they are share-locked
/// until the batch commits, so no new generation can be granted between check and write.
struct ObservedLeases {
    records: HashMap<String, LeaseRecord>,
    now_us: i64,
}

async fn observe_leases(
    tx: &mut Transaction<'_, Any>,
    backend: Backend,
    writes: &[FencedWrite],
) -> Result<ObservedLeases, StoreError> {
    let names: BTreeSet<&str> = writes
        .iter()
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
    let rows = query.fetch_all(&mut **tx).await?;
    let mut records = HashMap::with_capacity(rows.len());
    for row in &rows {
        let record = lease_record(row)?;
        records.insert(record.name.as_str().to_owned(), record);
    }
    let now_us = clock_us(tx, backend).await?;
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
struct Sighting {
    resource: String,
    stale_token: i64,
    superseding_token: i64,
    stale_owner: Option<String>,
    superseding_owner: Option<String>,
    at_us: i64,
}

impl Sighting {
    fn borrowed(&self) -> OverlapSighting<'_> {
        OverlapSighting {
            resource: &self.resource,
            stale_token: self.stale_token,
            superseding_token: self.superseding_token,
            stale_owner: self.stale_owner.as_deref(),
            superseding_owner: self.superseding_owner.as_deref(),
            at_us: self.at_us,
        }
    }
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

/// PostgreSQL: locks the rows the batch will change, in key order, and answers whether they are
/// still as observed (rows observed missing must still be missing).
async fn still_as_observed(
    tx: &mut Transaction<'_, Any>,
    changes: &[Change<'_>],
) -> Result<bool, StoreError> {
    if changes.is_empty() {
        return Ok(true);
    }
    let keys = padded(changes.iter().map(|change| change.key).collect());
    let sql = format!(
        "SELECT key, revision FROM resources WHERE key IN ({}) ORDER BY key FOR UPDATE",
        placeholders(1, keys.len())
    );
    let mut query = sqlx::query(&sql);
    for key in keys {
        query = query.bind(key);
    }
    let rows = query.fetch_all(&mut **tx).await?;
    let mut committed: HashMap<String, i64> = HashMap::with_capacity(rows.len());
    for row in &rows {
        committed.insert(row.try_get("key")?, row.try_get("revision")?);
    }
    Ok(changes.iter().all(|change| {
        committed.get(change.key).copied() == change.observed.map(|s| s.revision.get())
    }))
}

/// Applies the batch's final state of each changed resource: a compare-and-set on the observed
/// revision for existing rows, an insert for new ones. Answers whether every row was as
/// observed.
async fn apply_changes(
    tx: &mut Transaction<'_, Any>,
    backend: Backend,
    changes: &[Change<'_>],
) -> Result<bool, StoreError> {
    let blob = match backend {
        Backend::Postgres => "BYTEA",
        Backend::Sqlite => "BLOB",
    };
    let (updates, inserts): (Vec<&Change<'_>>, Vec<&Change<'_>>) =
        changes.iter().partition(|change| change.observed.is_some());
    if !updates.is_empty() {
        let types = [
            "TEXT", "BIGINT", "BIGINT", blob, "TEXT", "BIGINT", "TEXT", "BIGINT",
        ];
        for chunk in power_of_two_chunks(&updates) {
            let sql = format!(
                "UPDATE resources SET highest_token = v.column2, revision = v.column3, \
                 value = v.column4, content_type = v.column5, updated_at_us = v.column6, \
                 highest_owner = v.column7 FROM (VALUES {}) AS v \
                 WHERE resources.key = v.column1 AND resources.revision = v.column8 \
                 AND resources.highest_token <= v.column2",
                typed_rows(&types, chunk.len())
            );
            let mut query = sqlx::query(&sql);
            for change in chunk {
                let observed = change.observed.map(|s| s.revision.get()).unwrap_or(0);
                query = bind_state(query, change).bind(observed);
            }
            let done = query.execute(&mut **tx).await?;
            if done.rows_affected() != chunk.len() as u64 {
                return Ok(false);
            }
        }
    }
    if !inserts.is_empty() {
        for chunk in power_of_two_chunks(&inserts) {
            let sql = format!(
                "INSERT INTO resources (key, highest_token, revision, value, content_type, \
                 updated_at_us, highest_owner) VALUES {} ON CONFLICT (key) DO NOTHING",
                placeholder_rows(7, chunk.len())
            );
            let mut query = sqlx::query(&sql);
            for change in chunk {
                query = bind_state(query, change);
            }
            let done = query.execute(&mut **tx).await?;
            if done.rows_affected() != chunk.len() as u64 {
                return Ok(false);
            }
        }
    }
    Ok(true)
}

fn bind_state<'q>(
    query: Query<'q, Any, AnyArguments<'q>>,
    change: &Change<'q>,
) -> Query<'q, Any, AnyArguments<'q>> {
    query
        .bind(change.key)
        .bind(change.state.highest_token)
        .bind(change.state.revision.get())
        .bind(&change.write.body[..])
        .bind(change.write.content_type.as_deref())
        .bind(change.at.timestamp_micros())
        .bind(change.owner)
}

/// Appends the entries to their resources' hash chains and the audit, in order, and returns
/// their ids. The chain heads are locked (in resource order) until the transaction ends, so
/// concurrent appends to one resource take turns and a chain never forks.
pub(super) async fn append_audit(
    tx: &mut Transaction<'_, Any>,
    backend: Backend,
    resources: &BTreeSet<&str>,
    entries: &[AuditEntry],
) -> Result<Vec<i64>, StoreError> {
    let mut heads = chain_heads(tx, backend, resources).await?;

    let mut links = Vec::with_capacity(entries.len());
    for entry in entries.iter() {
        let head = heads
            .get_mut(&entry.resource)
            .ok_or_else(|| internal("an audited resource has no chain head"))?;
        let seq = head.0 + 1;
        let hash = chain::row_hash(entry, seq, &head.1);
        links.push((seq, std::mem::replace(&mut head.1, hash.clone()), hash));
        head.0 = seq;
    }

    let rows: Vec<(&AuditEntry, &(i64, String, String))> = entries.iter().zip(&links).collect();
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
        for (entry, (seq, prev_hash, hash)) in chunk {
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
        for row in query.fetch_all(&mut **tx).await? {
            ids.insert(
                (row.try_get("resource")?, row.try_get("seq")?),
                row.try_get("id")?,
            );
        }
    }
    let ids = entries
        .iter()
        .zip(&links)
        .map(|(entry, (seq, _, _))| {
            ids.get(&(entry.resource.clone(), *seq))
                .copied()
                .ok_or_else(|| internal("an inserted audit row was not returned"))
        })
        .collect::<Result<Vec<_>, _>>()?;

    let ordered: Vec<(&String, &(i64, String))> = heads
        .iter()
        .collect::<BTreeMap<_, _>>()
        .into_iter()
        .collect();
    for chunk in power_of_two_chunks(&ordered) {
        let sql = format!(
            "INSERT INTO audit_chains (resource, seq, hash) VALUES {} \
             ON CONFLICT (resource) DO UPDATE SET seq = excluded.seq, hash = excluded.hash",
            placeholder_rows(3, chunk.len())
        );
        let mut query = sqlx::query(&sql);
        for (resource, (seq, hash)) in chunk {
            query = query.bind(resource.as_str()).bind(*seq).bind(hash.as_str());
        }
        query.execute(&mut **tx).await?;
    }
    Ok(ids)
}

/// The head (last seq and hash) of each resource's chain, the genesis where there is none yet.
/// On PostgreSQL the heads are created if missing and locked, in resource order, until the
/// transaction ends, so concurrent appends to one resource take turns and a chain never forks.
/// SQLite's transaction already holds the only write lock, so it only reads them (an upsert
/// would rewrite each head's index entry for nothing).
async fn chain_heads(
    tx: &mut Transaction<'_, Any>,
    backend: Backend,
    resources: &BTreeSet<&str>,
) -> Result<HashMap<String, (i64, String)>, StoreError> {
    let resources: Vec<&str> = resources.iter().copied().collect();
    let mut heads: HashMap<String, (i64, String)> = HashMap::with_capacity(resources.len());
    match backend {
        Backend::Postgres => {
            for chunk in power_of_two_chunks(&resources) {
                let sql = format!(
                    "INSERT INTO audit_chains (resource, seq, hash) VALUES {} \
                     ON CONFLICT (resource) DO UPDATE SET resource = excluded.resource \
                     RETURNING resource, seq, hash",
                    placeholder_rows(3, chunk.len())
                );
                let mut query = sqlx::query(&sql);
                for resource in chunk {
                    query = query.bind(*resource).bind(0_i64).bind(chain::GENESIS);
                }
                for row in query.fetch_all(&mut **tx).await? {
                    heads.insert(
                        row.try_get("resource")?,
                        (row.try_get("seq")?, row.try_get("hash")?),
                    );
                }
            }
        }
        Backend::Sqlite => {
            let keys = padded(resources.clone());
            let sql = format!(
                "SELECT resource, seq, hash FROM audit_chains WHERE resource IN ({})",
                placeholders(1, keys.len())
            );
            let mut query = sqlx::query(&sql);
            for key in keys {
                query = query.bind(key);
            }
            for row in query.fetch_all(&mut **tx).await? {
                heads.insert(
                    row.try_get("resource")?,
                    (row.try_get("seq")?, row.try_get("hash")?),
                );
            }
            for resource in resources {
                heads
                    .entry(resource.to_owned())
                    .or_insert_with(|| (0, chain::GENESIS.to_owned()));
            }
        }
    }
    Ok(heads)
}

/// Records the result of every accepted write that carries an idempotency key.
async fn record_operations(
    tx: &mut Transaction<'_, Any>,
    writes: &[FencedWrite],
    decisions: &[Decision],
    entries: &[AuditEntry],
    ids: &[i64],
) -> Result<(), StoreError> {
    let accepted: Vec<(&FencedWrite, &str, Revision, i64, i64)> = writes
        .iter()
        .zip(decisions.iter().zip(entries))
        .zip(ids)
        .filter_map(|((write, (decision, entry)), id)| match decision {
            Decision::Accept { revision, .. } => write.idempotency_key.as_ref().map(|key| {
                (
                    write,
                    key.as_str(),
                    *revision,
                    *id,
                    entry.at.timestamp_micros(),
                )
            }),
            _ => None,
        })
        .collect();
    if accepted.is_empty() {
        return Ok(());
    }
    for chunk in power_of_two_chunks(&accepted) {
        let sql = format!(
            "INSERT INTO operations (resource, idempotency_key, token, body_sha256, status, \
             revision, highest_token, audit_id, recorded_at_us) VALUES {}",
            placeholder_rows(9, chunk.len())
        );
        let mut query = sqlx::query(&sql);
        for (write, key, revision, audit_id, at_us) in chunk {
            query = query
                .bind(write.key.as_str())
                .bind(*key)
                .bind(write.token.get())
                .bind(write.body_sha256.as_str())
                .bind(i64::from(created_or_updated(*revision)))
                .bind(revision.get())
                .bind(write.token.get())
                .bind(*audit_id)
                .bind(*at_us);
        }
        query.execute(&mut **tx).await?;
    }
    Ok(())
}

/// Splits `items` into runs whose lengths are powers of two, largest first. A statement's text
/// depends on how many rows it carries; with these lengths there are only a few texts, which stay
/// prepared, instead of a new one (prepared anew, a third of a millisecond for an audit insert)
/// for every batch size.
fn power_of_two_chunks<T>(items: &[T]) -> Vec<&[T]> {
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
fn padded<T: Copy>(mut items: Vec<T>) -> Vec<T> {
    if let Some(&last) = items.last() {
        items.resize(items.len().next_power_of_two(), last);
    }
    items
}

/// `$first, $first+1, …` for `count` parameters.
fn placeholders(first: usize, count: usize) -> String {
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
fn placeholder_rows(width: usize, rows: usize) -> String {
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

/// Like `placeholder_rows`, each parameter cast to its column's type: in a `VALUES` list
/// PostgreSQL cannot infer parameter types from the columns they are compared with.
fn typed_rows(types: &[&str], rows: usize) -> String {
    let width = types.len();
    let mut sql = String::with_capacity(rows * width * 24);
    for row in 0..rows {
        if row > 0 {
            sql.push_str(", ");
        }
        sql.push('(');
        for (column, ty) in types.iter().enumerate() {
            if column > 0 {
                sql.push_str(", ");
            }
            let _ = write!(sql, "CAST(${} AS {ty})", row * width + column + 1);
        }
        sql.push(')');
    }
    sql
}

fn internal(message: &str) -> StoreError {
    StoreError::Internal(sqlx::Error::Decode(message.to_owned().into()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::{IdempotencyKey, ResourceKey};

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
        }
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
        assert_eq!(
            typed_rows(&["TEXT", "BIGINT"], 2),
            "(CAST($1 AS TEXT), CAST($2 AS BIGINT)), (CAST($3 AS TEXT), CAST($4 AS BIGINT))"
        );
    }
}
