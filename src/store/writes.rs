//! The fenced write: observe, decide, apply and audit in one transaction.
//!
//! The apply step is a compare-and-set on the revision that was observed
//! (`update … where key = $k and revision = $observed and highest_token <= $token`), so a
//! writer that observed a state which a concurrent transaction has since changed affects zero
//! rows and decides again on what is now committed. On PostgreSQL (read committed) the update
//! waits for a concurrent writer of the row and re-checks its condition against the committed
//! row; on SQLite a transaction whose read snapshot went stale cannot write at all (it gets
//! `SQLITE_BUSY_SNAPSHOT`) and runs again from the start. Either way, no decision is ever
//! applied to a state other than the one it was made on.

use super::leases::read_lease;
use super::overlaps;
use super::tx::{begin_audited, clock_us, retrying};
use super::{Backend, Store, StoreError};
use crate::domain::chain;
use crate::domain::{
    decide, AuditEntry, Decision, FencingToken, IdempotencyKey, LeaseCheck, LeaseName, LeaseScope,
    Outcome, OwnerLabel, RecordedOperation, ResourceKey, ResourceState, Revision, WriteIntent,
};
use bytes::Bytes;
use chrono::{DateTime, Utc};
use sqlx::{Any, Row, Transaction};
use std::sync::atomic::{AtomicU32, Ordering};

/// A well-formed write, ready to be decided.
#[derive(Debug, Clone)]
pub struct FencedWrite {
    pub key: ResourceKey,
    pub token: FencingToken,
    pub idempotency_key: Option<IdempotencyKey>,
    pub expected_revision: Option<Revision>,
    pub owner: Option<OwnerLabel>,
    pub lease: Option<LeaseName>,
    pub body: Bytes,
    pub body_sha256: String,
    pub content_type: Option<String>,
    /// The authenticated caller, when API keys are configured.
    pub caller: Option<String>,
}

/// How writes that name a lease are judged (`serve --lease-scope`, `--strict-leases`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct LeasePolicy {
    pub scope: LeaseScope,
    /// Refuse the current generation once its grant has lapsed, instead of flagging it.
    pub strict: bool,
    /// Every write must name a lease: a token must come from this daemon's authority, so no
    /// caller can fence a resource with a generation it made up.
    pub require_lease: bool,
}

/// An attempt refused before any decision (malformed or not allowed), recorded with whatever
/// of it could be read.
#[derive(Debug, Clone)]
pub struct RefusedAttempt {
    pub key: ResourceKey,
    pub outcome: Outcome,
    pub token: Option<i64>,
    pub idempotency_key: Option<String>,
    pub expected_revision: Option<i64>,
    pub owner: Option<String>,
    pub lease: Option<String>,
    pub body_sha256: Option<String>,
    pub body_len: Option<i64>,
    pub detail: String,
    pub caller: Option<String>,
}

#[derive(Debug, Clone)]
pub struct WriteResult {
    pub decision: Decision,
    /// The audit row of this attempt, as committed.
    pub entry: AuditEntry,
    /// How many times the write observed the resource: more than one means a concurrent
    /// commit made an earlier observation stale and the write was decided again.
    pub observations: u32,
}

/// Compare-and-set attempts inside one transaction before giving up.
const MAX_OBSERVATIONS: u32 = 64;

impl Store {
    /// Decides `write` against the resource's committed state (and, when it names a lease, the
    /// authority's) and applies the decision with its audit row, atomically. Rejections are
    /// results, not errors; errors are the database's.
    pub async fn apply_write(
        &self,
        write: &FencedWrite,
        policy: LeasePolicy,
    ) -> Result<WriteResult, StoreError> {
        let observations = AtomicU32::new(0);
        retrying(|| self.try_apply_write(write, policy, &observations)).await
    }

    async fn try_apply_write(
        &self,
        write: &FencedWrite,
        policy: LeasePolicy,
        observations: &AtomicU32,
    ) -> Result<WriteResult, StoreError> {
        let mut tx = begin_audited(&self.writer, self.backend).await?;
        let mut this_run = 0;
        loop {
            this_run += 1;
            let seen = observations.fetch_add(1, Ordering::Relaxed) + 1;
            if this_run > MAX_OBSERVATIONS {
                return Err(StoreError::Contention { attempts: seen });
            }
            let state = observe_resource(&mut tx, &write.key).await?;
            let recorded = match &write.idempotency_key {
                Some(key) => observe_operation(&mut tx, &write.key, key).await?,
                None => None,
            };
            let lease = match &write.lease {
                Some(name) => {
                    Some(observe_lease(&mut tx, self.backend, name, write, policy).await?)
                }
                // No lease named where one is required: no generation is known to be issued.
                None if policy.require_lease => Some(LeaseObservation {
                    check: LeaseCheck {
                        issued: 0,
                        lapsed: false,
                        in_scope: true,
                        strict: policy.strict,
                    },
                    note: None,
                    holder: None,
                }),
                None => None,
            };
            let decision = decide(
                state.unwrap_or(ResourceState::FRESH),
                recorded.as_ref(),
                WriteIntent {
                    token: write.token,
                    body_sha256: &write.body_sha256,
                    expected_revision: write.expected_revision,
                    lease: lease.as_ref().map(|observed| observed.check),
                },
            );
            if let Some(hook) = &self.observe_hook {
                hook().await;
            }
            let at = Utc::now();
            let after = match &decision {
                Decision::Accept { revision, .. } => {
                    if !compare_and_set(&mut tx, write, state, *revision, at).await? {
                        // A concurrent commit changed the row since we looked: decide again.
                        continue;
                    }
                    ResourceState {
                        highest_token: write.token.get(),
                        revision: *revision,
                    }
                }
                _ => state.unwrap_or(ResourceState::FRESH),
            };
            if matches!(decision, Decision::Stale | Decision::Superseded) {
                record_overlap(&mut tx, write, &decision, after, lease.as_ref(), at).await?;
            }
            let lease_note = lease.and_then(|observed| observed.note);
            let entry = insert_audit(&mut tx, write, &decision, after, at, lease_note).await?;
            if let (Decision::Accept { revision, .. }, Some(key)) =
                (&decision, &write.idempotency_key)
            {
                record_operation(&mut tx, write, key, *revision, entry.id, at).await?;
            }
            tx.commit().await?;
            return Ok(WriteResult {
                decision,
                entry,
                observations: observations.load(Ordering::Relaxed),
            });
        }
    }

    /// Records an attempt that was refused before the fence was consulted.
    pub async fn record_refused(&self, attempt: &RefusedAttempt) -> Result<AuditEntry, StoreError> {
        retrying(|| async {
            let mut tx = begin_audited(&self.writer, self.backend).await?;
            let state = observe_resource(&mut tx, &attempt.key)
                .await?
                .unwrap_or(ResourceState::FRESH);
            let entry = AuditEntry {
                id: 0,
                at: Utc::now(),
                resource: attempt.key.as_str().to_owned(),
                outcome: attempt.outcome,
                token: attempt.token,
                highest_token: state.highest_token,
                revision: state.revision.get(),
                idempotency_key: attempt.idempotency_key.clone(),
                expected_revision: attempt.expected_revision,
                owner: attempt.owner.clone(),
                lease: attempt.lease.clone(),
                body_sha256: attempt.body_sha256.clone(),
                body_len: attempt.body_len,
                detail: Some(attempt.detail.clone()),
                caller: attempt.caller.clone(),
            };
            let entry = insert_entry(&mut tx, entry).await?;
            tx.commit().await?;
            Ok(entry)
        })
        .await
    }
}

/// What the authority knows of the lease a write names.
struct LeaseObservation {
    check: LeaseCheck,
    /// For the audit, when the grant had lapsed.
    note: Option<String>,
    /// Who holds the lease's current generation.
    holder: Option<String>,
}

/// What the authority knows of the lease a write names, and a note for the audit when its
/// grant had lapsed. On PostgreSQL the lease row is share-locked until the write commits, so no
/// new generation can be granted between this check and the write.
async fn observe_lease(
    tx: &mut Transaction<'_, Any>,
    backend: Backend,
    name: &LeaseName,
    write: &FencedWrite,
    policy: LeasePolicy,
) -> Result<LeaseObservation, StoreError> {
    let lock = match backend {
        Backend::Postgres => " FOR SHARE",
        Backend::Sqlite => "",
    };
    let record = read_lease(tx, name, lock).await?;
    let now = clock_us(tx, backend).await?;
    let in_scope = policy.scope.allows(name, &write.key);
    let Some(record) = record else {
        return Ok(LeaseObservation {
            check: LeaseCheck {
                issued: 0,
                lapsed: false,
                in_scope,
                strict: policy.strict,
            },
            note: None,
            holder: None,
        });
    };
    let lapsed = record.lapsed(now);
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
    Ok(LeaseObservation {
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

async fn observe_resource(
    tx: &mut Transaction<'_, Any>,
    key: &ResourceKey,
) -> Result<Option<ResourceState>, sqlx::Error> {
    let row = sqlx::query("SELECT highest_token, revision FROM resources WHERE key = $1")
        .bind(key.as_str())
        .fetch_optional(&mut **tx)
        .await?;
    row.map(|row| {
        Ok(ResourceState {
            highest_token: row.try_get("highest_token")?,
            revision: Revision::new(row.try_get("revision")?)
                .map_err(|e| sqlx::Error::Decode(e.into()))?,
        })
    })
    .transpose()
}

async fn observe_operation(
    tx: &mut Transaction<'_, Any>,
    key: &ResourceKey,
    idempotency_key: &IdempotencyKey,
) -> Result<Option<RecordedOperation>, sqlx::Error> {
    let row = sqlx::query(
        "SELECT token, body_sha256, status, revision, highest_token, audit_id \
         FROM operations WHERE resource = $1 AND idempotency_key = $2",
    )
    .bind(key.as_str())
    .bind(idempotency_key.as_str())
    .fetch_optional(&mut **tx)
    .await?;
    let decode = |e: crate::domain::ParseError| sqlx::Error::Decode(e.into());
    row.map(|row| {
        Ok(RecordedOperation {
            token: FencingToken::new(row.try_get("token")?).map_err(decode)?,
            body_sha256: row.try_get("body_sha256")?,
            status: u16::try_from(row.try_get::<i64, _>("status")?)
                .map_err(|e| sqlx::Error::Decode(e.into()))?,
            revision: Revision::new(row.try_get("revision")?).map_err(decode)?,
            highest_token: row.try_get("highest_token")?,
            audit_id: row.try_get("audit_id")?,
        })
    })
    .transpose()
}

/// Applies an accepted write if the row is still as observed. Returns whether it was.
async fn compare_and_set(
    tx: &mut Transaction<'_, Any>,
    write: &FencedWrite,
    observed: Option<ResourceState>,
    revision: Revision,
    at: DateTime<Utc>,
) -> Result<bool, sqlx::Error> {
    let result = match observed {
        None => {
            sqlx::query(
                "INSERT INTO resources (key, highest_token, revision, value, content_type, updated_at_us, highest_owner) \
                 VALUES ($1, $2, $3, $4, $5, $6, $7) ON CONFLICT (key) DO NOTHING",
            )
            .bind(write.key.as_str())
            .bind(write.token.get())
            .bind(revision.get())
            .bind(&write.body[..])
            .bind(write.content_type.as_deref())
            .bind(at.timestamp_micros())
            .bind(write.owner.as_ref().map(|o| o.as_str()))
            .execute(&mut **tx)
            .await?
        }
        Some(observed) => {
            sqlx::query(
                "UPDATE resources SET highest_token = $2, revision = $3, value = $4, \
                 content_type = $5, updated_at_us = $6, highest_owner = $8 \
                 WHERE key = $1 AND revision = $7 AND highest_token <= $2",
            )
            .bind(write.key.as_str())
            .bind(write.token.get())
            .bind(revision.get())
            .bind(&write.body[..])
            .bind(write.content_type.as_deref())
            .bind(at.timestamp_micros())
            .bind(observed.revision.get())
            .bind(write.owner.as_ref().map(|o| o.as_str()))
            .execute(&mut **tx)
            .await?
        }
    };
    Ok(result.rows_affected() == 1)
}

/// Opens or grows the overlap a stale or superseded write shows, in its transaction.
async fn record_overlap(
    tx: &mut Transaction<'_, Any>,
    write: &FencedWrite,
    decision: &Decision,
    state: ResourceState,
    lease: Option<&LeaseObservation>,
    at: DateTime<Utc>,
) -> Result<(), StoreError> {
    let resource_owner: Option<String> =
        sqlx::query_scalar("SELECT highest_owner FROM resources WHERE key = $1")
            .bind(write.key.as_str())
            .fetch_optional(&mut **tx)
            .await?
            .flatten();
    // A superseded write may not have met its successor here yet: the lease knows it.
    let issued = lease.map(|observed| observed.check.issued).unwrap_or(0);
    let (superseding_token, superseding_owner) =
        if matches!(decision, Decision::Superseded) && issued > state.highest_token {
            (issued, lease.and_then(|observed| observed.holder.clone()))
        } else {
            (state.highest_token, resource_owner)
        };
    overlaps::record_sighting(
        tx,
        &overlaps::OverlapSighting {
            resource: write.key.as_str(),
            stale_token: write.token.get(),
            superseding_token,
            stale_owner: write.owner.as_ref().map(|o| o.as_str()),
            superseding_owner: superseding_owner.as_deref(),
            at_us: at.timestamp_micros(),
        },
    )
    .await?;
    Ok(())
}

async fn insert_audit(
    tx: &mut Transaction<'_, Any>,
    write: &FencedWrite,
    decision: &Decision,
    after: ResourceState,
    at: DateTime<Utc>,
    lease_note: Option<String>,
) -> Result<AuditEntry, sqlx::Error> {
    let lease_name = || write.lease.as_ref().map(|l| l.as_str()).unwrap_or_default();
    let detail = match decision {
        Decision::Replay(recorded) => Some(format!(
            "repeat of the operation recorded as audit {}",
            recorded.audit_id
        )),
        Decision::KeyReuse { recorded } => Some(format!(
            "idempotency key was recorded with token {} and body sha256 {} (audit {})",
            recorded.token, recorded.body_sha256, recorded.audit_id
        )),
        Decision::Stale => Some(format!(
            "generation {} was superseded by {}",
            write.token, after.highest_token
        )),
        Decision::RevisionMismatch => Some(format!(
            "expected revision {} but the resource is at {}",
            write
                .expected_revision
                .map(Revision::get)
                .unwrap_or_default(),
            after.revision
        )),
        Decision::OutOfScope => Some(format!(
            "lease {} may not fence resource {}",
            lease_name(),
            write.key
        )),
        Decision::UnknownGeneration => Some(match &write.lease {
            Some(lease) => format!(
                "lease {} never issued generation {}",
                lease.as_str(),
                write.token
            ),
            None => "this daemon requires Fencing-Lease: tokens must come from its lease authority"
                .to_owned(),
        }),
        Decision::Superseded => Some(format!(
            "lease {} has issued a newer generation than {}",
            lease_name(),
            write.token
        )),
        Decision::LeaseExpired => lease_note,
        Decision::Accept { lease_lapsed, .. } => lease_note.filter(|_| *lease_lapsed),
    };
    let entry = AuditEntry {
        id: 0,
        at,
        resource: write.key.as_str().to_owned(),
        outcome: decision.outcome(),
        token: Some(write.token.get()),
        highest_token: after.highest_token,
        revision: after.revision.get(),
        idempotency_key: write
            .idempotency_key
            .as_ref()
            .map(|k| k.as_str().to_owned()),
        expected_revision: write.expected_revision.map(Revision::get),
        owner: write.owner.as_ref().map(|o| o.as_str().to_owned()),
        lease: write.lease.as_ref().map(|l| l.as_str().to_owned()),
        body_sha256: Some(write.body_sha256.clone()),
        body_len: i64::try_from(write.body.len()).ok(),
        detail,
        caller: write.caller.clone(),
    };
    insert_entry(tx, entry).await
}

/// Appends an audit row to its resource's hash chain and returns it with its id. The chain head
/// is locked by the upsert until the transaction ends, so concurrent appends to one resource
/// take their turns and the chain never forks.
async fn insert_entry(
    tx: &mut Transaction<'_, Any>,
    mut entry: AuditEntry,
) -> Result<AuditEntry, sqlx::Error> {
    let head = sqlx::query(
        "INSERT INTO audit_chains (resource, seq, hash) VALUES ($1, 0, $2) \
         ON CONFLICT (resource) DO UPDATE SET resource = excluded.resource RETURNING seq, hash",
    )
    .bind(entry.resource.as_str())
    .bind(chain::GENESIS)
    .fetch_one(&mut **tx)
    .await?;
    let seq = head.try_get::<i64, _>("seq")? + 1;
    let prev_hash: String = head.try_get("hash")?;
    let hash = chain::row_hash(&entry, seq, &prev_hash);
    let id: i64 = sqlx::query_scalar(
        "INSERT INTO audit (at_us, resource, outcome, token, highest_token, revision, \
         idempotency_key, expected_revision, owner, lease, body_sha256, body_len, detail, caller, \
         seq, prev_hash, hash) \
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17) RETURNING id",
    )
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
    .bind(seq)
    .bind(prev_hash.as_str())
    .bind(hash.as_str())
    .fetch_one(&mut **tx)
    .await?;
    sqlx::query("UPDATE audit_chains SET seq = $2, hash = $3 WHERE resource = $1")
        .bind(entry.resource.as_str())
        .bind(seq)
        .bind(hash.as_str())
        .execute(&mut **tx)
        .await?;
    entry.id = id;
    Ok(entry)
}

async fn record_operation(
    tx: &mut Transaction<'_, Any>,
    write: &FencedWrite,
    key: &IdempotencyKey,
    revision: Revision,
    audit_id: i64,
    at: DateTime<Utc>,
) -> Result<(), sqlx::Error> {
    sqlx::query(
        "INSERT INTO operations (resource, idempotency_key, token, body_sha256, status, \
         revision, highest_token, audit_id, recorded_at_us) \
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)",
    )
    .bind(write.key.as_str())
    .bind(key.as_str())
    .bind(write.token.get())
    .bind(write.body_sha256.as_str())
    .bind(i64::from(created_or_updated(revision)))
    .bind(revision.get())
    .bind(write.token.get())
    .bind(audit_id)
    .bind(at.timestamp_micros())
    .execute(&mut **tx)
    .await?;
    Ok(())
}

/// `201 Created` for a resource's first revision, `200 OK` after.
pub fn created_or_updated(revision: Revision) -> u16 {
    if revision.get() == 1 {
        201
    } else {
        200
    }
}
