//! A fenced write as the fence decides it, how writes naming a lease are judged, what became of
//! one, and attempts refused before any decision.

use super::authority::{Anomaly, AuthorityView};
use super::{
    AuditEntry, Decision, FencingToken, IdempotencyKey, LeaseName, LeaseScope, Outcome, OwnerLabel,
    ResourceKey, ResourceState, Revision,
};
use bytes::Bytes;
use chrono::{DateTime, Utc};
use sha2::{Digest, Sha256};

/// A body's SHA-256 digest in lowercase hex: how the audit and the operation record name it.
pub fn sha256_hex(bytes: &[u8]) -> String {
    hex::encode(Sha256::digest(bytes))
}

/// A well-formed write, ready to be decided. The body and its digest are set together by `new`
/// and read through accessors, so that the digest recorded for a body is always that body's.
#[derive(Debug, Clone)]
pub struct FencedWrite {
    pub key: ResourceKey,
    pub token: FencingToken,
    pub idempotency_key: Option<IdempotencyKey>,
    pub expected_revision: Option<Revision>,
    pub owner: Option<OwnerLabel>,
    pub lease: Option<LeaseName>,
    pub content_type: Option<String>,
    /// The authenticated caller, when API keys are configured.
    pub caller: Option<String>,
    /// The external lock the write names, as its service answered just before: set by the
    /// service alone, never by whoever builds the write.
    pub(crate) authority: Option<AuthorityView>,
    body: Bytes,
    body_sha256: String,
}

impl FencedWrite {
    /// What the audit records of this write when it is refused before the fence is consulted;
    /// `audit_entry` records a decided one from the same fields.
    pub fn refused(&self, outcome: Outcome, detail: String) -> RefusedAttempt {
        RefusedAttempt {
            key: self.key.clone(),
            outcome,
            token: Some(self.token.get()),
            idempotency_key: self.idempotency_key.as_ref().map(|k| k.as_str().to_owned()),
            expected_revision: self.expected_revision.map(Revision::get),
            owner: self.owner.as_ref().map(|o| o.as_str().to_owned()),
            lease: self.lease.as_ref().map(|l| l.as_str().to_owned()),
            body_sha256: Some(self.body_sha256.clone()),
            body_len: i64::try_from(self.body.len()).ok(),
            detail,
            caller: self.caller.clone(),
        }
    }

    /// The audit row of this write once decided, against the resource's state after the
    /// decision (its id is the database's, set on insert).
    pub fn audit_entry(
        &self,
        outcome: Outcome,
        after: ResourceState,
        at: DateTime<Utc>,
        detail: Option<String>,
    ) -> AuditEntry {
        // The same fields as a refused attempt's, with the decision's detail (no more copies
        // than building the row directly: the attempt's fields move into it).
        AuditEntry {
            detail,
            ..self
                .refused(outcome, String::new())
                .into_audit_entry(after, at)
        }
    }

    /// A write of `body` to `key` under `token`, with nothing else named.
    pub fn new(key: ResourceKey, token: FencingToken, body: impl Into<Bytes>) -> Self {
        let body = body.into();
        Self {
            key,
            token,
            idempotency_key: None,
            expected_revision: None,
            owner: None,
            lease: None,
            content_type: None,
            caller: None,
            authority: None,
            body_sha256: sha256_hex(&body),
            body,
        }
    }

    pub fn body(&self) -> &Bytes {
        &self.body
    }

    pub fn body_sha256(&self) -> &str {
        &self.body_sha256
    }

    /// The operation the write names, `(resource, idempotency key)`, when it carries a key.
    pub fn operation(&self) -> Option<(&str, &str)> {
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

impl RefusedAttempt {
    /// The audit row of this attempt, against the resource's state as it stands (its id is the
    /// database's, set on insert).
    pub fn into_audit_entry(self, state: ResourceState, at: DateTime<Utc>) -> AuditEntry {
        AuditEntry {
            id: 0,
            at,
            resource: self.key.into_string(),
            outcome: self.outcome,
            token: self.token,
            highest_token: state.highest_token,
            revision: state.revision.get(),
            idempotency_key: self.idempotency_key,
            expected_revision: self.expected_revision,
            owner: self.owner,
            lease: self.lease,
            body_sha256: self.body_sha256,
            body_len: self.body_len,
            detail: Some(self.detail),
            caller: self.caller,
            source: None,
        }
    }
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
    /// Decided on the resource's state as this daemon's own commits left it, without reading
    /// it first, and committed by the one statement that checked it (PostgreSQL).
    pub decided_on_known_state: bool,
    /// What the write showed of its external authority's issuing, if anything was wrong.
    pub anomaly: Option<Anomaly>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_write_carries_the_digest_of_its_own_body() {
        let write = FencedWrite::new(
            ResourceKey::parse("a").unwrap(),
            FencingToken::new(1).unwrap(),
            "abc",
        );
        assert_eq!(&write.body()[..], b"abc");
        assert_eq!(
            write.body_sha256(),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
    }
}
