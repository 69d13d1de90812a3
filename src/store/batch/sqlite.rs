//! Group commit's SQLite statements: a batch is observed with one statement and applied with
//! one more, whatever its size.
//!
//! Every statement is a round trip to the connection's worker thread (two thread wake-ups),
//! and under load those hand-offs, not SQLite's own work, were where a batch's time went. So the
//! batch travels as JSON parameters (`json_each`), the observation comes back as one row of
//! JSON arrays, and all writes are one multi-statement execution whose summed row count is
//! checked. The texts take a few shapes (a step without rows is left out, see `application`),
//! so they stay prepared.
//!
//! The transaction is managed in the same statements, not in round trips of its own: the
//! batch's first observation begins it (`Opening::Begin`) and its last application checks the
//! row count and commits (`Closing::Commit`). A batch is then two round trips, not five. A
//! failure anywhere leaves the transaction open; the caller rolls it back.
//!
//! The audit ids are assigned here, after the largest ever issued: the connection is the only
//! writer, and should another process commit after this transaction's read, SQLite refuses the
//! write (`SQLITE_BUSY_SNAPSHOT`) and the batch runs again.

use super::dialect::{Application, Closing, Dialect, Opening};
use super::plan::{Change, Plan};
use super::rows::{
    decode_operations, decode_resources, encode, from_json, join_open_overlap, to_json, Rows,
};
use super::shared::Observed;
use crate::domain::FencedWrite;
use crate::store::error::corrupt;
use crate::store::native::{Conn, Native};
use crate::store::wal_sync::CommitTicket;
use crate::store::StoreError;
use sqlx::{Row, SqliteConnection};
use std::collections::BTreeSet;

/// SQLite's dialect of the batch engine.
pub(super) struct Sqlite;

/// SQLite: the batch's audit rows go after the largest id ever issued.
pub(super) struct SqlitePosition {
    pub last_id: i64,
    /// The connection's count of changed rows when the batch looked, for the check before the
    /// commit.
    pub changes_before: i64,
}

impl Dialect for Sqlite {
    type Connection = SqliteConnection;
    type Position = SqlitePosition;

    async fn observe(
        &self,
        conn: &mut SqliteConnection,
        opening: Opening,
        keys: &BTreeSet<&str>,
        writes: &[FencedWrite],
    ) -> Result<Observed<SqlitePosition>, StoreError> {
        observe(conn, opening, keys, writes).await
    }

    fn native(conn: &mut SqliteConnection) -> Conn<'_> {
        Native::Sqlite(conn)
    }

    fn expect_changes(position: &mut SqlitePosition, rows: i64) {
        position.changes_before += rows;
    }

    async fn apply(
        &self,
        conn: &mut SqliteConnection,
        position: SqlitePosition,
        plan: &Plan<'_>,
        closing: Closing<'_>,
    ) -> Result<Application, StoreError> {
        let (ids, ticket) = apply(conn, position, plan, closing).await?;
        Ok(Application::Applied { ids, ticket })
    }

    /// One writer: every batch observes in its own transaction anyway.
    fn applied(&self, _changes: &[Change<'_>]) {}
}

macro_rules! observation {
    () => {
        "SELECT \
     (SELECT json_group_array(json_array(key, highest_token, revision, highest_owner, \
             chain_seq, chain_hash)) \
        FROM resources WHERE key IN (SELECT value FROM json_each($1))) AS resources, \
     (SELECT json_group_array(json_array(resource, seq, hash)) \
        FROM chain_heads WHERE resource IN (SELECT value FROM json_each($1))) AS heads, \
     (SELECT json_group_array(json_array(o.resource, o.idempotency_key, o.token, o.body_sha256, \
             o.status, o.revision, o.highest_token, o.audit_id)) \
        FROM json_each($2) AS named JOIN operations AS o \
          ON o.resource = named.value ->> 0 AND o.idempotency_key = named.value ->> 1) \
        AS operations, \
     max(COALESCE((SELECT seq FROM sqlite_sequence WHERE name = 'audit'), 0), \
         COALESCE((SELECT max(id) FROM audit), 0)) AS last_audit_id, \
     total_changes() AS changes_before"
    };
}

const OBSERVE: &str = observation!();
/// The level cannot change inside a transaction, hence before the BEGIN; the commit restores
/// FULL (see `apply`). Deferred, not IMMEDIATE: another process's commit after the observation
/// makes the first write fail with `SQLITE_BUSY_SNAPSHOT`, and the batch runs again on fresh
/// state.
const BEGIN_UNSYNCED_AND_OBSERVE: &str =
    concat!("PRAGMA synchronous = NORMAL; BEGIN; ", observation!());
const BEGIN_AND_OBSERVE: &str = concat!("BEGIN; ", observation!());

async fn observe(
    conn: &mut SqliteConnection,
    opening: Opening,
    keys: &BTreeSet<&str>,
    writes: &[FencedWrite],
) -> Result<Observed<SqlitePosition>, StoreError> {
    let named: Vec<(&str, &str)> = writes.iter().filter_map(FencedWrite::operation).collect();
    let sql = match opening {
        Opening::Begin { unsynced: true } => BEGIN_UNSYNCED_AND_OBSERVE,
        Opening::Begin { unsynced: false } => BEGIN_AND_OBSERVE,
        Opening::Within => OBSERVE,
    };
    // All rows, not `fetch_one`: that stops at the end of the first statement, here the BEGIN.
    let rows = sqlx::query(sql)
        .bind(to_json(&keys)?)
        .bind(to_json(&named)?)
        .fetch_all(&mut *conn)
        .await?;
    let row = rows
        .first()
        .ok_or_else(|| corrupt("the observation returned no row"))?;

    Ok(Observed {
        resources: decode_resources(&row.try_get::<String, _>("resources")?)?,
        operations: decode_operations(&row.try_get::<String, _>("operations")?)?,
        unwritten_heads: from_json(&row.try_get::<String, _>("heads")?)?,
        audit: SqlitePosition {
            last_id: row.try_get("last_audit_id")?,
            changes_before: row.try_get("changes_before")?,
        },
    })
}

/// Each batch array's rows, each turned into JSONB once. `json_each` gives an element that is
/// itself an array as JSON text, and SQLite evaluated `v.value` anew for every `->>` on it:
/// for an audit row, eighteen conversions to text and as many parses, which made SQLite's JSON
/// functions the writer thread's main work (docs/performance.md). A materialized row is
/// converted once, and `->>` on a JSONB blob reads it where it lies.
macro_rules! rows {
    ($param:literal) => {
        concat!(
            "WITH v AS MATERIALIZED (SELECT jsonb(value) AS value FROM json_each(",
            $param,
            ")) "
        )
    };
}

/// Up to seven statements, then the check. Each row of an update or insert counts one change,
/// and an upsert's row counts one whether it inserts or updates, so the sum tells whether every
/// resource and chain head was still as observed (the compare-and-set on its revision and chain
/// position held). The check is a statement, so that a commit in the same execution never
/// follows a failed one: a row whose CHECK constraint fails unless the changes since the
/// observation ($9) are the planned ($8).
///
/// A step with no rows is left out (`application`), as on PostgreSQL: even empty, it ran its
/// JSON and table steps, and sqlx sends every statement's result to the group-commit thread as a
/// message of its own, often a thread wake-up. Most batches have rows for three of the seven.
/// Each step keeps its parameter number, so the parameters are bound the same whatever is left
/// out (an unused one binds nothing), and the few texts that occur stay prepared.
const UPDATE_RESOURCES: &str = concat!(
    rows!("$1"),
    "UPDATE resources SET highest_token = v.value ->> 'highest_token', \
        revision = v.value ->> 'revision', \
        value = CASE WHEN v.value ->> 'accepted' THEN unhex(v.value ->> 'value') \
            ELSE resources.value END, \
        content_type = CASE WHEN v.value ->> 'accepted' THEN v.value ->> 'content_type' \
            ELSE resources.content_type END, \
        updated_at_us = CASE WHEN v.value ->> 'accepted' THEN v.value ->> 'updated_at_us' \
            ELSE resources.updated_at_us END, \
        highest_owner = CASE WHEN v.value ->> 'accepted' THEN v.value ->> 'highest_owner' \
            ELSE resources.highest_owner END, \
        chain_seq = v.value ->> 'chain_seq', chain_hash = v.value ->> 'chain_hash' \
      FROM v \
      WHERE resources.key = v.value ->> 'key' \
        AND resources.revision = v.value ->> 'observed_revision' \
        AND resources.highest_token <= v.value ->> 'highest_token' \
        AND resources.chain_seq = v.value ->> 'observed_chain_seq' \
        AND resources.chain_hash = v.value ->> 'observed_chain_hash'; "
);
const INSERT_RESOURCES: &str = concat!(
    rows!("$2"),
    "INSERT INTO resources (key, highest_token, revision, value, content_type, updated_at_us, \
        highest_owner, chain_seq, chain_hash) \
      SELECT v.value ->> 'key', v.value ->> 'highest_token', v.value ->> 'revision', \
        unhex(v.value ->> 'value'), v.value ->> 'content_type', v.value ->> 'updated_at_us', \
        v.value ->> 'highest_owner', v.value ->> 'chain_seq', v.value ->> 'chain_hash' \
      FROM v WHERE true \
      ON CONFLICT (key) DO NOTHING; "
);
const ADVANCE_HEADS: &str = concat!(
    rows!("$3"),
    "UPDATE chain_heads SET seq = v.value ->> 'seq', hash = v.value ->> 'hash' FROM v \
      WHERE chain_heads.resource = v.value ->> 'resource' \
        AND chain_heads.seq = v.value ->> 'observed_seq'; "
);
const START_HEADS: &str = concat!(
    rows!("$4"),
    "INSERT INTO chain_heads (resource, seq, hash) \
      SELECT v.value ->> 'resource', v.value ->> 'seq', v.value ->> 'hash' FROM v WHERE true \
      ON CONFLICT (resource) DO NOTHING; "
);
/// The audit rows of `$param` (`AuditRow`s; a null `id` is assigned by SQLite; digests as hex,
/// stored as their bytes), as a statement
/// of the batch or, with `RETURNING`, alone (`INSERT_AUDIT_ALONE`). A macro so that both are
/// constant text.
macro_rules! insert_audit {
    ($param:literal) => {
        concat!(
            rows!($param),
            "INSERT INTO audit (at_us, resource, outcome, token, highest_token, revision, \
                idempotency_key, expected_revision, owner, lease, body_sha256, body_len, \
                detail, caller, seq, prev_hash, hash, id) \
              SELECT v.value ->> 'at_us', v.value ->> 'resource', v.value ->> 'outcome', \
                v.value ->> 'token', v.value ->> 'highest_token', v.value ->> 'revision', \
                v.value ->> 'idempotency_key', v.value ->> 'expected_revision', \
                v.value ->> 'owner', v.value ->> 'lease', unhex(v.value ->> 'body_sha256'), \
                v.value ->> 'body_len', v.value ->> 'detail', v.value ->> 'caller', \
                v.value ->> 'seq', unhex(v.value ->> 'prev_hash'), unhex(v.value ->> 'hash'), \
                v.value ->> 'id' \
              FROM v WHERE true"
        )
    };
}
const INSERT_AUDIT: &str = concat!(insert_audit!("$5"), "; ");
/// Audit rows outside a batch (`refused`), answering each row's id, resource and seq.
pub(crate) const INSERT_AUDIT_ALONE: &str =
    concat!(insert_audit!("$1"), " RETURNING id, resource, seq");
const INSERT_OPERATIONS: &str = concat!(
    rows!("$6"),
    "INSERT INTO operations (resource, idempotency_key, token, body_sha256, status, revision, \
        highest_token, audit_id, recorded_at_us) \
      SELECT v.value ->> 'resource', v.value ->> 'idempotency_key', v.value ->> 'token', \
        v.value ->> 'body_sha256', v.value ->> 'status', v.value ->> 'revision', \
        v.value ->> 'highest_token', v.value ->> 'audit_id', v.value ->> 'recorded_at_us' \
      FROM v; "
);
const RECORD_SIGHTINGS: &str = concat!(
    rows!("$7"),
    "INSERT INTO ownership_overlaps AS o (resource, stale_token, superseding_token, \
        stale_owner, superseding_owner, first_seen_us, last_seen_us, rejected_writes, state, \
        updated_at_us) \
      SELECT v.value ->> 'resource', v.value ->> 'stale_token', \
        v.value ->> 'superseding_token', v.value ->> 'stale_owner', \
        v.value ->> 'superseding_owner', v.value ->> 'first_seen_us', \
        v.value ->> 'last_seen_us', v.value ->> 'rejected_writes', 'open', \
        v.value ->> 'last_seen_us' \
      FROM v WHERE true ",
    join_open_overlap!(),
    "; "
);
/// FULL again once committed: every other transaction of the writer syncs its own commit.
const COMMIT: &str = "; COMMIT; PRAGMA synchronous = FULL";

/// The application's text for `rows`: the steps that have rows, in their fixed order, then the
/// check, and with `commit` the commit.
fn application(rows: &Rows, commit: bool) -> String {
    let steps = [
        (rows.update_count, UPDATE_RESOURCES),
        (rows.insert_count, INSERT_RESOURCES),
        (rows.head_advance_count, ADVANCE_HEADS),
        (rows.head_start_count, START_HEADS),
        (rows.audit_count, INSERT_AUDIT),
        (rows.operation_count, INSERT_OPERATIONS),
        (rows.sighting_count, RECORD_SIGHTINGS),
    ];
    let mut sql = String::with_capacity(4096);
    for (_, step) in steps.iter().filter(|(count, _)| *count > 0) {
        sql.push_str(step);
    }
    sql.push_str(CHECK);
    if commit {
        sql.push_str(COMMIT);
    }
    sql
}

/// Fails, stopping the execution it is part of, unless the connection changed `planned` rows
/// since it had changed `before`.
macro_rules! batch_check {
    ($planned:literal, $before:literal) => {
        concat!(
            "INSERT OR REPLACE INTO temp.batch_check (id, unapplied) VALUES (1, ",
            $planned,
            " - (total_changes() - ",
            $before,
            "))"
        )
    };
}

const CHECK: &str = batch_check!("$8", "$9");

/// The table the check writes to, one per writer connection. A temporary table stays in
/// SQLite's memory (with its journal) until it outgrows the cache, which one row never does.
pub(crate) const CREATE_BATCH_CHECK: &str = "CREATE TEMP TABLE IF NOT EXISTS batch_check ( \
         id INTEGER PRIMARY KEY, \
         unapplied INTEGER NOT NULL CHECK (unapplied = 0));";

/// Applies a decided batch after the rows it observed, returning the audit ids in order, and
/// with `Closing::Commit` commits it. A resource no longer as observed fails the check: a bug,
/// since a stale snapshot cannot write at all.
async fn apply(
    conn: &mut SqliteConnection,
    audit: SqlitePosition,
    plan: &Plan<'_>,
    closing: Closing<'_>,
) -> Result<(Vec<i64>, Option<CommitTicket>), StoreError> {
    let ids: Vec<i64> = (audit.last_id + 1..).take(plan.entries.len()).collect();
    let encoded = encode(plan, &ids);
    let expected = encoded.guarded_count()
        + encoded.audit.len()
        + encoded.operations.len()
        + encoded.sightings.len();
    let rows = Rows::json(&encoded)?;
    let ticket = match closing {
        Closing::Commit { unsynced } => unsynced.map(|wal| wal.begin_commit()).transpose()?,
        Closing::Within => None,
    };
    let sql = application(&rows, matches!(closing, Closing::Commit { .. }));
    sqlx::query(&sql)
        .bind(rows.updates)
        .bind(rows.inserts)
        .bind(rows.head_advances)
        .bind(rows.head_starts)
        .bind(rows.audit)
        .bind(rows.operations)
        .bind(rows.sightings)
        .bind(expected as i64)
        .bind(audit.changes_before)
        .execute(&mut *conn)
        .await
        .map_err(unapplied)?;
    Ok((ids, ticket))
}

/// The check's failure, named.
fn unapplied(error: sqlx::Error) -> StoreError {
    match &error {
        sqlx::Error::Database(database) if database.message().contains("unapplied") => corrupt(
            "a batch changed other rows than it planned: a resource was no longer as observed",
        ),
        _ => error.into(),
    }
}

#[cfg(test)]
mod tests {
    use super::super::rows::tests::test_encoded;

    fn test_rows(updates: usize, sightings: usize, advances: usize, starts: usize) -> Rows {
        Rows::json(&test_encoded(updates, sightings, advances, starts)).expect("encode")
    }
    use super::*;
    use crate::store::{Store, StoreOptions};
    use sqlx::Executor;

    #[test]
    fn steps_without_rows_are_left_out_and_keep_their_parameters() {
        let sql = application(&test_rows(3, 0, 1, 0), true);
        for (present, step) in [
            (true, "UPDATE resources"),
            (false, "INSERT INTO resources"),
            (true, "UPDATE chain_heads"),
            (false, "INSERT INTO chain_heads"),
            (true, "INSERT INTO audit"),
            (false, "INSERT INTO operations"),
            (false, "INSERT INTO ownership_overlaps"),
        ] {
            assert_eq!(sql.contains(step), present, "{step} in {sql}");
        }
        for (present, parameter) in [(true, "$1"), (false, "$2"), (true, "$3"), (false, "$4")] {
            let bound = format!("json_each({parameter})");
            assert_eq!(sql.contains(&bound), present, "{bound} in {sql}");
        }
        assert!(sql.contains("json_each($5)") && sql.contains("$8") && sql.contains("$9"));
        assert!(
            sql.ends_with("; COMMIT; PRAGMA synchronous = FULL"),
            "{sql}"
        );

        let within = application(&test_rows(0, 2, 0, 0), false);
        assert!(
            within.starts_with(concat!(rows!("$5"), "INSERT INTO audit")),
            "{within}"
        );
        assert!(within.contains("INSERT INTO ownership_overlaps"));
        assert!(within.ends_with(CHECK), "{within}");
    }

    const CHECKED_COMMIT: &str = concat!(
        "BEGIN; INSERT INTO chain_heads (resource, seq, hash) VALUES ('r', 1, 'h'); ",
        batch_check!("$1", "$2"),
        "; COMMIT"
    );

    async fn chain_rows(conn: &mut SqliteConnection) -> i64 {
        sqlx::query_scalar("SELECT count(*) FROM chain_heads")
            .fetch_one(&mut *conn)
            .await
            .unwrap()
    }

    #[tokio::test]
    async fn a_failed_check_stops_the_commit_after_it() {
        let folder = tempfile::tempdir().unwrap();
        let url = format!("sqlite://{}", folder.path().join("db").display());
        let store = Store::open(&url, &StoreOptions::default()).await.unwrap();
        let mut conn = store.sqlite_writer().acquire().await.unwrap();
        let before: i64 = sqlx::query_scalar("SELECT total_changes()")
            .fetch_one(&mut *conn)
            .await
            .unwrap();

        // Two rows planned, one changed: the check fails and the COMMIT never runs.
        let error = sqlx::query(CHECKED_COMMIT)
            .bind(2_i64)
            .bind(before)
            .execute(&mut *conn)
            .await
            .map_err(unapplied)
            .unwrap_err();
        assert!(
            error.to_string().contains("other rows than it planned"),
            "{error}"
        );
        // Still inside the transaction: the ROLLBACK has one to end.
        conn.execute("ROLLBACK").await.unwrap();
        assert_eq!(chain_rows(&mut conn).await, 0);

        let before: i64 = sqlx::query_scalar("SELECT total_changes()")
            .fetch_one(&mut *conn)
            .await
            .unwrap();
        sqlx::query(CHECKED_COMMIT)
            .bind(1_i64)
            .bind(before)
            .execute(&mut *conn)
            .await
            .unwrap();
        assert_eq!(chain_rows(&mut conn).await, 1);
        conn.execute("ROLLBACK")
            .await
            .expect_err("committed: no transaction is left to roll back");
    }
}
