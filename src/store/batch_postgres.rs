//! Group commit's PostgreSQL statements: three round trips per batch whatever its size (observe,
//! lock, apply), besides the transaction's BEGIN and COMMIT.
//!
//! Observation takes no locks, so a batch that loses a race finds out before changing anything:
//! the rows it will change are then locked in key order (so concurrent batches cannot deadlock
//! on them) and compared with what it observed, and only then written, the update a
//! compare-and-set on the observed revision as well.
//!
//! Rows travel as `jsonb` arrays, like SQLite's (`batch_rows`): one statement text per step, so
//! it stays prepared, and one statement per step, where a parameter per value took one statement
//! per power-of-two chunk of rows (about twice the round trips and the executor start-ups, which
//! with PostgreSQL's backends busy on this machine's two cores were most of a batch's cost).
//! `jsonb`, not `json`: `->>` on `json` parses the text again for every field.

use super::batch::{link, ChainHeads, Observed};
use super::batch_rows::{
    decode_operations, decode_resources, encode, from_json, join_open_overlap, to_json, Plan, Rows,
};
use super::writes::FencedWrite;
use super::StoreError;
use crate::domain::chain;
use sqlx::{AnyConnection, Row};
use std::collections::{BTreeSet, HashMap};

/// The batch's resources and the operations its idempotency keys name, as JSON arrays (decoded
/// as SQLite's observation is).
const OBSERVE: &str = "\
    SELECT \
     (SELECT COALESCE(json_agg(json_build_array(key, highest_token, revision, highest_owner)), \
             '[]')::text \
        FROM resources WHERE key IN (SELECT jsonb_array_elements_text($1::jsonb))) AS resources, \
     (SELECT COALESCE(json_agg(json_build_array(o.resource, o.idempotency_key, o.token, \
             o.body_sha256, o.status, o.revision, o.highest_token, o.audit_id)), '[]')::text \
        FROM jsonb_array_elements($2::jsonb) AS named JOIN operations AS o \
          ON o.resource = named ->> 0 AND o.idempotency_key = named ->> 1) AS operations";

/// Locks what the batch will write, in an order every batch follows, so that concurrent batches
/// cannot deadlock: first the resources it changes, in key order (returned, to be compared with
/// what it observed: rows observed missing must still be missing), then its chain heads,
/// created where missing, in key order: concurrent appends to one resource take turns and a
/// chain never forks. The heads' insert reads `seen`, which takes every resource lock before
/// it yields, so no head is locked before the resources. Also draws the batch's audit ids, in
/// ascending order, after the transaction id was taken (see `tx::begin_audited`).
const LOCK_AND_DRAW_IDS: &str = "\
    WITH locked AS ( \
      SELECT key, revision FROM resources \
        WHERE key IN (SELECT jsonb_array_elements_text($1::jsonb)) ORDER BY key FOR UPDATE), \
    seen AS MATERIALIZED ( \
      SELECT COALESCE(json_agg(json_build_array(key, revision)), '[]')::text AS rows \
        FROM locked), \
    heads AS ( \
      INSERT INTO audit_chains AS c (resource, seq, hash) \
        SELECT k.resource, 0, $3 \
          FROM seen, jsonb_array_elements_text($2::jsonb) WITH ORDINALITY AS k(resource, ord) \
          ORDER BY k.ord \
      ON CONFLICT (resource) DO UPDATE SET resource = excluded.resource \
      RETURNING c.resource, c.seq, c.hash) \
    SELECT \
     (SELECT rows FROM seen) AS locked, \
     (SELECT COALESCE(json_agg(json_build_array(resource, seq, hash)), '[]')::text FROM heads) \
        AS heads, \
     (SELECT COALESCE(json_agg(id ORDER BY id), '[]')::text \
        FROM (SELECT nextval('audit_id_seq') AS id FROM generate_series(1, $4::bigint)) AS drawn) \
        AS ids";

/// The parts of the statement that applies a batch, each run once and to completion, `{}` its
/// parameter. A part with no rows is left out: even empty, it would open and lock its table and
/// every index of it, and with dozens of backends those locks overflow each one's fast path into
/// the shared lock table (measured: one write per transaction ran 30 % slower with all parts).
const UPDATE_RESOURCES: &str = "\
    updated AS ( \
      UPDATE resources AS r SET highest_token = (v ->> 1)::bigint, \
          revision = (v ->> 2)::bigint, value = decode(v ->> 3, 'hex'), \
          content_type = v ->> 4, updated_at_us = (v ->> 5)::bigint, highest_owner = v ->> 6 \
        FROM jsonb_array_elements({}::jsonb) AS v \
        WHERE r.key = v ->> 0 AND r.revision = (v ->> 7)::bigint \
          AND r.highest_token <= (v ->> 1)::bigint \
        RETURNING 1)";
const INSERT_RESOURCES: &str = "\
    inserted AS ( \
      INSERT INTO resources (key, highest_token, revision, value, content_type, updated_at_us, \
          highest_owner) \
        SELECT v ->> 0, (v ->> 1)::bigint, (v ->> 2)::bigint, decode(v ->> 3, 'hex'), v ->> 4, \
          (v ->> 5)::bigint, v ->> 6 FROM jsonb_array_elements({}::jsonb) AS v \
        ON CONFLICT (key) DO NOTHING \
        RETURNING 1)";
const INSERT_AUDIT: &str = "\
    audited AS ( \
      INSERT INTO audit (at_us, resource, outcome, token, highest_token, revision, \
          idempotency_key, expected_revision, owner, lease, body_sha256, body_len, detail, \
          caller, seq, prev_hash, hash, id) OVERRIDING SYSTEM VALUE \
        SELECT (v ->> 0)::bigint, v ->> 1, v ->> 2, (v ->> 3)::bigint, (v ->> 4)::bigint, \
          (v ->> 5)::bigint, v ->> 6, (v ->> 7)::bigint, v ->> 8, v ->> 9, v ->> 10, \
          (v ->> 11)::bigint, v ->> 12, v ->> 13, (v ->> 14)::bigint, v ->> 15, v ->> 16, \
          (v ->> 17)::bigint \
        FROM jsonb_array_elements({}::jsonb) AS v)";
const ADVANCE_CHAINS: &str = "\
    chained AS ( \
      UPDATE audit_chains AS c SET seq = (v ->> 1)::bigint, hash = v ->> 2 \
        FROM jsonb_array_elements({}::jsonb) AS v WHERE c.resource = v ->> 0)";
const RECORD_OPERATIONS: &str = "\
    recorded AS ( \
      INSERT INTO operations (resource, idempotency_key, token, body_sha256, status, revision, \
          highest_token, audit_id, recorded_at_us) \
        SELECT v ->> 0, v ->> 1, (v ->> 2)::bigint, v ->> 3, (v ->> 4)::bigint, \
          (v ->> 5)::bigint, (v ->> 6)::bigint, (v ->> 7)::bigint, (v ->> 8)::bigint \
        FROM jsonb_array_elements({}::jsonb) AS v)";
const RECORD_SIGHTINGS: &str = concat!(
    "\
    sighted AS ( \
      INSERT INTO ownership_overlaps AS o (resource, stale_token, superseding_token, \
          stale_owner, superseding_owner, first_seen_us, last_seen_us, rejected_writes, state, \
          updated_at_us) \
        SELECT v ->> 0, (v ->> 1)::bigint, (v ->> 2)::bigint, v ->> 3, v ->> 4, \
          (v ->> 5)::bigint, (v ->> 6)::bigint, (v ->> 7)::bigint, 'open', (v ->> 6)::bigint \
        FROM jsonb_array_elements({}::jsonb) AS v ",
    join_open_overlap!(),
    ")"
);

/// The statement applying `rows`, with its parameters: one per part that has rows, numbered
/// in turn. It answers how many resources it updated and inserted (zero for a part left out).
fn application(rows: Rows) -> (String, Vec<String>) {
    let parts = [
        (UPDATE_RESOURCES, rows.update_count, rows.updates),
        (INSERT_RESOURCES, rows.insert_count, rows.inserts),
        (INSERT_AUDIT, rows.audit_count, rows.audit),
        (ADVANCE_CHAINS, rows.head_count, rows.heads),
        (RECORD_OPERATIONS, rows.operation_count, rows.operations),
        (RECORD_SIGHTINGS, rows.sighting_count, rows.sightings),
    ];
    let count_of = |name: &str, present: bool| match present {
        true => format!("(SELECT count(*) FROM {name})"),
        false => "0".to_owned(),
    };
    let mut ctes = Vec::with_capacity(parts.len());
    let mut parameters = Vec::with_capacity(parts.len());
    for (part, count, json) in parts {
        if count > 0 {
            parameters.push(json);
            ctes.push(part.replacen("{}", &format!("${}", parameters.len()), 1));
        }
    }
    let sql = format!(
        "WITH {} SELECT {} AS updated, {} AS inserted",
        ctes.join(", "),
        count_of("updated", rows.update_count > 0),
        count_of("inserted", rows.insert_count > 0),
    );
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
        .fetch_one(&mut *conn)
        .await?;
    Ok(Observed {
        resources: decode_resources(&row.try_get::<String, _>("resources")?)?,
        operations: decode_operations(&row.try_get::<String, _>("operations")?)?,
        audit: None,
    })
}

/// Locks and checks what the batch observed, then applies it, returning the audit ids in order;
/// `None` when a resource was no longer as observed.
pub(super) async fn apply(
    conn: &mut AnyConnection,
    keys: &BTreeSet<&str>,
    plan: &Plan<'_>,
) -> Result<Option<Vec<i64>>, StoreError> {
    let Locked {
        revisions,
        mut heads,
        ids,
    } = lock_and_draw_ids(conn, keys, plan).await?;
    let still_as_observed = plan.changes.iter().all(|change| {
        revisions.get(change.key).copied() == change.observed.map(|s| s.revision.get())
    });
    if !still_as_observed {
        return Ok(None);
    }
    let links = link(&mut heads, plan.entries)?;
    let rows = encode(plan, &links, &ids, &heads)?;
    let planned = (count(rows.update_count), count(rows.insert_count));
    let (sql, parameters) = application(rows);
    let mut query = sqlx::query(&sql);
    for json in parameters {
        query = query.bind(json);
    }
    let applied = query.fetch_one(&mut *conn).await?;
    let done: (i64, i64) = (applied.try_get("updated")?, applied.try_get("inserted")?);
    if done != planned {
        return Ok(None);
    }
    Ok(Some(ids))
}

fn count(rows: usize) -> i64 {
    i64::try_from(rows).unwrap_or(i64::MAX)
}

struct Locked {
    /// The committed revision of each resource the batch changes that exists.
    revisions: HashMap<String, i64>,
    heads: ChainHeads,
    ids: Vec<i64>,
}

async fn lock_and_draw_ids(
    conn: &mut AnyConnection,
    keys: &BTreeSet<&str>,
    plan: &Plan<'_>,
) -> Result<Locked, StoreError> {
    let changed: Vec<&str> = plan.changes.iter().map(|change| change.key).collect();
    let row = sqlx::query(LOCK_AND_DRAW_IDS)
        .bind(to_json(&changed)?)
        .bind(to_json(keys)?)
        .bind(chain::GENESIS)
        .bind(count(plan.entries.len()))
        .fetch_one(&mut *conn)
        .await?;
    let locked: Vec<(String, i64)> = from_json(&row.try_get::<String, _>("locked")?)?;
    let found: Vec<(String, i64, String)> = from_json(&row.try_get::<String, _>("heads")?)?;
    Ok(Locked {
        revisions: locked.into_iter().collect(),
        heads: found
            .into_iter()
            .map(|(resource, seq, hash)| (resource, (seq, hash)))
            .collect(),
        ids: from_json(&row.try_get::<String, _>("ids")?)?,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rows(update_count: usize, sighting_count: usize) -> Rows {
        let json = |name: &str, count: usize| (format!("[\"{name}\"]"), count);
        let (updates, update_count) = json("updates", update_count);
        let (inserts, insert_count) = json("inserts", 0);
        let (audit, audit_count) = json("audit", 2);
        let (heads, head_count) = json("heads", 1);
        let (operations, operation_count) = json("operations", 0);
        let (sightings, sighting_count) = json("sightings", sighting_count);
        Rows {
            updates,
            update_count,
            inserts,
            insert_count,
            audit,
            audit_count,
            heads,
            head_count,
            operations,
            operation_count,
            sightings,
            sighting_count,
        }
    }

    #[test]
    fn parts_without_rows_are_left_out_and_the_parameters_follow_in_order() {
        let (sql, parameters) = application(rows(0, 1));
        assert_eq!(
            parameters,
            ["[\"audit\"]", "[\"heads\"]", "[\"sightings\"]"]
        );
        for absent in [
            "updated AS",
            "inserted AS",
            "recorded AS",
            "UPDATE resources",
        ] {
            assert!(!sql.contains(absent), "{absent} in {sql}");
        }
        assert!(sql.contains("jsonb_array_elements($1::jsonb)"));
        assert!(sql.contains("jsonb_array_elements($3::jsonb) AS v ON CONFLICT"));
        assert!(!sql.contains("$4"));
        assert!(sql.ends_with("SELECT 0 AS updated, 0 AS inserted"), "{sql}");

        let (sql, parameters) = application(rows(3, 0));
        assert_eq!(parameters[0], "[\"updates\"]");
        assert!(sql.starts_with("WITH updated AS"));
        assert!(sql.ends_with("SELECT (SELECT count(*) FROM updated) AS updated, 0 AS inserted"));
    }
}
