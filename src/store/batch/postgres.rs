//! Group commit's PostgreSQL statements: a batch is one statement that applies it and commits,
//! when the daemon knows the state of its resources from its own earlier commits (`known`);
//! otherwise a transaction of three round trips (BEGIN, observe, apply) and its COMMIT.
//!
//! Observation takes no locks: a batch decides on what it read, or on what it knew, and its
//! application is a compare-and-set on all of that it changes. A resource is updated only at
//! the revision and chain head (position and hash) decided on, a `chain_heads` row advanced
//! only from the position observed, a resource or head observed missing inserted only if still
//! missing (see `chain_heads`), and, for a batch decided on known state, no operation it names
//! may have been recorded. The statement counts what it changed and hands the counts to
//! `fencewatch_batch_as_observed` (a migration's), which fails the statement on any shortfall:
//! a concurrent commit came between, nothing of the batch is applied, and it is decided again
//! on a fresh observation. The updates lock rows as they go, resources first and then chain
//! heads, each in key order (see `application`), so concurrent batches wait for each other
//! instead of deadlocking.
//!
//! The audit ids are drawn by the statement itself, after it has taken its transaction id (see
//! `tx::begin_audited`), and returned in order.
//!
//! Rows travel as `jsonb` arrays of objects named by column, like SQLite's (`rows`), turned into
//! typed rows by `jsonb_populate_recordset` (a table's row type) or `jsonb_to_recordset` (a
//! row with what it was decided on): one statement text per shape, so it stays prepared, where
//! a parameter per value took one statement per power-of-two chunk of rows, with more round
//! trips and executor start-ups (docs/performance.md).

use super::dialect::{self, Closing, Dialect, Opening};
use super::plan::Plan;
use super::rows::{
    decode_operations, decode_resources, encode, from_json, join_open_overlap, to_json, Rows,
};
use super::shared::Observed;
use crate::domain::FencedWrite;
use crate::store::native::{Conn, Native};
use crate::store::StoreError;
use sqlx::{PgConnection, Row};
use std::collections::BTreeSet;

/// The batch's resources, the operations its idempotency keys name and its `chain_heads` rows,
/// as JSON arrays (the first two decoded as SQLite's observation is).
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
        AS heads";

/// The audit ids of the batch, `$1` of them, numbered by the rows' places in it: drawn after
/// the transaction id is taken, so that a gap the live tail sees belongs to a transaction its
/// snapshots can wait out (see `tx::begin_audited`).
const DRAW_IDS: &str = "\
      drawn AS MATERIALIZED (SELECT n, nextval('audit_id_seq') AS id \
        FROM (SELECT pg_current_xact_id() AS xid) AS xact, generate_series(1, $1::bigint) AS n \
        WHERE xact.xid IS NOT NULL)";

/// The parts of the statement that applies a batch, each run once and to completion, `{}` its
/// parameter; `application` names them. A part with no rows is left out: even empty, it would
/// open and lock its table and every index of it, and with dozens of backends those locks
/// overflow each one's fast path into the shared lock table (measured: docs/performance.md).
/// One statement for every resource with a row, accepted or only audited, so that each
/// batch locks its resources in one key order.
const UPDATE_RESOURCES: &str = "\
      UPDATE resources AS r SET highest_token = v.highest_token, revision = v.revision, \
          value = CASE WHEN v.accepted THEN decode(v.value, 'hex') ELSE r.value END, \
          content_type = CASE WHEN v.accepted THEN v.content_type ELSE r.content_type END, \
          updated_at_us = CASE WHEN v.accepted THEN v.updated_at_us ELSE r.updated_at_us END, \
          highest_owner = CASE WHEN v.accepted THEN v.highest_owner ELSE r.highest_owner END, \
          chain_seq = v.chain_seq, chain_hash = v.chain_hash \
        FROM jsonb_to_recordset({}::jsonb) AS v (key text, accepted boolean, \
          highest_token bigint, revision bigint, value text, content_type text, \
          updated_at_us bigint, highest_owner text, chain_seq bigint, chain_hash text, \
          observed_revision bigint, observed_chain_seq bigint, observed_chain_hash text) \
        WHERE r.key = v.key AND r.revision = v.observed_revision \
          AND r.highest_token <= v.highest_token AND r.chain_seq = v.observed_chain_seq \
          AND r.chain_hash = v.observed_chain_hash \
        RETURNING 1";
const INSERT_RESOURCES: &str = "\
      INSERT INTO resources (key, highest_token, revision, value, content_type, updated_at_us, \
          highest_owner, chain_seq, chain_hash) \
        SELECT v.key, v.highest_token, v.revision, decode(v.value, 'hex'), v.content_type, \
          v.updated_at_us, v.highest_owner, v.chain_seq, v.chain_hash \
        FROM jsonb_to_recordset({}::jsonb) AS v (key text, highest_token bigint, \
          revision bigint, value text, content_type text, updated_at_us bigint, \
          highest_owner text, chain_seq bigint, chain_hash text) \
        ON CONFLICT (key) DO NOTHING \
        RETURNING 1";
/// The rows' `id`s are their places in the batch: each takes the id drawn for its place.
const INSERT_AUDIT: &str = "\
      INSERT INTO audit (at_us, resource, outcome, token, highest_token, revision, \
          idempotency_key, expected_revision, owner, lease, body_sha256, body_len, detail, \
          caller, seq, prev_hash, hash, id) OVERRIDING SYSTEM VALUE \
        SELECT v.at_us, v.resource, v.outcome, v.token, v.highest_token, v.revision, \
          v.idempotency_key, v.expected_revision, v.owner, v.lease, v.body_sha256, \
          v.body_len, v.detail, v.caller, v.seq, v.prev_hash, v.hash, drawn.id \
        FROM jsonb_populate_recordset(NULL::audit, {}::jsonb) AS v \
          JOIN drawn ON drawn.n = v.id";
/// Audit rows outside a batch (`refused`), in a transaction that took its id first (see
/// `tx::begin_audited`): `$1` rows, `$2` the `AuditRow`s. Answers each row's id, resource and
/// seq.
pub(crate) fn insert_audit_alone() -> String {
    format!(
        "WITH {DRAW_IDS}, audited AS ({} RETURNING id, resource, seq) \
         SELECT id, resource, seq FROM audited",
        INSERT_AUDIT.replacen("{}", "$2", 1)
    )
}
const ADVANCE_CHAINS: &str = "\
      UPDATE chain_heads AS c SET seq = v.seq, hash = v.hash \
        FROM jsonb_to_recordset({}::jsonb) \
          AS v (resource text, seq bigint, hash text, observed_seq bigint) \
        WHERE c.resource = v.resource AND c.seq = v.observed_seq \
        RETURNING 1";
const START_CHAINS: &str = "\
      INSERT INTO chain_heads (resource, seq, hash) \
        SELECT v.resource, v.seq, v.hash \
        FROM jsonb_populate_recordset(NULL::chain_heads, {}::jsonb) AS v \
        ON CONFLICT (resource) DO NOTHING \
        RETURNING 1";
/// `audit_id` is the audit row's place in the batch, as in `INSERT_AUDIT`. `recorded_at_us` is
/// the database's clock, as the cut-off that prunes it is (`retention`): by the daemons' own
/// clocks, one running behind would record operations that every daemon then forgets early.
const RECORD_OPERATIONS: &str = "\
      INSERT INTO operations (resource, idempotency_key, token, body_sha256, status, revision, \
          highest_token, audit_id, recorded_at_us) \
        SELECT v.resource, v.idempotency_key, v.token, v.body_sha256, v.status, v.revision, \
          v.highest_token, drawn.id, (EXTRACT(EPOCH FROM clock_timestamp()) * 1000000)::BIGINT \
        FROM jsonb_populate_recordset(NULL::operations, {}::jsonb) AS v \
          JOIN drawn ON drawn.n = v.audit_id";
const RECORD_SIGHTINGS: &str = concat!(
    "\
      INSERT INTO ownership_overlaps AS o (resource, stale_token, superseding_token, \
          stale_owner, superseding_owner, first_seen_us, last_seen_us, rejected_writes, state, \
          updated_at_us) \
        SELECT v.resource, v.stale_token, v.superseding_token, v.stale_owner, \
          v.superseding_owner, v.first_seen_us, v.last_seen_us, v.rejected_writes, 'open', \
          v.last_seen_us \
        FROM jsonb_populate_recordset(NULL::ownership_overlaps, {}::jsonb) AS v ",
    join_open_overlap!()
);
/// Operations the batch names that were recorded before it: a batch decided on known state
/// assumed there were none.
const RECORDED_BEFORE: &str = "\
      SELECT count(*) FROM jsonb_array_elements({}::jsonb) AS named JOIN operations AS o \
        ON o.resource = named ->> 0 AND o.idempotency_key = named ->> 1";

/// The statement applying `rows`, with its parameters: `$1` the number of audit rows, `$2`
/// to `$5` how many resources it must update and insert and chains it must advance and start,
/// then one per part that has rows, numbered in turn, and last the operations the batch names
/// when it was decided on known state (`must_be_unrecorded`). It answers the audit ids in
/// order, or fails with `fencewatch_batch_as_observed`'s error. The counts are read in that
/// order, and reading a part runs it: so a batch locks its resources before its chain heads,
/// and each part takes its rows in key order, as every batch does.
fn application(rows: Rows, must_be_unrecorded: Option<String>) -> (String, Vec<String>) {
    // (name, whether its count is checked, statement, rows, parameter)
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
    const FIRST_PART_PARAMETER: usize = 6;
    let mut ctes = vec![DRAW_IDS.to_owned()];
    let mut parameters = Vec::with_capacity(parts.len() + 1);
    let mut counts = Vec::new();
    for (name, counted, statement, count, json) in parts {
        if count > 0 {
            parameters.push(json);
            let placeholder = format!("${}", FIRST_PART_PARAMETER + parameters.len() - 1);
            let statement = statement.replacen("{}", &placeholder, 1);
            ctes.push(format!("{name} AS ( {statement})"));
        }
        if counted {
            counts.push(match count > 0 {
                true => format!("(SELECT count(*) FROM {name}) AS {name}"),
                false => format!("0::bigint AS {name}"),
            });
        }
    }
    let unrecorded = match must_be_unrecorded {
        Some(named) => {
            parameters.push(named);
            let placeholder = format!("${}", FIRST_PART_PARAMETER + parameters.len() - 1);
            format!("({}) = 0", RECORDED_BEFORE.replacen("{}", &placeholder, 1))
        }
        None => "true".to_owned(),
    };
    let sql = format!(
        "WITH {}, counts AS MATERIALIZED (SELECT {}) \
         SELECT fencewatch_batch_as_observed(updated = $2 AND inserted = $3 AND advanced = $4 \
           AND started = $5 AND {unrecorded}, \
           (SELECT json_agg(id ORDER BY n) FROM drawn)::text) AS ids FROM counts",
        ctes.join(", "),
        counts.join(", ")
    );
    (sql, parameters)
}

/// PostgreSQL's dialect of the batch engine, for batches it observes in a transaction; a batch
/// decided on known state is applied by `apply` alone.
pub(super) struct Postgres;

impl Dialect for Postgres {
    type Connection = PgConnection;
    /// The statement that applies a batch draws its ids.
    type Position = ();
    const KNOWS_STATE: bool = true;

    async fn observe(
        &self,
        conn: &mut PgConnection,
        _opening: Opening,
        keys: &BTreeSet<&str>,
        writes: &[FencedWrite],
    ) -> Result<Observed<()>, StoreError> {
        observe(conn, keys, writes).await
    }

    fn native(conn: &mut PgConnection) -> Conn<'_> {
        Native::Postgres(conn)
    }

    /// The compare-and-set counts only what it changes itself.
    fn expect_changes(_position: &mut (), _rows: i64) {}

    async fn apply(
        &self,
        conn: &mut PgConnection,
        _position: (),
        plan: &Plan<'_>,
        _closing: Closing<'_>,
    ) -> Result<dialect::Application, StoreError> {
        Ok(match apply(conn, plan, DecidedOn::Observed).await? {
            Application::Applied { ids } => dialect::Application::Applied { ids, ticket: None },
            Application::Changed { drawn_ids } => dialect::Application::Changed { drawn_ids },
        })
    }
}

async fn observe(
    conn: &mut PgConnection,
    keys: &BTreeSet<&str>,
    writes: &[FencedWrite],
) -> Result<Observed<()>, StoreError> {
    let named: Vec<(&str, &str)> = writes.iter().filter_map(FencedWrite::operation).collect();
    let row = sqlx::query(OBSERVE)
        .bind(to_json(keys)?)
        .bind(to_json(&named)?)
        .fetch_one(&mut *conn)
        .await?;
    Ok(Observed {
        resources: decode_resources(&row.try_get::<String, _>("resources")?)?,
        operations: decode_operations(&row.try_get::<String, _>("operations")?)?,
        unwritten_heads: from_json(&row.try_get::<String, _>("heads")?)?,
        audit: (),
    })
}

/// What a batch's compare-and-set found.
pub(super) enum Application {
    /// Everything it changed was as observed: the audit ids, in order.
    Applied { ids: Vec<i64> },
    /// Something was no longer as observed and nothing was applied; in a transaction, it must
    /// be rolled back. The ids the statement drew will never have a row.
    Changed { drawn_ids: Vec<i64> },
}

/// What a batch was decided on.
pub(super) enum DecidedOn<'a> {
    /// An observation in the same transaction.
    Observed,
    /// The resources' state as this daemon's own commits left it, with no observation; the
    /// operations the batch names are assumed never recorded, which the statement checks.
    Known { writes: &'a [FencedWrite] },
}

/// Applies the batch as a compare-and-set on what it was decided on. Outside a transaction the
/// statement commits itself.
pub(super) async fn apply(
    conn: &mut PgConnection,
    plan: &Plan<'_>,
    decided_on: DecidedOn<'_>,
) -> Result<Application, StoreError> {
    // Encoded with the rows' places in the batch for ids: the statement swaps in those it draws.
    let places: Vec<i64> = (1..).take(plan.entries.len()).collect();
    let rows = encode(plan, &places)?;
    let planned = [
        rows.audit_count,
        rows.update_count,
        rows.insert_count,
        rows.head_advance_count,
        rows.head_start_count,
    ];
    let must_be_unrecorded = match decided_on {
        DecidedOn::Known { writes } => {
            let named: Vec<(&str, &str)> =
                writes.iter().filter_map(FencedWrite::operation).collect();
            (!named.is_empty()).then(|| to_json(&named)).transpose()?
        }
        DecidedOn::Observed => None,
    };
    let (sql, parameters) = application(rows, must_be_unrecorded);
    let mut query = sqlx::query(&sql);
    for count in planned {
        query = query.bind(count_of(count));
    }
    for json in parameters {
        query = query.bind(json);
    }
    match query.fetch_one(&mut *conn).await {
        Ok(row) => Ok(Application::Applied {
            ids: from_json(&row.try_get::<String, _>("ids")?)?,
        }),
        Err(sqlx::Error::Database(error)) if error.code().as_deref() == Some(NOT_AS_OBSERVED) => {
            // The ids it drew, from the error's detail; should they be unreadable, the live
            // tail proves them final from snapshots instead.
            let drawn_ids = error
                .try_downcast_ref::<sqlx::postgres::PgDatabaseError>()
                .and_then(|error| error.detail())
                .and_then(|detail| serde_json::from_str(detail).ok())
                .unwrap_or_default();
            Ok(Application::Changed { drawn_ids })
        }
        Err(error) => Err(error.into()),
    }
}

/// The SQLSTATE of `fencewatch_batch_as_observed`'s error.
const NOT_AS_OBSERVED: &str = "FW409";

fn count_of(rows: usize) -> i64 {
    i64::try_from(rows).unwrap_or(i64::MAX)
}

#[cfg(test)]
mod tests {
    use super::super::rows::test_rows as rows;
    use super::*;

    #[test]
    fn parts_without_rows_are_left_out_and_the_parameters_follow_in_order() {
        let (sql, parameters) = application(rows(0, 1, 1, 0), None);
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
        // The ids are drawn first, then the parts, their parameters after the five counts.
        assert!(sql.starts_with("WITH drawn AS MATERIALIZED ("), "{sql}");
        assert!(sql.contains("), advanced AS ( UPDATE chain_heads"), "{sql}");
        assert!(sql.contains(
            "jsonb_populate_recordset(NULL::ownership_overlaps, $8::jsonb) AS v ON CONFLICT"
        ));
        assert!(!sql.contains("$9"));
        assert!(
            sql.contains(
                "counts AS MATERIALIZED (SELECT 0::bigint AS updated, 0::bigint AS inserted, \
                 (SELECT count(*) FROM advanced) AS advanced, 0::bigint AS started)"
            ),
            "{sql}"
        );
        assert!(sql.contains("AND started = $5 AND true,"), "{sql}");

        let (sql, parameters) = application(rows(3, 0, 0, 2), Some("[[\"r\",\"k\"]]".into()));
        assert_eq!(parameters[0], "[\"updates\"]");
        assert_eq!(
            parameters.last().map(String::as_str),
            Some("[[\"r\",\"k\"]]")
        );
        assert!(sql.contains("), updated AS ( UPDATE resources"), "{sql}");
        assert!(
            sql.contains(
                "counts AS MATERIALIZED (SELECT (SELECT count(*) FROM updated) AS updated, \
                 0::bigint AS inserted, 0::bigint AS advanced, \
                 (SELECT count(*) FROM started) AS started)"
            ),
            "{sql}"
        );
        // The operations named must not have been recorded before: the last parameter.
        let last = format!("${}", 5 + parameters.len());
        assert!(
            sql.contains(&format!("jsonb_array_elements({last}::jsonb) AS named")),
            "{sql}"
        );
    }
}
