//! A batch's plan, without a statement: each write decided in arrival order on the state its
//! predecessors in the batch left, the lease or external lock it names judged, the overlaps
//! stale writes show, each audit row linked onto its resource's chain, and what every resource
//! becomes. The dialects (`sqlite`, `postgres`) apply it.

pub(super) mod chained;

use super::shared::{ChainHeads, Link, ObservedLeases, ObservedResource};
use crate::domain::authority::Anomaly;
use crate::domain::clock::Clock;
use crate::domain::lock_record::{self, RecordedLock};
use crate::domain::{
    chain, decide, AuditEntry, Decision, FencedWrite, LeaseCheck, LeasePolicy, RecordedOperation,
    ResourceState, Revision, WriteIntent, WriteResult,
};
use crate::store::chain_heads::UnwrittenMoves;
use crate::store::error::corrupt;
use crate::store::StoreError;
use chrono::{DateTime, SubsecRound, Utc};
use std::collections::{BTreeSet, HashMap, HashSet};

/// What a batch decided, ready to be applied; built by `Chained::plan`.
pub(super) struct Plan<'a> {
    pub writes: &'a [FencedWrite],
    pub decisions: &'a [Decision],
    /// Every resource the batch names, in key order.
    pub changes: Vec<Change<'a>>,
    pub entries: &'a [AuditEntry],
    /// Each entry's place in its resource's chain.
    pub links: &'a [Link],
    pub unwritten: UnwrittenMoves,
    pub stale_writes: &'a [StaleWrite],
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

/// A write refused as stale or superseded: one moment of an overlap, merged with the batch's
/// others into the overlap's row (`rows::merge_stale_writes`) once the batch is applied. Not a
/// `domain::fence_overlaps::OverlapSighting`, which is a run of such moments already merged.
pub(super) struct StaleWrite {
    pub resource: String,
    pub stale_token: i64,
    pub superseding_token: i64,
    pub stale_owner: Option<String>,
    pub superseding_owner: Option<String>,
    pub at_us: i64,
}

/// Splits a batch where an operation repeats, so a repeat is decided on the recorded result of
/// the first (which needs the first's audit id).
pub(super) fn segments(writes: &[FencedWrite]) -> Vec<&[FencedWrite]> {
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

/// A segment's writes, decided in order, with their audit rows (ids not yet known).
pub(super) struct Decided<'a> {
    writes: &'a [FencedWrite],
    /// Each of the segment's resources as its writes left it.
    working: HashMap<&'a str, Working>,
    pub decisions: Vec<Decision>,
    pub entries: Vec<AuditEntry>,
    pub stale_writes: Vec<StaleWrite>,
    anomalies: Vec<Option<Anomaly>>,
}

/// What a batch read before deciding: the resources' rows, the operations recorded under the
/// writes' idempotency keys, and the leases the writes name.
pub(super) struct Observations<'o> {
    pub resources: &'o HashMap<String, ObservedResource>,
    pub operations: &'o HashMap<(String, String), RecordedOperation>,
    pub leases: &'o ObservedLeases,
}

/// Decides each write of a segment on the state its predecessors left: the observed rows at
/// first, then kept in memory per resource. `locks` are the external locks as recorded, advanced
/// by the writes that name them.
pub(super) fn decide_in_order<'a>(
    writes: &'a [FencedWrite],
    keys: &BTreeSet<&'a str>,
    policy: LeasePolicy,
    observed: &Observations<'_>,
    locks: &mut HashMap<String, RecordedLock>,
    clock: &dyn Clock,
) -> Result<Decided<'a>, StoreError> {
    let Observations {
        resources,
        operations,
        leases,
    } = observed;
    let mut working: HashMap<&str, Working> = keys
        .iter()
        .map(|key| {
            let seen = resources.get(*key);
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
    let mut stale_writes = Vec::new();
    let mut anomalies = Vec::with_capacity(writes.len());
    for (index, write) in writes.iter().enumerate() {
        let resource = working
            .get_mut(write.key.as_str())
            .ok_or_else(|| corrupt("a write's resource was not observed"))?;
        let recorded = write.idempotency_key.as_ref().and_then(|key| {
            operations.get(&(write.key.as_str().to_owned(), key.as_str().to_owned()))
        });
        let mut anomaly = None;
        let lease = match &write.authority {
            Some(view) => {
                let working = locks.entry(view.lock.lease_name()).or_default();
                let judged = lock_record::judge(
                    view,
                    write.token.get(),
                    write.owner.as_ref().map(|o| o.as_str()),
                    policy.strict,
                    view.lock.in_scope(policy.scope, &write.key),
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
            None => lease_observation(write, policy, leases),
        };
        let decision = decide(
            resource.state,
            recorded,
            WriteIntent {
                token: write.token,
                body_sha256: write.body_sha256(),
                expected_revision: write.expected_revision,
                lease: lease.as_ref().map(|observed| observed.check),
            },
        );
        let at = clock.now().trunc_subsecs(6);
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
            stale_writes.push(stale_write(
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
    Ok(Decided {
        writes,
        working,
        decisions,
        entries,
        stale_writes,
        anomalies,
    })
}

impl Decided<'_> {
    /// What each resource becomes when the segment commits, in key order: the order PostgreSQL
    /// locks them in, the same in every batch. `heads` are the chains' heads after the segment.
    fn changes<'b>(
        &'b self,
        observed: &'b HashMap<String, ObservedResource>,
        heads: &'b ChainHeads,
    ) -> Result<Vec<Change<'b>>, StoreError> {
        let mut changes: Vec<Change<'b>> = self
            .working
            .iter()
            .map(|(key, resource)| {
                let head = heads
                    .get(*key)
                    .ok_or_else(|| corrupt("a resource of the batch has no chain head"))?;
                Ok(Change {
                    key,
                    observed: observed.get(*key),
                    accepted: resource.last_accepted.map(|index| Accepted {
                        state: resource.state,
                        owner: resource.owner.as_deref(),
                        write: &self.writes[index],
                        at: self.entries[index].at,
                    }),
                    head,
                })
            })
            .collect::<Result<_, StoreError>>()?;
        changes.sort_unstable_by_key(|change| change.key);
        Ok(changes)
    }

    /// The results, once the audit rows have their ids (in order).
    pub fn into_results(self, ids: Vec<i64>) -> Vec<WriteResult> {
        self.decisions
            .into_iter()
            .zip(self.entries)
            .zip(ids)
            .zip(self.anomalies)
            .map(|(((decision, mut entry), id), anomaly)| {
                entry.id = id;
                WriteResult {
                    decision,
                    entry,
                    observations: 0,
                    batch_size: 0,
                    decided_on_known_state: false,
                    anomaly,
                }
            })
            .collect()
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

fn stale_write(
    write: &FencedWrite,
    decision: &Decision,
    state: ResourceState,
    resource_owner: Option<String>,
    lease: Option<&LeaseObservation>,
    at: DateTime<Utc>,
) -> StaleWrite {
    // A superseded write may not have met its successor here yet: the lease knows it.
    let issued = lease.map(|observed| observed.check.issued).unwrap_or(0);
    let (superseding_token, superseding_owner) =
        if matches!(decision, Decision::Superseded) && issued > state.highest_token {
            (issued, lease.and_then(|observed| observed.holder.clone()))
        } else {
            (state.highest_token, resource_owner)
        };
    StaleWrite {
        resource: write.key.as_str().to_owned(),
        stale_token: write.token.get(),
        superseding_token,
        stale_owner: write.owner.as_ref().map(|o| o.as_str().to_owned()),
        superseding_owner,
        at_us: at.timestamp_micros(),
    }
}

/// Links `entries`, in order, onto their resources' chains, advancing `heads` past them.
pub(crate) fn link(
    heads: &mut ChainHeads,
    entries: &[AuditEntry],
) -> Result<Vec<Link>, StoreError> {
    entries
        .iter()
        .map(|entry| {
            let head = heads
                .get_mut(&entry.resource)
                .ok_or_else(|| corrupt("an audited resource has no chain head"))?;
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

/// The audit row of a decided write (its id is the database's, set on insert).
fn audit_entry(
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
        Decision::IdempotencyKeyReuse { recorded } => Some(format!(
            "idempotency key was recorded with token {} and body sha256 {} (audit {})",
            recorded.token, recorded.body_sha256, recorded.audit_id
        )),
        Decision::Stale => Some(crate::domain::fence::stale_detail(
            write.token.get(),
            after.highest_token,
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
    write.audit_entry(decision.outcome(), after, at, detail)
}

/// A plain write for tests of the batch, with an idempotency key if given.
#[cfg(test)]
pub(super) fn test_write(key: &str, idempotency_key: Option<&str>) -> FencedWrite {
    use crate::domain::{FencingToken, IdempotencyKey, ResourceKey};
    let mut write = FencedWrite::new(
        ResourceKey::parse(key).unwrap(),
        FencingToken::new(1).unwrap(),
        "x",
    );
    write.idempotency_key = idempotency_key.map(|k| IdempotencyKey::parse_header(k).unwrap());
    write
}

#[cfg(test)]
mod tests;
