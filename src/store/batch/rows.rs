//! A decided batch as the JSON parameters the batch statements take, and an observation's JSON
//! read back.
//!
//! A batch travels as a few JSON arrays (read with `json_each` on SQLite, `jsonb_array_elements`
//! on PostgreSQL), instead of a parameter per value: one statement text whatever the batch's
//! size, so it stays prepared, and one statement per step, so one round trip.

use super::plan::{Accepted, Plan, Sighting};
use super::shared::{recorded_operation, status_of, Link, ObservedResource};
use crate::domain::{Applied, AuditEntry, Decision, RecordedOperation};
use crate::store::error::corrupt;
use crate::store::StoreError;
use serde_json::{json, Value};
use std::collections::HashMap;

/// The parameters, and how many rows each step must change.
pub(super) struct Rows {
    /// Resources that have a row: `[key, accepted, highest_token, revision, value (hex),
    /// content_type, updated_at_us, owner, observed revision, chain_seq, chain_hash, observed
    /// chain_seq, observed chain_hash]`. Where the batch accepted nothing, the value's fields are null and the
    /// generation and revision stay as observed: only the chain's head moves.
    pub updates: String,
    pub update_count: usize,
    /// Resources the batch creates: `[key, highest_token, revision, value (hex), content_type,
    /// updated_at_us, owner, chain_seq, chain_hash]`
    pub inserts: String,
    pub insert_count: usize,
    /// `chain_heads` rows moved on from where they were seen: `[resource, seq, hash, observed
    /// seq]`
    pub head_advances: String,
    pub head_advance_count: usize,
    /// `chain_heads` rows created: `[resource, seq, hash]`
    pub head_starts: String,
    pub head_start_count: usize,
    /// `[at_us, resource, outcome, token, highest_token, revision, idempotency_key,
    /// expected_revision, owner, lease, body_sha256, body_len, detail, caller, seq, prev_hash,
    /// hash, id]`
    pub audit: String,
    pub audit_count: usize,
    /// `[resource, idempotency_key, token, body_sha256, status, revision, highest_token,
    /// audit_id, recorded_at_us]`
    pub operations: String,
    pub operation_count: usize,
    /// `[resource, stale_token, superseding_token, stale_owner, superseding_owner, first_seen_us,
    /// last_seen_us, rejected_writes]`, one per overlap.
    pub sightings: String,
    pub sighting_count: usize,
}

impl Rows {
    /// The rows the resources' and chain heads' steps must change: the compare-and-set.
    pub fn guarded_count(&self) -> usize {
        self.update_count + self.insert_count + self.head_advance_count + self.head_start_count
    }
}

pub(super) fn encode(plan: &Plan<'_>, ids: &[i64]) -> Result<Rows, StoreError> {
    // Tuples and rows that serialize themselves, not `json!` trees: encoding runs on the
    // group-commit thread, the one serial stage of the write path, and building a tree cloned
    // every string of the batch.
    type Update<'a> = (
        &'a str,
        bool,
        i64,
        i64,
        Option<String>,
        Option<&'a str>,
        Option<i64>,
        Option<&'a str>,
        i64,
        i64,
        &'a str,
        i64,
        &'a str,
    );
    let (mut updates, mut inserts) = (Vec::<Update<'_>>::new(), Vec::new());
    for change in plan.changes {
        let (seq, hash) = change.head;
        match (change.observed, change.accepted.as_ref()) {
            (Some(observed), accepted) => {
                let state = accepted.map_or(observed.state, |a| a.state);
                updates.push((
                    change.key,
                    accepted.is_some(),
                    state.highest_token,
                    state.revision.get(),
                    accepted.map(|a| hex::encode(a.write.body())),
                    accepted.and_then(|a| a.write.content_type.as_deref()),
                    accepted.map(|a| a.at.timestamp_micros()),
                    accepted.and_then(|a| a.owner),
                    observed.state.revision.get(),
                    *seq,
                    hash,
                    observed.chain.0,
                    &observed.chain.1,
                ));
            }
            (
                None,
                Some(Accepted {
                    state,
                    owner,
                    write,
                    at,
                }),
            ) => inserts.push((
                change.key,
                state.highest_token,
                state.revision.get(),
                hex::encode(write.body()),
                write.content_type.as_deref(),
                at.timestamp_micros(),
                *owner,
                *seq,
                hash,
            )),
            // Its head moves in `chain_heads` (`plan.unwritten`).
            (None, None) => {}
        }
    }
    let audit: Vec<AuditRow<'_>> = plan
        .entries
        .iter()
        .zip(plan.links)
        .zip(ids)
        .map(|((entry, link), &id)| AuditRow { entry, link, id })
        .collect();
    let operations: Vec<_> = plan
        .writes
        .iter()
        .zip(plan.decisions)
        .zip(plan.entries.iter().zip(ids))
        .filter_map(|((write, decision), (entry, id))| {
            let Decision::Accept { revision, .. } = decision else {
                return None;
            };
            let key = write.idempotency_key.as_ref()?;
            Some((
                write.key.as_str(),
                key.as_str(),
                write.token.get(),
                write.body_sha256(),
                status_of(Applied::at(*revision)),
                revision.get(),
                write.token.get(),
                id,
                entry.at.timestamp_micros(),
            ))
        })
        .collect();
    let sightings = merge_sightings(plan.sightings);
    Ok(Rows {
        update_count: updates.len(),
        updates: to_json(&updates)?,
        insert_count: inserts.len(),
        inserts: to_json(&inserts)?,
        head_advance_count: plan.unwritten.advances.len(),
        head_advances: to_json(&plan.unwritten.advances)?,
        head_start_count: plan.unwritten.starts.len(),
        head_starts: to_json(&plan.unwritten.starts)?,
        audit_count: audit.len(),
        audit: to_json(&audit)?,
        operation_count: operations.len(),
        operations: to_json(&operations)?,
        sighting_count: sightings.len(),
        sightings: to_json(&sightings)?,
    })
}

/// An audit row as the batch statements read it (see `Rows::audit`).
struct AuditRow<'a> {
    entry: &'a AuditEntry,
    link: &'a Link,
    id: i64,
}

impl serde::Serialize for AuditRow<'_> {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeTuple;
        let mut row = serializer.serialize_tuple(18)?;
        self.entry.serialize_recorded_fields(&mut row)?;
        row.serialize_element(&self.link.seq)?;
        row.serialize_element(&self.link.prev_hash)?;
        row.serialize_element(&self.link.hash)?;
        row.serialize_element(&self.id)?;
        row.end()
    }
}

/// How a merged sighting row (`excluded`) joins the overlap already open (`o`), the same on
/// both backends: the rules of `merge_sightings`, applied across batches. A macro so that
/// statements can include it in their constant text.
macro_rules! join_open_overlap {
    () => {
        "ON CONFLICT (resource, stale_token) WHERE state = 'open' DO UPDATE SET \
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
pub(super) use join_open_overlap;

/// One row per overlap, as if its sightings had been recorded one after another: the highest
/// superseding generation (with its owner, the first to show it), the last stale owner named,
/// the first and last time seen, and how many writes it refused. A statement may not upsert one
/// row twice on PostgreSQL.
pub(super) fn merge_sightings(sightings: &[Sighting]) -> Vec<Value> {
    struct Merged<'a> {
        first: &'a Sighting,
        superseding_token: i64,
        superseding_owner: Option<&'a str>,
        stale_owner: Option<&'a str>,
        last_seen_us: i64,
        count: u32,
    }
    let mut order: Vec<(&str, i64)> = Vec::new();
    let mut merged: HashMap<(&str, i64), Merged<'_>> = HashMap::new();
    for sighting in sightings {
        let key = (sighting.resource.as_str(), sighting.stale_token);
        match merged.get_mut(&key) {
            Some(overlap) => {
                if sighting.superseding_token > overlap.superseding_token {
                    overlap.superseding_token = sighting.superseding_token;
                    overlap.superseding_owner = sighting.superseding_owner.as_deref();
                }
                overlap.stale_owner = sighting.stale_owner.as_deref().or(overlap.stale_owner);
                overlap.last_seen_us = sighting.at_us;
                overlap.count += 1;
            }
            None => {
                order.push(key);
                merged.insert(
                    key,
                    Merged {
                        first: sighting,
                        superseding_token: sighting.superseding_token,
                        superseding_owner: sighting.superseding_owner.as_deref(),
                        stale_owner: sighting.stale_owner.as_deref(),
                        last_seen_us: sighting.at_us,
                        count: 1,
                    },
                );
            }
        }
    }
    order
        .iter()
        .filter_map(|key| merged.get(key))
        .map(|overlap| {
            json!([
                overlap.first.resource,
                overlap.first.stale_token,
                overlap.superseding_token,
                overlap.stale_owner,
                overlap.superseding_owner,
                overlap.first.at_us,
                overlap.last_seen_us,
                overlap.count,
            ])
        })
        .collect()
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

pub(super) fn to_json<T: serde::Serialize + ?Sized>(value: &T) -> Result<String, StoreError> {
    serde_json::to_string(value).map_err(|e| corrupt(e.to_string()))
}

pub(super) fn from_json<T: serde::de::DeserializeOwned>(text: &str) -> Result<T, StoreError> {
    serde_json::from_str(text).map_err(|e| corrupt(format!("a batch observation: {e}")))
}

/// Rows for tests of the statements built from them: each array names its step, with these
/// counts (two audit rows; no creations or operations).
#[cfg(test)]
pub(super) fn test_rows(
    update_count: usize,
    sighting_count: usize,
    advances: usize,
    starts: usize,
) -> Rows {
    let json = |name: &str, count: usize| (format!("[\"{name}\"]"), count);
    let (updates, update_count) = json("updates", update_count);
    let (inserts, insert_count) = json("inserts", 0);
    let (head_advances, head_advance_count) = json("advances", advances);
    let (head_starts, head_start_count) = json("starts", starts);
    let (audit, audit_count) = json("audit", 2);
    let (operations, operation_count) = json("operations", 0);
    let (sightings, sighting_count) = json("sightings", sighting_count);
    Rows {
        updates,
        update_count,
        inserts,
        insert_count,
        head_advances,
        head_advance_count,
        head_starts,
        head_start_count,
        audit,
        audit_count,
        operations,
        operation_count,
        sightings,
        sighting_count,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn seen(
        stale: i64,
        superseding: i64,
        owner: Option<&str>,
        stale_owner: Option<&str>,
        at: i64,
    ) -> Sighting {
        Sighting {
            resource: "r".into(),
            stale_token: stale,
            superseding_token: superseding,
            stale_owner: stale_owner.map(Into::into),
            superseding_owner: owner.map(Into::into),
            at_us: at,
        }
    }

    #[test]
    fn sightings_of_one_overlap_merge_as_if_recorded_in_turn() {
        let merged = merge_sightings(&[
            seen(3, 5, Some("b"), Some("a"), 10),
            seen(4, 5, Some("b"), None, 11),
            seen(3, 7, Some("c"), None, 12),
            seen(3, 7, Some("d"), Some("a2"), 13),
        ]);
        assert_eq!(
            merged,
            vec![
                json!(["r", 3, 7, "a2", "c", 10, 13, 3]),
                json!(["r", 4, 5, null, "b", 11, 11, 1]),
            ]
        );
    }
}
