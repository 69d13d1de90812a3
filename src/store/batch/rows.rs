//! A decided batch as rows of one type per table (`AuditRow`, `OperationRow`, …), whose field
//! names are the table's column names, and an observation's JSON read back.
//!
//! Each database takes the rows in its own native form: SQLite as JSON arrays of objects read
//! with `json_each` (`Rows`), PostgreSQL as one typed array per column read with `UNNEST`
//! (`pg_columns`). Either way a step is one parameter set whatever the batch's size: one
//! statement text, so it stays prepared, and one statement per step, so one round trip.

use super::plan::{Accepted, Plan, StaleWrite};
use super::shared::{recorded_operation, status_of, Link, ObservedResource};
use crate::domain::{Applied, AuditEntry, Decision, RecordedOperation};
use crate::store::error::corrupt;
use crate::store::StoreError;
use serde::Serialize;
use std::collections::HashMap;

/// A decided batch's rows, per table, in the order they are applied.
pub(super) struct Encoded<'p> {
    pub updates: Vec<ResourceUpdate<'p>>,
    pub inserts: Vec<ResourceRow<'p>>,
    pub head_advances: Vec<ChainHeadAdvance<'p>>,
    pub head_starts: Vec<ChainHeadRow<'p>>,
    pub audit: Vec<AuditRow<'p>>,
    pub operations: Vec<OperationRow<'p>>,
    /// One per overlap (`merge_stale_writes`).
    pub sightings: Vec<OverlapRow<'p>>,
}

impl Encoded<'_> {
    /// The rows the resources' and chain heads' steps must change: the compare-and-set.
    pub fn guarded_count(&self) -> usize {
        self.updates.len() + self.inserts.len() + self.head_advances.len() + self.head_starts.len()
    }
}

/// SQLite's parameters: each table's rows as a JSON array, and how many rows each step must
/// change.
pub(super) struct Rows {
    /// `ResourceUpdate`s: resources that have a row.
    pub updates: String,
    pub update_count: usize,
    /// `ResourceRow`s: resources the batch creates.
    pub inserts: String,
    pub insert_count: usize,
    /// `ChainHeadAdvance`s: `chain_heads` rows moved on from where they were seen.
    pub head_advances: String,
    pub head_advance_count: usize,
    /// `ChainHeadRow`s: `chain_heads` rows created.
    pub head_starts: String,
    pub head_start_count: usize,
    /// `AuditRow`s, in the batch's order.
    pub audit: String,
    pub audit_count: usize,
    /// `OperationRow`s.
    pub operations: String,
    pub operation_count: usize,
    /// `OverlapRow`s, one per overlap.
    pub sightings: String,
    pub sighting_count: usize,
}

impl Rows {
    pub fn json(rows: &Encoded<'_>) -> Result<Self, StoreError> {
        Ok(Self {
            update_count: rows.updates.len(),
            updates: to_json(&rows.updates)?,
            insert_count: rows.inserts.len(),
            inserts: to_json(&rows.inserts)?,
            head_advance_count: rows.head_advances.len(),
            head_advances: to_json(&rows.head_advances)?,
            head_start_count: rows.head_starts.len(),
            head_starts: to_json(&rows.head_starts)?,
            audit_count: rows.audit.len(),
            audit: to_json(&rows.audit)?,
            operation_count: rows.operations.len(),
            operations: to_json(&rows.operations)?,
            sighting_count: rows.sightings.len(),
            sightings: to_json(&rows.sightings)?,
        })
    }
}

/// Bytes as JSON carries them: hex.
fn hex_bytes<S: serde::Serializer>(bytes: &[u8], serializer: S) -> Result<S::Ok, S::Error> {
    serializer.serialize_str(&hex::encode(bytes))
}

fn hex_bytes_or_null<S: serde::Serializer>(
    bytes: &Option<&[u8]>,
    serializer: S,
) -> Result<S::Ok, S::Error> {
    match bytes {
        Some(bytes) => hex_bytes(bytes, serializer),
        None => serializer.serialize_none(),
    }
}

/// A resource that has a row, as the batch leaves it, with what the batch decided on: it is
/// updated only if its row still holds `observed_revision` and the chain head
/// `observed_chain_seq`, `observed_chain_hash`. Where the batch accepted nothing, the value's
/// fields are null and the generation and revision stay as observed: only the chain's head
/// moves.
#[derive(Serialize, Clone)]
pub(super) struct ResourceUpdate<'a> {
    pub key: &'a str,
    pub accepted: bool,
    pub highest_token: i64,
    pub revision: i64,
    #[serde(serialize_with = "hex_bytes_or_null")]
    pub value: Option<&'a [u8]>,
    pub content_type: Option<&'a str>,
    pub updated_at_us: Option<i64>,
    pub highest_owner: Option<&'a str>,
    pub chain_seq: i64,
    pub chain_hash: &'a str,
    pub observed_revision: i64,
    pub observed_chain_seq: i64,
    pub observed_chain_hash: &'a str,
}

/// A row of `resources`, created by the batch.
#[derive(Serialize)]
pub(super) struct ResourceRow<'a> {
    pub key: &'a str,
    pub highest_token: i64,
    pub revision: i64,
    #[serde(serialize_with = "hex_bytes")]
    pub value: &'a [u8],
    pub content_type: Option<&'a str>,
    pub updated_at_us: i64,
    pub highest_owner: Option<&'a str>,
    pub chain_seq: i64,
    pub chain_hash: &'a str,
}

/// A row of `chain_heads` moved on from `observed_seq`.
#[derive(Serialize, Clone)]
pub(super) struct ChainHeadAdvance<'a> {
    pub resource: &'a str,
    pub seq: i64,
    pub hash: &'a str,
    pub observed_seq: i64,
}

/// A row of `chain_heads`, created only if still missing.
#[derive(Serialize, Clone)]
pub(super) struct ChainHeadRow<'a> {
    pub resource: &'a str,
    pub seq: i64,
    pub hash: &'a str,
}

/// A row of `audit`, the one type every audit insert serializes (`sqlite::insert_audit!`,
/// `postgres::INSERT_AUDIT`). `id` is the row's id on SQLite (`None`: SQLite assigns it), and
/// its place in its statement (from 1) on PostgreSQL, whose statement draws the ids.
#[derive(Serialize, Clone)]
pub(crate) struct AuditRow<'a> {
    pub id: Option<i64>,
    pub at_us: i64,
    pub resource: &'a str,
    pub outcome: &'a str,
    pub token: Option<i64>,
    pub highest_token: i64,
    pub revision: i64,
    pub idempotency_key: Option<&'a str>,
    pub expected_revision: Option<i64>,
    pub owner: Option<&'a str>,
    pub lease: Option<&'a str>,
    pub body_sha256: Option<&'a str>,
    pub body_len: Option<i64>,
    pub detail: Option<&'a str>,
    pub caller: Option<&'a str>,
    pub seq: i64,
    pub prev_hash: &'a str,
    pub hash: &'a str,
}

impl<'a> AuditRow<'a> {
    pub(crate) fn new(entry: &'a AuditEntry, link: &'a Link, id: Option<i64>) -> Self {
        Self {
            id,
            at_us: entry.at.timestamp_micros(),
            resource: &entry.resource,
            outcome: entry.outcome.as_str(),
            token: entry.token,
            highest_token: entry.highest_token,
            revision: entry.revision,
            idempotency_key: entry.idempotency_key.as_deref(),
            expected_revision: entry.expected_revision,
            owner: entry.owner.as_deref(),
            lease: entry.lease.as_deref(),
            body_sha256: entry.body_sha256.as_deref(),
            body_len: entry.body_len,
            detail: entry.detail.as_deref(),
            caller: entry.caller.as_deref(),
            seq: link.seq,
            prev_hash: &link.prev_hash,
            hash: &link.hash,
        }
    }
}

/// A row of `operations`. `audit_id` as `AuditRow::id`: on PostgreSQL the audit row's place.
#[derive(Serialize)]
pub(super) struct OperationRow<'a> {
    pub resource: &'a str,
    pub idempotency_key: &'a str,
    pub token: i64,
    pub body_sha256: &'a str,
    pub status: i64,
    pub revision: i64,
    pub highest_token: i64,
    pub audit_id: i64,
    /// SQLite's; PostgreSQL records its own clock instead (`batch::postgres`).
    pub recorded_at_us: i64,
}

/// A row of `ownership_overlaps` as a batch's stale writes of it merged (`merge_stale_writes`).
#[derive(Serialize, Debug, PartialEq, Eq, Clone)]
pub(super) struct OverlapRow<'a> {
    pub resource: &'a str,
    pub stale_token: i64,
    pub superseding_token: i64,
    pub stale_owner: Option<&'a str>,
    pub superseding_owner: Option<&'a str>,
    pub first_seen_us: i64,
    pub last_seen_us: i64,
    pub rejected_writes: i64,
}

pub(super) fn encode<'p>(plan: &'p Plan<'_>, ids: &[i64]) -> Encoded<'p> {
    // Rows that serialize themselves, not `json!` trees: encoding runs on the group-commit
    // thread, the one serial stage of the write path, and building a tree cloned every string
    // of the batch.
    let (mut updates, mut inserts) = (Vec::new(), Vec::new());
    for change in &plan.changes {
        let (chain_seq, chain_hash) = (change.head.0, change.head.1.as_str());
        match (change.observed, change.accepted.as_ref()) {
            (Some(observed), accepted) => {
                let state = accepted.map_or(observed.state, |a| a.state);
                updates.push(ResourceUpdate {
                    key: change.key,
                    accepted: accepted.is_some(),
                    highest_token: state.highest_token,
                    revision: state.revision.get(),
                    value: accepted.map(|a| &a.write.body()[..]),
                    content_type: accepted.and_then(|a| a.write.content_type.as_deref()),
                    updated_at_us: accepted.map(|a| a.at.timestamp_micros()),
                    highest_owner: accepted.and_then(|a| a.owner),
                    chain_seq,
                    chain_hash,
                    observed_revision: observed.state.revision.get(),
                    observed_chain_seq: observed.chain.0,
                    observed_chain_hash: &observed.chain.1,
                });
            }
            (
                None,
                Some(Accepted {
                    state,
                    owner,
                    write,
                    at,
                }),
            ) => inserts.push(ResourceRow {
                key: change.key,
                highest_token: state.highest_token,
                revision: state.revision.get(),
                value: &write.body()[..],
                content_type: write.content_type.as_deref(),
                updated_at_us: at.timestamp_micros(),
                highest_owner: *owner,
                chain_seq,
                chain_hash,
            }),
            // Its head moves in `chain_heads` (`plan.unwritten`).
            (None, None) => {}
        }
    }
    let head_advances: Vec<ChainHeadAdvance<'_>> = plan
        .unwritten
        .advances
        .iter()
        .map(|(resource, seq, hash, observed_seq)| ChainHeadAdvance {
            resource,
            seq: *seq,
            hash,
            observed_seq: *observed_seq,
        })
        .collect();
    let head_starts: Vec<ChainHeadRow<'_>> = plan
        .unwritten
        .starts
        .iter()
        .map(|(resource, seq, hash)| ChainHeadRow {
            resource,
            seq: *seq,
            hash,
        })
        .collect();
    let audit: Vec<AuditRow<'_>> = plan
        .entries
        .iter()
        .zip(plan.links)
        .zip(ids)
        .map(|((entry, link), &id)| AuditRow::new(entry, link, Some(id)))
        .collect();
    let operations: Vec<OperationRow<'_>> = plan
        .writes
        .iter()
        .zip(plan.decisions)
        .zip(plan.entries.iter().zip(ids))
        .filter_map(|((write, decision), (entry, id))| {
            let Decision::Accept { revision, .. } = decision else {
                return None;
            };
            let key = write.idempotency_key.as_ref()?;
            Some(OperationRow {
                resource: write.key.as_str(),
                idempotency_key: key.as_str(),
                token: write.token.get(),
                body_sha256: write.body_sha256(),
                status: status_of(Applied::at(*revision)),
                revision: revision.get(),
                highest_token: write.token.get(),
                audit_id: *id,
                recorded_at_us: entry.at.timestamp_micros(),
            })
        })
        .collect();
    Encoded {
        updates,
        inserts,
        head_advances,
        head_starts,
        audit,
        operations,
        sightings: merge_stale_writes(plan.stale_writes),
    }
}

/// How a merged sighting row (`excluded`) joins the overlap already open (`o`), the same on
/// both backends: the rules of `merge_stale_writes`, applied across batches. A macro so that
/// statements can include it in their constant text.
macro_rules! join_open_overlap {
    () => {
        "ON CONFLICT (source, resource, stale_token) WHERE state = 'open' DO UPDATE SET \
         superseding_owner = CASE WHEN excluded.superseding_token > o.superseding_token \
             THEN excluded.superseding_owner ELSE o.superseding_owner END, \
         superseding_token = CASE WHEN excluded.superseding_token > o.superseding_token \
             THEN excluded.superseding_token ELSE o.superseding_token END, \
         stale_owner = COALESCE(excluded.stale_owner, o.stale_owner), \
         last_seen_us = excluded.last_seen_us, \
         rejected_writes = o.rejected_writes + excluded.rejected_writes, \
         updated_at_us = excluded.updated_at_us"
    };
}
pub(crate) use join_open_overlap;

/// One row per overlap, as if its stale writes had been recorded one after another: the highest
/// superseding generation (with its owner, the first to show it), the last stale owner named,
/// the first and last time seen, and how many writes it refused. A statement may not upsert one
/// row twice on PostgreSQL.
pub(super) fn merge_stale_writes(stale_writes: &[StaleWrite]) -> Vec<OverlapRow<'_>> {
    let mut order: Vec<(&str, i64)> = Vec::new();
    let mut merged: HashMap<(&str, i64), OverlapRow<'_>> = HashMap::new();
    for stale in stale_writes {
        let key = (stale.resource.as_str(), stale.stale_token);
        match merged.get_mut(&key) {
            Some(overlap) => {
                if stale.superseding_token > overlap.superseding_token {
                    overlap.superseding_token = stale.superseding_token;
                    overlap.superseding_owner = stale.superseding_owner.as_deref();
                }
                overlap.stale_owner = stale.stale_owner.as_deref().or(overlap.stale_owner);
                overlap.last_seen_us = stale.at_us;
                overlap.rejected_writes += 1;
            }
            None => {
                order.push(key);
                merged.insert(
                    key,
                    OverlapRow {
                        resource: &stale.resource,
                        stale_token: stale.stale_token,
                        superseding_token: stale.superseding_token,
                        stale_owner: stale.stale_owner.as_deref(),
                        superseding_owner: stale.superseding_owner.as_deref(),
                        first_seen_us: stale.at_us,
                        last_seen_us: stale.at_us,
                        rejected_writes: 1,
                    },
                );
            }
        }
    }
    order.iter().filter_map(|key| merged.remove(key)).collect()
}

/// An observation's resources: `[[key, highest_token, revision, highest_owner, chain_seq,
/// chain_hash], …]`.
pub(super) fn decode_resources(
    text: &str,
) -> Result<HashMap<String, ObservedResource>, StoreError> {
    type ResourceRow = (String, i64, i64, Option<String>, i64, String);
    let rows: Vec<ResourceRow> = from_json(text)?;
    rows.into_iter()
        .map(|(key, highest_token, revision, owner, seq, hash)| {
            Ok((
                key,
                ObservedResource::decode(highest_token, revision, owner, (seq, hash))?,
            ))
        })
        .collect()
}

/// An observation's recorded operations: `[[resource, idempotency_key, token, body_sha256,
/// status, revision, highest_token, audit_id], …]`.
pub(super) fn decode_operations(
    text: &str,
) -> Result<HashMap<(String, String), RecordedOperation>, StoreError> {
    type OperationRow = (String, String, i64, String, i64, i64, i64, i64);
    let rows: Vec<OperationRow> = from_json(text)?;
    rows.into_iter()
        .map(
            |(resource, key, token, body_sha256, status, revision, highest_token, audit_id)| {
                let recorded = recorded_operation(
                    token,
                    body_sha256,
                    status,
                    revision,
                    highest_token,
                    audit_id,
                )?;
                Ok(((resource, key), recorded))
            },
        )
        .collect()
}

pub(crate) fn to_json<T: serde::Serialize + ?Sized>(value: &T) -> Result<String, StoreError> {
    serde_json::to_string(value).map_err(|e| corrupt(e.to_string()))
}

pub(super) fn from_json<T: serde::de::DeserializeOwned>(text: &str) -> Result<T, StoreError> {
    serde_json::from_str(text).map_err(|e| corrupt(format!("a batch observation: {e}")))
}

#[cfg(test)]
pub(super) mod tests;
