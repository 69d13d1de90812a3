//! The article's verification in the user's own database: "run two independent clients and force
//! the older client to pause after reading … The old write should affect zero rows or return a
//! documented conflict." Two connections of the user's code; the older reads, is paused, and
//! resumes only after the newer has committed. The same run against a read-then-write version
//! (a plain table and a check in the application, kept here only) loses the newer value, so the
//! test can fail.

use crate::both_backends;
use crate::helpers::{audit_of_scope, Backend, Guard, UserConn, UserDb};
use fencewatch::domain::fence_audit::FenceAuditRow;
use rstest_reuse::apply;
use tokio::sync::oneshot;

/// How the older client writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Writer {
    /// A plain UPDATE of the protected table: the fence's trigger judges it.
    ProtectedTable,
    /// The guard call in the writer's transaction, then its UPDATE of an unprotected table.
    GuardCall,
    /// Broken on purpose: read the token, check it in the application, write unconditionally.
    ReadThenWrite,
}

/// What the race left.
struct Outcome {
    token: i64,
    value: String,
    /// Rows the older client's resumed write affected (0 or 1), or the guard's refusal.
    older_rows: u64,
    older_refusal: Option<Guard>,
}

/// Writes order 1 as `owner` with `token`; for the guard, inside one transaction with the guard
/// call first. Returns rows affected, or the refusal.
async fn write(
    conn: &mut UserConn,
    writer: Writer,
    backend: Backend,
    token: i64,
    value: &str,
    op: &str,
    owner: &str,
) -> Result<u64, Guard> {
    let update = |table: &str| {
        format!(
            "UPDATE {table} SET tok = {token}, val = '{value}', op = '{op}', who = '{owner}' \
              WHERE id = 1"
        )
    };
    match writer {
        Writer::ProtectedTable => Ok(conn.run(&update("orders")).await.unwrap()),
        Writer::ReadThenWrite => Ok(conn.run(&update("plain_orders")).await.unwrap()),
        Writer::GuardCall => {
            conn.run("BEGIN").await.unwrap();
            match conn
                .guard("eu", Some(token), Some(op), Some(owner), None)
                .await
            {
                Guard::Accepted => {
                    let rows = conn.run(&update("plain_orders")).await.unwrap();
                    conn.run("COMMIT").await.unwrap();
                    Ok(rows)
                }
                refusal => {
                    // PostgreSQL: the refusal is audited even though this rolls back. SQLite
                    // keeps a refusal's row in the caller's transaction, so the caller commits
                    // it (docs/own-database.md).
                    let end = match backend {
                        Backend::Postgres => "ROLLBACK",
                        Backend::Sqlite => "COMMIT",
                    };
                    conn.run(end).await.unwrap();
                    Err(refusal)
                }
            }
        }
    }
}

async fn run_race(db: &UserDb, writer: Writer) -> Outcome {
    db.run(
        "CREATE TABLE plain_orders (id integer PRIMARY KEY, tok bigint, region text NOT NULL, \
         val text, op text, who text)",
    )
    .await;
    let mut older = db.connect().await;
    let mut newer = db.connect().await;
    let table = match writer {
        Writer::ProtectedTable => "orders",
        Writer::GuardCall | Writer::ReadThenWrite => "plain_orders",
    };
    // The older worker started under generation 7.
    if writer == Writer::GuardCall {
        assert_eq!(
            older
                .guard("eu", Some(7), Some("op-7"), Some("old"), None)
                .await,
            Guard::Accepted
        );
    }
    let created = older
        .run(&format!(
            "INSERT INTO {table} (id, tok, region, val, op, who) \
             VALUES (1, 7, 'eu', 'old worker started', 'op-7', 'old')"
        ))
        .await
        .unwrap();
    assert_eq!(created, 1);

    let (read_tx, read_rx) = oneshot::channel::<()>();
    let (resume_tx, resume_rx) = oneshot::channel::<()>();
    let backend = db.backend;
    let older_task = tokio::spawn(async move {
        // The older client reads, checks its generation against what it read, and pauses.
        let seen = older
            .int(&format!("SELECT tok FROM {table} WHERE id = 1"))
            .await
            .unwrap();
        assert!(7 >= seen, "the older client's check passes when it reads");
        read_tx.send(()).unwrap();
        resume_rx.await.unwrap();
        let written = write(
            &mut older,
            writer,
            backend,
            7,
            "old worker resumed",
            "op-7b",
            "old",
        )
        .await;
        older.close().await;
        written
    });

    read_rx.await.unwrap();
    // Meanwhile the newer client, generation 8, reads, checks and writes; its write commits.
    let seen = newer
        .int(&format!("SELECT tok FROM {table} WHERE id = 1"))
        .await
        .unwrap();
    assert!(8 >= seen);
    let newer_rows = write(
        &mut newer,
        writer,
        backend,
        8,
        "replacement completed",
        "op-8",
        "new",
    )
    .await
    .unwrap();
    assert_eq!(newer_rows, 1);
    resume_tx.send(()).unwrap();
    let older_written = older_task.await.unwrap();

    let token = newer
        .int(&format!("SELECT tok FROM {table} WHERE id = 1"))
        .await
        .unwrap();
    let value = newer
        .text(&format!("SELECT val FROM {table} WHERE id = 1"))
        .await
        .unwrap();
    newer.close().await;
    let (older_rows, older_refusal) = match older_written {
        Ok(rows) => (rows, None),
        Err(refusal) => (0, Some(refusal)),
    };
    Outcome {
        token,
        value,
        older_rows,
        older_refusal,
    }
}

/// (outcome, token, highest, op id, owner) of a row.
type Attempt<'a> = (&'a str, Option<i64>, i64, Option<&'a str>, Option<&'a str>);

fn attempts(rows: &[FenceAuditRow]) -> Vec<Attempt<'_>> {
    rows.iter()
        .map(|row| {
            (
                row.outcome.as_str(),
                row.token,
                row.highest_token,
                row.idempotency_key.as_deref(),
                row.owner.as_deref(),
            )
        })
        .collect()
}

#[apply(both_backends)]
#[tokio::test]
async fn the_older_clients_write_to_a_protected_table_affects_zero_rows(#[case] backend: Backend) {
    let (db, fence) = UserDb::with_protected_orders(backend).await;
    let outcome = run_race(&db, Writer::ProtectedTable).await;
    assert_eq!(outcome.older_rows, 0, "the stale UPDATE affects zero rows");
    assert_eq!(outcome.older_refusal, None, "and raises no error");
    assert_eq!(outcome.token, 8);
    assert_eq!(outcome.value, "replacement completed");

    let audit = audit_of_scope(&fence, "eu").await;
    assert_eq!(
        attempts(&audit),
        [
            ("accepted", Some(7), 7, Some("op-7"), Some("old")),
            ("accepted", Some(8), 8, Some("op-8"), Some("new")),
            ("stale", Some(7), 8, Some("op-7b"), Some("old")),
        ]
    );
    assert!(audit.iter().all(|row| row.table_name.is_some()));
    assert_eq!(
        audit[2].detail.as_deref(),
        Some("generation 7 is below 8, the highest accepted")
    );
    fence.seal().await.unwrap();
    assert!(fence.verify().await.unwrap().intact());
}

#[apply(both_backends)]
#[tokio::test]
async fn the_older_clients_guard_call_fails_with_fw409(#[case] backend: Backend) {
    let (db, fence) = UserDb::with_protected_orders(backend).await;
    let outcome = run_race(&db, Writer::GuardCall).await;
    let Some(Guard::Refused { code, message }) = outcome.older_refusal else {
        panic!("the older guard call was not refused");
    };
    assert_eq!(code, "FW409");
    assert!(message.starts_with("FW409: "), "{message}");
    assert_eq!(outcome.token, 8);
    assert_eq!(outcome.value, "replacement completed");

    let audit = audit_of_scope(&fence, "eu").await;
    assert_eq!(
        attempts(&audit),
        [
            ("accepted", Some(7), 7, Some("op-7"), Some("old")),
            ("accepted", Some(8), 8, Some("op-8"), Some("new")),
            ("stale", Some(7), 8, Some("op-7b"), Some("old")),
        ]
    );
    assert!(audit.iter().all(|row| row.table_name.is_none()));
    fence.seal().await.unwrap();
    assert!(fence.verify().await.unwrap().intact());
}

/// The same race against a read-then-write version: the older client's check passed when it
/// read, so its resumed write goes through and the newer value is lost. The fenced runs above
/// would fail the same way if the fence did not hold.
#[apply(both_backends)]
#[tokio::test]
async fn a_read_then_write_version_loses_the_newer_value(#[case] backend: Backend) {
    let (db, fence) = UserDb::with_protected_orders(backend).await;
    let outcome = run_race(&db, Writer::ReadThenWrite).await;
    assert_eq!(outcome.older_rows, 1);
    assert_eq!(outcome.token, 7, "the generation went backwards");
    assert_eq!(
        outcome.value, "old worker resumed",
        "the newer value is lost"
    );
    assert!(
        audit_of_scope(&fence, "eu").await.is_empty(),
        "nothing fenced the plain table"
    );
}
