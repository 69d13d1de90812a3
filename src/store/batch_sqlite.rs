//! Group commit's SQLite statements: a batch is observed with one statement and applied with
//! one more, whatever its size.
//!
//! Every statement is a round trip to the connection's worker thread (two thread wake-ups),
//! and under load those hand-offs, not SQLite's own work, were where a batch's time went. So the
//! batch travels as JSON parameters (`json_each`), the observation comes back as one row of
//! JSON arrays, and all writes are one multi-statement execution whose summed row count is
//! checked. The texts never change, so they stay prepared.
//!
//! The audit ids are assigned here, after the largest ever issued: the connection is the only
//! writer, and should another process commit after this transaction's read, SQLite refuses the
//! write (`SQLITE_BUSY_SNAPSHOT`) and the batch runs again.

use super::batch::{link, recorded_operation, ChainHeads, Observed, ObservedResource};
use super::batch_rows::{encode, from_json, join_open_overlap, to_json, Plan};
use super::writes::FencedWrite;
use super::StoreError;
use crate::domain::chain;
use sqlx::{Any, Row, Transaction};
use std::collections::BTreeSet;

/// Where the batch's audit rows go: after the largest id ever issued, onto these chain heads.
pub(super) struct AuditPosition {
    pub last_id: i64,
    pub heads: ChainHeads,
}

const OBSERVE: &str = "SELECT \
     (SELECT json_group_array(json_array(key, highest_token, revision, highest_owner)) \
        FROM resources WHERE key IN (SELECT value FROM json_each($1))) AS resources, \
     (SELECT json_group_array(json_array(resource, seq, hash)) \
        FROM audit_chains WHERE resource IN (SELECT value FROM json_each($1))) AS heads, \
     (SELECT json_group_array(json_array(o.resource, o.idempotency_key, o.token, o.body_sha256, \
             o.status, o.revision, o.highest_token, o.audit_id)) \
        FROM json_each($2) AS named JOIN operations AS o \
          ON o.resource = named.value ->> 0 AND o.idempotency_key = named.value ->> 1) \
        AS operations, \
     max(COALESCE((SELECT seq FROM sqlite_sequence WHERE name = 'audit'), 0), \
         COALESCE((SELECT max(id) FROM audit), 0)) AS last_audit_id";

pub(super) async fn observe(
    tx: &mut Transaction<'_, Any>,
    keys: &BTreeSet<&str>,
    writes: &[FencedWrite],
) -> Result<Observed, StoreError> {
    let named: Vec<(&str, &str)> = writes.iter().filter_map(FencedWrite::operation).collect();
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
            Ok((
                key,
                ObservedResource::decode(highest_token, revision, owner)?,
            ))
        })
        .collect::<Result<_, StoreError>>()?;

    let mut heads: ChainHeads = keys
        .iter()
        .map(|key| ((*key).to_owned(), (0, chain::GENESIS.to_owned())))
        .collect();
    let found: Vec<(String, i64, String)> = from_json(&row.try_get::<String, _>("heads")?)?;
    for (resource, seq, hash) in found {
        heads.insert(resource, (seq, hash));
    }

    type OperationRow = (String, String, i64, String, i64, i64, i64, i64);
    let found: Vec<OperationRow> = from_json(&row.try_get::<String, _>("operations")?)?;
    let operations = found
        .into_iter()
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
        .collect::<Result<_, StoreError>>()?;

    Ok(Observed {
        resources,
        operations,
        audit: Some(AuditPosition {
            last_id: row.try_get("last_audit_id")?,
            heads,
        }),
    })
}

/// One execution, six statements. Each row of an update or insert counts one change, and an
/// upsert's row counts one whether it inserts or updates, so the sum tells whether every
/// resource was still as observed (the compare-and-set on its revision held).
const APPLY: &str = concat!(
    "\
    UPDATE resources SET highest_token = v.value ->> 1, revision = v.value ->> 2, \
        value = unhex(v.value ->> 3), content_type = v.value ->> 4, \
        updated_at_us = v.value ->> 5, highest_owner = v.value ->> 6 \
      FROM json_each($1) AS v \
      WHERE resources.key = v.value ->> 0 AND resources.revision = v.value ->> 7 \
        AND resources.highest_token <= v.value ->> 1; \
    INSERT INTO resources (key, highest_token, revision, value, content_type, updated_at_us, \
        highest_owner) \
      SELECT v.value ->> 0, v.value ->> 1, v.value ->> 2, unhex(v.value ->> 3), v.value ->> 4, \
        v.value ->> 5, v.value ->> 6 FROM json_each($2) AS v WHERE true \
      ON CONFLICT (key) DO NOTHING; \
    INSERT INTO audit (at_us, resource, outcome, token, highest_token, revision, \
        idempotency_key, expected_revision, owner, lease, body_sha256, body_len, detail, caller, \
        seq, prev_hash, hash, id) \
      SELECT v.value ->> 0, v.value ->> 1, v.value ->> 2, v.value ->> 3, v.value ->> 4, \
        v.value ->> 5, v.value ->> 6, v.value ->> 7, v.value ->> 8, v.value ->> 9, \
        v.value ->> 10, v.value ->> 11, v.value ->> 12, v.value ->> 13, v.value ->> 14, \
        v.value ->> 15, v.value ->> 16, v.value ->> 17 FROM json_each($3) AS v; \
    INSERT INTO audit_chains (resource, seq, hash) \
      SELECT v.value ->> 0, v.value ->> 1, v.value ->> 2 FROM json_each($4) AS v WHERE true \
      ON CONFLICT (resource) DO UPDATE SET seq = excluded.seq, hash = excluded.hash; \
    INSERT INTO operations (resource, idempotency_key, token, body_sha256, status, revision, \
        highest_token, audit_id, recorded_at_us) \
      SELECT v.value ->> 0, v.value ->> 1, v.value ->> 2, v.value ->> 3, v.value ->> 4, \
        v.value ->> 5, v.value ->> 6, v.value ->> 7, v.value ->> 8 FROM json_each($5) AS v; \
    INSERT INTO ownership_overlaps AS o (resource, stale_token, superseding_token, \
        stale_owner, superseding_owner, first_seen_us, last_seen_us, rejected_writes, state, \
        updated_at_us) \
      SELECT v.value ->> 0, v.value ->> 1, v.value ->> 2, v.value ->> 3, v.value ->> 4, \
        v.value ->> 5, v.value ->> 6, v.value ->> 7, 'open', v.value ->> 6 \
        FROM json_each($6) AS v WHERE true ",
    join_open_overlap!()
);

/// Applies a decided batch after the rows it observed, returning the audit ids in order; `None`
/// when a resource was no longer as observed.
pub(super) async fn apply(
    tx: &mut Transaction<'_, Any>,
    mut audit: AuditPosition,
    plan: &Plan<'_>,
) -> Result<Option<Vec<i64>>, StoreError> {
    let links = link(&mut audit.heads, plan.entries)?;
    let ids: Vec<i64> = (audit.last_id + 1..).take(plan.entries.len()).collect();
    let rows = encode(plan, &links, &ids, &audit.heads)?;
    let expected = rows.update_count
        + rows.insert_count
        + rows.audit_count
        + rows.head_count
        + rows.operation_count
        + rows.sighting_count;
    let done = sqlx::query(APPLY)
        .bind(rows.updates)
        .bind(rows.inserts)
        .bind(rows.audit)
        .bind(rows.heads)
        .bind(rows.operations)
        .bind(rows.sightings)
        .execute(&mut **tx)
        .await?;
    Ok((done.rows_affected() == expected as u64).then_some(ids))
}
