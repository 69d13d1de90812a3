//! Group commit's PostgreSQL statements: two round trips per batch whatever its size (observe,
//! apply), besides the transaction's BEGIN and COMMIT.
//!
//! Observation takes no locks: a batch decides on what it read, and its application is a
//! compare-and-set on everything it read that it changes. A resource is updated only at the
//! revision and chain position observed, a `chain_heads` row advanced only from the position
//! observed, and a resource or head observed missing is inserted only if still missing (see
//! `chain_heads`). The statement counts what it changed; any shortfall means a concurrent
//! commit came between, and the batch is rolled back and decided again. The updates lock rows
//! as they go, resources first and then chain heads, each in key order (see `application`), so
//! concurrent batches wait for each other instead of deadlocking.
//!
//! Rows travel as `jsonb` arrays, like SQLite's (`rows`): one statement text per step, so
//! it stays prepared, where a parameter per value took one statement per power-of-two chunk of
//! rows, with more round trips and executor start-ups (docs/performance.md). `jsonb`, not
//! `json`: `->>` on `json` parses the text again for every field.

use super::plan::Plan;
use super::rows::{
    decode_operations, decode_resources, encode, from_json, join_open_overlap, to_json, Rows,
};
use super::shared::{AuditPosition, Observed, PostgresPosition};
use crate::domain::FencedWrite;
use crate::store::StoreError;
use sqlx::{AnyConnection, Row};
use std::collections::BTreeSet;

/// The batch's resources, the operations its idempotency keys name and its `chain_heads` rows,
/// as JSON arrays (the first two decoded as SQLite's observation is), and its audit ids, drawn in
/// ascending order after the transaction id was taken (see `tx::begin_audited`).
const OBSERVE: &str = "\
    SELECT \
     (SELECT COALESCE(json_agg(json_build_array(key, highest_token, revision, highest_owner, \
             chain_seq, chain_hash)), '[]')::text \
        FROM resources WHERE key IN (SELECT jsonb_array_elements_text($1::jsonb))) AS resources, \
     (SELECT COALESCE(json_agg(json_build_array(o.resource, o.idempotency_key, o.token, \
             o.body_sha256, o.status, o.revision, o.highest_token, o.audit_id)), '[]')::text \
        FROM jsonb_array_elements($2::jsonb) AS named JOIN operations AS o \
          ON o.resource = named ->> 0 AND o.idempotency_key = named ->> 1) AS operations, \
     (SELECT COALESCE(json_agg(json_build_array(resource, seq, hash)), '[]')::text \
        FROM chain_heads WHERE resource IN (SELECT jsonb_array_elements_text($1::jsonb))) \
        AS heads, \
     (SELECT COALESCE(json_agg(id ORDER BY id), '[]')::text \
        FROM (SELECT nextval('audit_id_seq') AS id FROM generate_series(1, $3::bigint)) AS drawn) \
        AS ids";

/// The parts of the statement that applies a batch, each run once and to completion, `{}` its
/// parameter; `application` names them. A part with no rows is left out: even empty, it would
/// open and lock its table and every index of it, and with dozens of backends those locks
/// overflow each one's fast path into the shared lock table (measured: docs/performance.md).
/// One statement for every resource with a row, accepted or only audited, so that each
/// batch locks its resources in one key order.
const UPDATE_RESOURCES: &str = "\
      UPDATE resources AS r SET highest_token = (v ->> 2)::bigint, \
          revision = (v ->> 3)::bigint, \
          value = CASE WHEN (v ->> 1)::boolean THEN decode(v ->> 4, 'hex') ELSE r.value END, \
          content_type = CASE WHEN (v ->> 1)::boolean THEN v ->> 5 ELSE r.content_type END, \
          updated_at_us = CASE WHEN (v ->> 1)::boolean THEN (v ->> 6)::bigint \
              ELSE r.updated_at_us END, \
          highest_owner = CASE WHEN (v ->> 1)::boolean THEN v ->> 7 ELSE r.highest_owner END, \
          chain_seq = (v ->> 9)::bigint, chain_hash = v ->> 10 \
        FROM jsonb_array_elements({}::jsonb) AS v \
        WHERE r.key = v ->> 0 AND r.revision = (v ->> 8)::bigint \
          AND r.highest_token <= (v ->> 2)::bigint AND r.chain_seq = (v ->> 11)::bigint \
        RETURNING 1";
const INSERT_RESOURCES: &str = "\
      INSERT INTO resources (key, highest_token, revision, value, content_type, updated_at_us, \
          highest_owner, chain_seq, chain_hash) \
        SELECT v ->> 0, (v ->> 1)::bigint, (v ->> 2)::bigint, decode(v ->> 3, 'hex'), v ->> 4, \
          (v ->> 5)::bigint, v ->> 6, (v ->> 7)::bigint, v ->> 8 \
        FROM jsonb_array_elements({}::jsonb) AS v \
        ON CONFLICT (key) DO NOTHING \
        RETURNING 1";
const INSERT_AUDIT: &str = "\
      INSERT INTO audit (at_us, resource, outcome, token, highest_token, revision, \
          idempotency_key, expected_revision, owner, lease, body_sha256, body_len, detail, \
          caller, seq, prev_hash, hash, id) OVERRIDING SYSTEM VALUE \
        SELECT (v ->> 0)::bigint, v ->> 1, v ->> 2, (v ->> 3)::bigint, (v ->> 4)::bigint, \
          (v ->> 5)::bigint, v ->> 6, (v ->> 7)::bigint, v ->> 8, v ->> 9, v ->> 10, \
          (v ->> 11)::bigint, v ->> 12, v ->> 13, (v ->> 14)::bigint, v ->> 15, v ->> 16, \
          (v ->> 17)::bigint \
        FROM jsonb_array_elements({}::jsonb) AS v";
const ADVANCE_CHAINS: &str = "\
      UPDATE chain_heads AS c SET seq = (v ->> 1)::bigint, hash = v ->> 2 \
        FROM jsonb_array_elements({}::jsonb) AS v \
        WHERE c.resource = v ->> 0 AND c.seq = (v ->> 3)::bigint \
        RETURNING 1";
const START_CHAINS: &str = "\
      INSERT INTO chain_heads (resource, seq, hash) \
        SELECT v ->> 0, (v ->> 1)::bigint, v ->> 2 FROM jsonb_array_elements({}::jsonb) AS v \
        ON CONFLICT (resource) DO NOTHING \
        RETURNING 1";
const RECORD_OPERATIONS: &str = "\
      INSERT INTO operations (resource, idempotency_key, token, body_sha256, status, revision, \
          highest_token, audit_id, recorded_at_us) \
        SELECT v ->> 0, v ->> 1, (v ->> 2)::bigint, v ->> 3, (v ->> 4)::bigint, \
          (v ->> 5)::bigint, (v ->> 6)::bigint, (v ->> 7)::bigint, (v ->> 8)::bigint \
        FROM jsonb_array_elements({}::jsonb) AS v";
const RECORD_SIGHTINGS: &str = concat!(
    "\
      INSERT INTO ownership_overlaps AS o (resource, stale_token, superseding_token, \
          stale_owner, superseding_owner, first_seen_us, last_seen_us, rejected_writes, state, \
          updated_at_us) \
        SELECT v ->> 0, (v ->> 1)::bigint, (v ->> 2)::bigint, v ->> 3, v ->> 4, \
          (v ->> 5)::bigint, (v ->> 6)::bigint, (v ->> 7)::bigint, 'open', (v ->> 6)::bigint \
        FROM jsonb_array_elements({}::jsonb) AS v ",
    join_open_overlap!()
);

/// What the application changed, to compare with what it planned.
#[derive(Debug, PartialEq, Eq)]
struct Changed {
    updated: i64,
    inserted: i64,
    advanced: i64,
    started: i64,
}

/// The statement applying `rows`, with its parameters: one per part that has rows,
/// numbered in turn. It answers how many resources it updated and inserted and how many chains
/// it advanced and started (zero for a part left out). Those counts are read in that order, and
/// reading a part runs it: so a batch locks its resources before its chain heads, and each part
/// takes its rows in key order, as every batch does.
fn application(rows: Rows) -> (String, Vec<String>) {
    // (name, whether its count is answered, statement, rows, parameter)
    let parts = [
        (
            "updated",
            true,
            UPDATE_RESOURCES,
            rows.update_count,
            rows.updates,
        ),
        (
            "inserted",
            true,
            INSERT_RESOURCES,
            rows.insert_count,
            rows.inserts,
        ),
        (
            "advanced",
            true,
            ADVANCE_CHAINS,
            rows.head_advance_count,
            rows.head_advances,
        ),
        (
            "started",
            true,
            START_CHAINS,
            rows.head_start_count,
            rows.head_starts,
        ),
        ("audited", false, INSERT_AUDIT, rows.audit_count, rows.audit),
        (
            "recorded",
            false,
            RECORD_OPERATIONS,
            rows.operation_count,
            rows.operations,
        ),
        (
            "sighted",
            false,
            RECORD_SIGHTINGS,
            rows.sighting_count,
            rows.sightings,
        ),
    ];
    let mut ctes = Vec::with_capacity(parts.len());
    let mut parameters = Vec::with_capacity(parts.len());
    let mut counts = Vec::new();
    for (name, counted, statement, count, json) in parts {
        if count > 0 {
            parameters.push(json);
            let statement = statement.replacen("{}", &format!("${}", parameters.len()), 1);
            ctes.push(format!("{name} AS ( {statement})"));
        }
        if counted {
            counts.push(match count > 0 {
                true => format!("(SELECT count(*) FROM {name}) AS {name}"),
                false => format!("0::bigint AS {name}"),
            });
        }
    }
    let sql = format!("WITH {} SELECT {}", ctes.join(", "), counts.join(", "));
    (sql, parameters)
}

pub(super) async fn observe(
    conn: &mut AnyConnection,
    keys: &BTreeSet<&str>,
    writes: &[FencedWrite],
) -> Result<Observed, StoreError> {
    let named: Vec<(&str, &str)> = writes.iter().filter_map(FencedWrite::operation).collect();
    let row = sqlx::query(OBSERVE)
        .bind(to_json(keys)?)
        .bind(to_json(&named)?)
        .bind(count(writes.len()))
        .fetch_one(&mut *conn)
        .await?;
    Ok(Observed {
        resources: decode_resources(&row.try_get::<String, _>("resources")?)?,
        operations: decode_operations(&row.try_get::<String, _>("operations")?)?,
        unwritten_heads: from_json(&row.try_get::<String, _>("heads")?)?,
        audit: AuditPosition::Postgres(PostgresPosition {
            ids: from_json(&row.try_get::<String, _>("ids")?)?,
        }),
    })
}

/// What a batch's compare-and-set found.
pub(super) enum Application {
    /// Everything it changed was as observed: the audit ids, in order.
    Applied { ids: Vec<i64> },
    /// Something was no longer as observed. The ids drawn for the batch die with its
    /// transaction, which must be rolled back.
    Changed { drawn_ids: Vec<i64> },
}

/// Applies the batch as a compare-and-set on what it observed.
pub(super) async fn apply(
    conn: &mut AnyConnection,
    position: PostgresPosition,
    plan: &Plan<'_>,
) -> Result<Application, StoreError> {
    let PostgresPosition { ids } = position;
    let rows = encode(plan, &ids)?;
    let planned = Changed {
        updated: count(rows.update_count),
        inserted: count(rows.insert_count),
        advanced: count(rows.head_advance_count),
        started: count(rows.head_start_count),
    };
    let (sql, parameters) = application(rows);
    let mut query = sqlx::query(&sql);
    for json in parameters {
        query = query.bind(json);
    }
    let row = query.fetch_one(&mut *conn).await?;
    let done = Changed {
        updated: row.try_get("updated")?,
        inserted: row.try_get("inserted")?,
        advanced: row.try_get("advanced")?,
        started: row.try_get("started")?,
    };
    Ok(if done == planned {
        Application::Applied { ids }
    } else {
        Application::Changed { drawn_ids: ids }
    })
}

fn count(rows: usize) -> i64 {
    i64::try_from(rows).unwrap_or(i64::MAX)
}

#[cfg(test)]
mod tests {
    use super::super::rows::test_rows as rows;
    use super::*;

    #[test]
    fn parts_without_rows_are_left_out_and_the_parameters_follow_in_order() {
        let (sql, parameters) = application(rows(0, 1, 1, 0));
        assert_eq!(
            parameters,
            ["[\"advances\"]", "[\"audit\"]", "[\"sightings\"]"]
        );
        for absent in [
            "updated AS (",
            "inserted AS (",
            "started AS (",
            "recorded AS (",
        ] {
            assert!(!sql.contains(absent), "{absent} in {sql}");
        }
        assert!(sql.starts_with("WITH advanced AS ("), "{sql}");
        assert!(sql.contains("jsonb_array_elements($3::jsonb) AS v ON CONFLICT"));
        assert!(!sql.contains("$4"));
        assert!(
            sql.ends_with(
                "SELECT 0::bigint AS updated, 0::bigint AS inserted, \
                 (SELECT count(*) FROM advanced) AS advanced, 0::bigint AS started"
            ),
            "{sql}"
        );

        let (sql, parameters) = application(rows(3, 0, 0, 2));
        assert_eq!(parameters[0], "[\"updates\"]");
        assert!(sql.starts_with("WITH updated AS"));
        assert!(
            sql.ends_with(
                "SELECT (SELECT count(*) FROM updated) AS updated, 0::bigint AS inserted, \
                 0::bigint AS advanced, (SELECT count(*) FROM started) AS started"
            ),
            "{sql}"
        );
    }
}
