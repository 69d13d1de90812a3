//! The fenced write's types, a single write (a batch of one, see `batch`), and refused
//! attempts, which are audited without a decision.

use super::authority::AuthorityView;
use super::batch::append_audit;
use super::tx::{begin_audited, retrying};
use super::{Store, StoreError};
use crate::domain::{
    AuditEntry, Decision, FencingToken, IdempotencyKey, LeaseName, LeaseScope, Outcome, OwnerLabel,
    ResourceKey, ResourceState, Revision,
};
use bytes::Bytes;
use chrono::{DateTime, SubsecRound, Utc};
use sqlx::{Any, Row, Transaction};

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
    /// The external lock the write names, as its service answered just before.
    pub authority: Option<AuthorityView>,
}

impl FencedWrite {
    /// The operation the write names, `(resource, idempotency key)`, when it carries a key.
    pub(crate) fn operation(&self) -> Option<(&str, &str)> {
        self.idempotency_key
            .as_ref()
            .map(|key| (self.key.as_str(), key.as_str()))
    }
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
    /// How many writes were committed in the same transaction (group commit).
    pub batch_size: usize,
    /// What the write showed of its external authority's issuing, if anything was wrong.
    pub anomaly: Option<crate::domain::authority::Anomaly>,
}

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
            .ok_or_else(|| {
                StoreError::Internal(sqlx::Error::Protocol(
                    "a batch of one gave no result".into(),
                ))
            })
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
                at: Utc::now().trunc_subsecs(6),
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
            let resources = std::collections::BTreeSet::from([entry.resource.as_str()]);
            let ids = append_audit(
                &mut tx,
                self.backend,
                &resources,
                std::slice::from_ref(&entry),
            )
            .await?;
            tx.commit().await?;
            let id = ids.first().copied().ok_or_else(|| {
                StoreError::Internal(sqlx::Error::Protocol("the audit row got no id".into()))
            })?;
            Ok(AuditEntry { id, ..entry })
        })
        .await
    }
}

/// The audit row of a decided write (its id is the database's, set on insert).
pub(crate) fn audit_entry(
    write: &FencedWrite,
    decision: &Decision,
    after: ResourceState,
    at: DateTime<Utc>,
    lease_note: Option<String>,
) -> AuditEntry {
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
        Decision::LeaseExpired => lease_note.clone(),
        Decision::Accept { lease_lapsed, .. } => lease_note
            .clone()
            .filter(|_| *lease_lapsed || write.authority.is_some()),
    };
    // An external lock's holder goes into every decided row, so that who held a generation
    // when can be read back from the audit alone.
    let detail = match (&write.authority, decision, detail, lease_note) {
        (
            Some(_),
            Decision::Stale
            | Decision::Superseded
            | Decision::UnknownGeneration
            | Decision::RevisionMismatch,
            Some(detail),
            Some(note),
        ) => Some(format!("{detail}; {note}")),
        (_, _, detail, _) => detail,
    };
    AuditEntry {
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
    }
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

/// `201 Created` for a resource's first revision, `200 OK` after.
pub fn created_or_updated(revision: Revision) -> u16 {
    if revision.get() == 1 {
        201
    } else {
        200
    }
}
