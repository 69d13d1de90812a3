//! Group commit's PostgreSQL statements: a batch is observed with one statement, locked with a
//! second and applied with a third, whatever its size.
//!
//! Observation takes no locks, so a batch that loses a race finds out before changing anything:
//! the rows it will change are then locked in key order (so concurrent batches cannot deadlock
//! on them) and compared with what it observed, and its audit chain heads are created if
//! missing and locked, so appends to one resource take turns. All writes are one statement of
//! data-modifying CTEs; the update is a compare-and-set on the observed revision as well.

use super::batch::{internal, link, ChainHeads, Change, Observed, ObservedResource};
use super::batch_rows::{encode, from_json, to_json, Plan};
use super::writes::FencedWrite;
use super::StoreError;
use crate::domain::chain;
use crate::domain::{FencingToken, RecordedOperation, ResourceState, Revision};
use sqlx::{Any, Row, Transaction};
use std::collections::{BTreeSet, HashMap};

/// Reads the batch's resources and recorded operations. It also takes the transaction's id
/// before any audit id, which the live tail's ordering needs (see `tx::begin_audited`).
const OBSERVE: &str = "SELECT pg_current_xact_id()::text AS xact, \
     (SELECT COALESCE(json_agg(json_build_array(key, highest_token, revision, highest_owner)), \
             '[]') FROM resources WHERE key IN (SELECT json_array_elements_text($1::json)))::text \
        AS resources, \
     (SELECT COALESCE(json_agg(json_build_array(o.resource, o.idempotency_key, o.token, \
             o.body_sha256, o.status, o.revision, o.highest_token, o.audit_id)), '[]') \
        FROM json_array_elements($2::json) AS named JOIN operations AS o \
          ON o.resource = named ->> 0 AND o.idempotency_key = named ->> 1)::text AS operations";

pub(super) async fn observe(
    tx: &mut Transaction<'_, Any>,
    keys: &BTreeSet<&str>,
    writes: &[FencedWrite],
) -> Result<Observed, StoreError> {
    let named: Vec<(&str, &str)> = writes
        .iter()
        .filter_map(|w| {
            w.idempotency_key
                .as_ref()
                .map(|k| (w.key.as_str(), k.as_str()))
        })
        .collect();
    let row = sqlx::query(OBSERVE)
        .bind(to_json(&keys)?)
        .bind(to_json(&named)?)
        .fetch_one(&mut **tx)
        .await?;

    let resources: Vec<(String, i64, i64, Option<String>)> =
        from_json(&row.try_get::<String, _>("resources")?)?;
    let resources = resources
        .into_iter()
        .map(|(key, highest_token, revision, owner)| {
            let revision = Revision::new(revision).map_err(|e| internal(&e.0))?;
            let state = ResourceState {
                highest_token,
                revision,
            };
            Ok((key, ObservedResource { state, owner }))
        })
        .collect::<Result<_, StoreError>>()?;

    type OperationRow = (String, String, i64, String, i64, i64, i64, i64);
    let found: Vec<OperationRow> = from_json(&row.try_get::<String, _>("operations")?)?;
    let decode = |e: crate::domain::ParseError| internal(&e.0);
    let operations = found
        .into_iter()
        .map(
            |(resource, key, token, body_sha256, status, revision, highest_token, audit_id)| {
                let recorded = RecordedOperation {
                    token: FencingToken::new(token).map_err(decode)?,
                    body_sha256,
                    status: u16::try_from(status).map_err(|e| internal(&e.to_string()))?,
                    revision: Revision::new(revision).map_err(decode)?,
                    highest_token,
                    audit_id,
                };
                Ok(((resource, key), recorded))
            },
        )
        .collect::<Result<_, StoreError>>()?;

    Ok(Observed {
        resources,
        operations,
        audit: None,
    })
}

/// Locks the changed resources' rows and then the chain heads, each in key order, creating the
/// heads that are missing. The target list is evaluated left to right, so every batch takes
/// its locks in the same order.
const LOCK: &str = "WITH changed AS ( \
       SELECT key, revision FROM resources \
       WHERE key IN (SELECT json_array_elements_text($1::json)) ORDER BY key FOR UPDATE), \
     heads AS ( \
       INSERT INTO audit_chains (resource, seq, hash) \
       SELECT resource, 0, $3 FROM json_array_elements_text($2::json) AS resource \
       ORDER BY resource \
       ON CONFLICT (resource) DO UPDATE SET resource = excluded.resource \
       RETURNING resource, seq, hash) \
     SELECT (SELECT COALESCE(json_agg(json_build_array(key, revision)), '[]') FROM changed)::text \
              AS changed, \
            (SELECT COALESCE(json_agg(json_build_array(resource, seq, hash)), '[]') FROM heads)::text \
              AS heads";

/// All of a batch's writes. Every CTE runs once, to completion, on one snapshot; the
/// operations find their audit ids through the audit rows' (resource, seq).
const APPLY: &str = "WITH \
     updated AS ( \
       UPDATE resources AS r SET highest_token = (v ->> 1)::bigint, \
         revision = (v ->> 2)::bigint, value = decode(v ->> 3, 'hex'), content_type = v ->> 4, \
         updated_at_us = (v ->> 5)::bigint, highest_owner = v ->> 6 \
       FROM json_array_elements($1::json) AS v \
       WHERE r.key = v ->> 0 AND r.revision = (v ->> 7)::bigint \
         AND r.highest_token <= (v ->> 1)::bigint \
       RETURNING 1), \
     inserted AS ( \
       INSERT INTO resources (key, highest_token, revision, value, content_type, \
         updated_at_us, highest_owner) \
       SELECT v ->> 0, (v ->> 1)::bigint, (v ->> 2)::bigint, decode(v ->> 3, 'hex'), v ->> 4, \
         (v ->> 5)::bigint, v ->> 6 \
       FROM json_array_elements($2::json) AS v \
       ON CONFLICT (key) DO NOTHING RETURNING 1), \
     audited AS ( \
       INSERT INTO audit (at_us, resource, outcome, token, highest_token, revision, \
         idempotency_key, expected_revision, owner, lease, body_sha256, body_len, detail, \
         caller, seq, prev_hash, hash) \
       SELECT (v ->> 0)::bigint, v ->> 1, v ->> 2, (v ->> 3)::bigint, (v ->> 4)::bigint, \
         (v ->> 5)::bigint, v ->> 6, (v ->> 7)::bigint, v ->> 8, v ->> 9, v ->> 10, \
         (v ->> 11)::bigint, v ->> 12, v ->> 13, (v ->> 14)::bigint, v ->> 15, v ->> 16 \
       FROM json_array_elements($3::json) WITH ORDINALITY AS e(v, n) ORDER BY n \
       RETURNING id, resource, seq), \
     advanced AS ( \
       UPDATE audit_chains AS c SET seq = (v ->> 1)::bigint, hash = v ->> 2 \
       FROM json_array_elements($4::json) AS v WHERE c.resource = v ->> 0 RETURNING 1), \
     recorded AS ( \
       INSERT INTO operations (resource, idempotency_key, token, body_sha256, status, \
         revision, highest_token, audit_id, recorded_at_us) \
       SELECT v ->> 0, v ->> 1, (v ->> 2)::bigint, v ->> 3, (v ->> 4)::bigint, \
         (v ->> 5)::bigint, (v ->> 6)::bigint, a.id, (v ->> 8)::bigint \
       FROM json_array_elements($5::json) AS v \
       JOIN audited AS a ON a.resource = v ->> 0 AND a.seq = (v ->> 9)::bigint \
       RETURNING 1), \
     sighted AS ( \
       INSERT INTO ownership_overlaps AS o (resource, stale_token, superseding_token, \
         stale_owner, superseding_owner, first_seen_us, last_seen_us, rejected_writes, state, \
         updated_at_us) \
       SELECT v ->> 0, (v ->> 1)::bigint, (v ->> 2)::bigint, v ->> 3, v ->> 4, \
         (v ->> 5)::bigint, (v ->> 6)::bigint, (v ->> 7)::bigint, 'open', (v ->> 6)::bigint \
       FROM json_array_elements($6::json) AS v \
       ON CONFLICT (resource, stale_token) WHERE state = 'open' DO UPDATE SET \
         superseding_owner = CASE WHEN excluded.superseding_token > o.superseding_token \
             THEN excluded.superseding_owner ELSE o.superseding_owner END, \
         superseding_token = GREATEST(excluded.superseding_token, o.superseding_token), \
         stale_owner = COALESCE(excluded.stale_owner, o.stale_owner), \
         last_seen_us = excluded.last_seen_us, \
         rejected_writes = o.rejected_writes + excluded.rejected_writes, \
         updated_at_us = excluded.updated_at_us \
       RETURNING 1) \
     SELECT (SELECT count(*) FROM updated) AS updated, \
            (SELECT count(*) FROM inserted) AS inserted, \
            (SELECT count(*) FROM advanced) AS advanced, \
            (SELECT count(*) FROM recorded) AS recorded, \
            (SELECT count(*) FROM sighted) AS sighted, \
            (SELECT COALESCE(json_agg(json_build_array(id, resource, seq)), '[]') \
               FROM audited)::text AS audited";

/// Locks and checks what the batch observed, then applies it, returning the audit ids in order;
/// `None` when a resource was no longer as observed.
pub(super) async fn apply(
    tx: &mut Transaction<'_, Any>,
    keys: &BTreeSet<&str>,
    plan: &Plan<'_>,
) -> Result<Option<Vec<i64>>, StoreError> {
    let changed: Vec<&str> = plan.changes.iter().map(|change| change.key).collect();
    let locked = sqlx::query(LOCK)
        .bind(to_json(&changed)?)
        .bind(to_json(keys)?)
        .bind(chain::GENESIS)
        .fetch_one(&mut **tx)
        .await?;
    let committed: Vec<(String, i64)> = from_json(&locked.try_get::<String, _>("changed")?)?;
    let committed: HashMap<String, i64> = committed.into_iter().collect();
    let as_observed = plan.changes.iter().all(|change: &Change<'_>| {
        committed.get(change.key).copied() == change.observed.map(|s| s.revision.get())
    });
    if !as_observed {
        return Ok(None);
    }
    let found: Vec<(String, i64, String)> = from_json(&locked.try_get::<String, _>("heads")?)?;
    let mut heads: ChainHeads = found
        .into_iter()
        .map(|(resource, seq, hash)| (resource, (seq, hash)))
        .collect();

    let links = link(&mut heads, plan.entries)?;
    let rows = encode(plan, &links, None, &heads)?;
    let done = sqlx::query(APPLY)
        .bind(rows.updates)
        .bind(rows.inserts)
        .bind(rows.audit)
        .bind(rows.heads)
        .bind(rows.operations)
        .bind(rows.sightings)
        .fetch_one(&mut **tx)
        .await?;
    let count = |column: &str| -> Result<usize, StoreError> {
        let count: i64 = done.try_get(column)?;
        usize::try_from(count).map_err(|e| internal(&e.to_string()))
    };
    if count("updated")? != rows.update_count || count("inserted")? != rows.insert_count {
        return Ok(None);
    }
    if count("advanced")? != rows.head_count
        || count("recorded")? != rows.operation_count
        || count("sighted")? != rows.sighting_count
    {
        return Err(internal("a batch's writes changed fewer rows than decided"));
    }
    let audited: Vec<(i64, String, i64)> = from_json(&done.try_get::<String, _>("audited")?)?;
    let ids: HashMap<(String, i64), i64> = audited
        .into_iter()
        .map(|(id, resource, seq)| ((resource, seq), id))
        .collect();
    let ids = plan
        .entries
        .iter()
        .zip(&links)
        .map(|(entry, link)| {
            ids.get(&(entry.resource.clone(), link.seq))
                .copied()
                .ok_or_else(|| internal("an inserted audit row was not returned"))
        })
        .collect::<Result<Vec<_>, _>>()?;
    Ok(Some(ids))
}
