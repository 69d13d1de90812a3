//! What a transaction that ends in a rollback leaves of the fence: a refused guard call stays in
//! the audit (PostgreSQL, appended autonomously); an accepted one leaves the scopes and operation
//! ids as they were. And operation ids: replayed within their retention, applied again after.

use crate::both_backends;
use crate::helpers::{audit_of_scope, Backend, Guard, UserDb};
use fencewatch::owndb::InstallOptions;
use rstest_reuse::apply;
use std::time::Duration;

#[cfg_attr(
    not(fencewatch_pg),
    ignore = "needs PostgreSQL: set FENCEWATCH_TEST_PG"
)]
#[tokio::test]
async fn a_refused_guard_call_stays_in_the_audit_when_its_transaction_rolls_back() {
    let db = UserDb::new(Backend::Postgres).await;
    let fence = db.fence().await;
    fence.install(&InstallOptions::default()).await.unwrap();
    db.grant_guard().await;
    let mut newer = db.connect().await;
    assert_eq!(
        newer.guard("s", Some(8), None, Some("new"), None).await,
        Guard::Accepted
    );

    let mut older = db.connect().await;
    older.run("BEGIN").await.unwrap();
    older
        .run("CREATE TEMPORARY TABLE scratch (x int)")
        .await
        .unwrap();
    let Guard::Refused { code, message } = older
        .guard("s", Some(7), Some("op-7"), Some("old"), None)
        .await
    else {
        panic!("7 after 8 was not refused");
    };
    assert_eq!(code, "FW409");
    assert!(message.contains("below 8"), "{message}");
    older.run("ROLLBACK").await.unwrap();

    // Read from another session: the row was committed on its own.
    let audit = audit_of_scope(&fence, "s").await;
    let outcomes: Vec<(&str, Option<i64>, Option<&str>)> = audit
        .iter()
        .map(|row| (row.outcome.as_str(), row.token, row.owner.as_deref()))
        .collect();
    assert_eq!(
        outcomes,
        [
            ("accepted", Some(8), Some("new")),
            ("stale", Some(7), Some("old"))
        ]
    );
    assert_eq!(audit[1].idempotency_key.as_deref(), Some("op-7"));

    // So is an invalid one (a NULL token), and the session's loopback is reused.
    let Guard::Refused { code, .. } = older.guard("s", None, None, Some("old"), None).await else {
        panic!("a NULL token was accepted");
    };
    assert_eq!(code, "FW400");
    older.run("BEGIN").await.unwrap();
    let Guard::Refused { code, .. } = older.guard("s", Some(6), None, Some("old"), None).await
    else {
        panic!("6 after 8 was not refused");
    };
    assert_eq!(code, "FW409");
    older.run("ROLLBACK").await.unwrap();
    let outcomes: Vec<String> = audit_of_scope(&fence, "s")
        .await
        .into_iter()
        .map(|row| row.outcome)
        .collect();
    assert_eq!(outcomes, ["accepted", "stale", "invalid", "stale"]);
    assert!(fence.verify().await.unwrap().intact());
    older.close().await;
    newer.close().await;
}

/// A transaction that itself decided on a scope (accepted 9, not committed) and then presents
/// a lower generation holds the scope's row: the loopback session can neither wait for it (it
/// would wait for its own caller) nor chain after rows it cannot see. The refusal is answered at
/// once, kept as decided, and chained by the next decision on the scope, before that
/// decision's own row: whether the transaction then rolls back (scope `s`) or commits past the
/// refusal with a savepoint (scope `t`).
#[cfg_attr(
    not(fencewatch_pg),
    ignore = "needs PostgreSQL: set FENCEWATCH_TEST_PG"
)]
#[tokio::test]
async fn a_refusal_after_the_transactions_own_accept_is_audited_without_waiting_on_itself() {
    let db = UserDb::new(Backend::Postgres).await;
    let fence = db.fence().await;
    fence.install(&InstallOptions::default()).await.unwrap();
    db.grant_guard().await;
    let mut conn = db.connect().await;
    for (scope, end) in [("s", "ROLLBACK"), ("t", "COMMIT")] {
        conn.run("BEGIN").await.unwrap();
        assert_eq!(
            conn.guard(scope, Some(9), None, Some("w9"), None).await,
            Guard::Accepted
        );
        conn.run("SAVEPOINT before_7").await.unwrap();
        // Shorter than the loopback's lock timeout (5 s): a wait on itself would show.
        let refused = tokio::time::timeout(
            Duration::from_secs(4),
            conn.guard(scope, Some(7), Some("op-7"), Some("w7"), None),
        )
        .await
        .expect("the refusal waited on its own transaction");
        let Guard::Refused { code, message } = refused else {
            panic!("7 after 9 was not refused");
        };
        assert_eq!(code, "FW409");
        assert!(message.contains("below 9"), "{message}");
        conn.run("ROLLBACK TO SAVEPOINT before_7").await.unwrap();
        conn.run(end).await.unwrap();
        assert!(
            audit_of_scope(&fence, scope).await.len() <= 1,
            "nothing is chained before the next decision"
        );
        assert_eq!(
            conn.guard(scope, Some(10), None, Some("w10"), None).await,
            Guard::Accepted
        );
    }
    let summary = |rows: Vec<fencewatch::domain::fence_audit::FenceAuditRow>| {
        rows.into_iter()
            .map(|row| {
                (
                    row.outcome,
                    row.token,
                    row.highest_token,
                    row.owner,
                    row.seq,
                )
            })
            .collect::<Vec<_>>()
    };
    let row = |outcome: &str, token: i64, highest: i64, owner: &str, seq: i64| {
        (
            outcome.to_owned(),
            Some(token),
            highest,
            Some(owner.to_owned()),
            seq,
        )
    };
    // Rolled back: the accepted 9 is gone; the refusal, decided against it, stays.
    assert_eq!(
        summary(audit_of_scope(&fence, "s").await),
        [
            row("stale", 7, 9, "w7", 1),
            row("accepted", 10, 10, "w10", 2)
        ]
    );
    assert_eq!(
        summary(audit_of_scope(&fence, "t").await),
        [
            row("accepted", 9, 9, "w9", 1),
            row("stale", 7, 9, "w7", 2),
            row("accepted", 10, 10, "w10", 3)
        ]
    );
    let check = fence.verify().await.unwrap();
    assert!(check.intact(), "{:?}", check.breaches);
    conn.close().await;
}

#[apply(both_backends)]
#[tokio::test]
async fn an_accepted_guard_call_that_rolls_back_leaves_the_fence_as_it_was(
    #[case] backend: Backend,
) {
    let db = UserDb::new(backend).await;
    let fence = db.fence().await;
    fence.install(&InstallOptions::default()).await.unwrap();
    db.grant_guard().await;
    db.grant_audit_reads().await;
    let mut conn = db.connect().await;
    assert_eq!(
        conn.guard("s", Some(5), Some("op-5"), None, None).await,
        Guard::Accepted
    );
    let snapshot = |scopes: &str, operations: &str| {
        format!(
            "SELECT (SELECT count(*) FROM {scopes}) * 1000000 \
                  + (SELECT max(highest_token) FROM {scopes}) * 1000 \
                  + (SELECT count(*) FROM {operations}) * 10 \
                  + (SELECT max(token) FROM {operations})"
        )
    };
    let fence_state = snapshot(db.scopes_table(), db.operations_table());
    let before = conn.int(&fence_state).await;
    let audit_before = audit_of_scope(&fence, "s").await.len();

    for scope in ["s", "fresh"] {
        conn.run("BEGIN").await.unwrap();
        assert_eq!(
            conn.guard(scope, Some(9), Some("op-9"), None, None).await,
            Guard::Accepted
        );
        conn.run("ROLLBACK").await.unwrap();
    }
    assert_eq!(conn.int(&fence_state).await, before);
    assert_eq!(audit_of_scope(&fence, "s").await.len(), audit_before);
    assert!(audit_of_scope(&fence, "fresh").await.is_empty());
    // Nothing remembers the rolled-back operation: its retry is applied, not replayed.
    assert_eq!(
        conn.guard("s", Some(9), Some("op-9"), None, None).await,
        Guard::Accepted
    );
    conn.close().await;
}

/// SQLite keeps a refusal's row in the caller's transaction: a commit keeps it, a rollback
/// takes it away (docs/own-database.md says so; PostgreSQL keeps it either way).
#[tokio::test]
async fn sqlite_keeps_a_refusals_row_only_if_the_caller_commits() {
    let db = UserDb::new(Backend::Sqlite).await;
    let fence = db.fence().await;
    fence.install(&InstallOptions::default()).await.unwrap();
    db.grant_guard().await;
    let mut conn = db.connect().await;
    assert_eq!(
        conn.guard("s", Some(8), None, None, None).await,
        Guard::Accepted
    );
    for end in ["ROLLBACK", "COMMIT"] {
        conn.run("BEGIN").await.unwrap();
        let refused = conn.guard("s", Some(7), None, Some(end), None).await;
        assert!(
            matches!(&refused, Guard::Refused { code, .. } if code == "FW409"),
            "{refused:?}"
        );
        conn.run(end).await.unwrap();
    }
    let owners: Vec<Option<String>> = audit_of_scope(&fence, "s")
        .await
        .into_iter()
        .map(|row| row.owner)
        .collect();
    assert_eq!(owners, [None, Some("COMMIT".to_owned())]);
    conn.close().await;
}

#[apply(both_backends)]
#[tokio::test]
async fn an_operation_is_replayed_within_its_retention_and_applied_again_after(
    #[case] backend: Backend,
) {
    let (db, fence) = UserDb::with_protected_orders(backend).await;
    fence
        .install(&InstallOptions {
            operation_retention: Some(Duration::from_secs(2)),
            ..InstallOptions::default()
        })
        .await
        .unwrap();
    assert_eq!(
        fence.status().await.unwrap().operation_retention_us,
        Some(2_000_000)
    );
    let mut conn = db.connect().await;
    assert_eq!(
        conn.guard("s", Some(3), Some("op-a"), None, None).await,
        Guard::Accepted
    );
    assert_eq!(
        conn.guard("s", Some(3), Some("op-a"), None, None).await,
        Guard::Replayed
    );
    // Under a newer generation the same id is a new application.
    assert_eq!(
        conn.guard("s", Some(4), Some("op-a"), None, None).await,
        Guard::Accepted
    );
    // A protected table: the retried write affects zero rows.
    let write = "INSERT INTO orders (id, tok, region, val, op) VALUES (1, 5, 'eu', 'once', 'op-b')";
    assert_eq!(conn.run(write).await.unwrap(), 1);
    let retry = "UPDATE orders SET tok = 5, val = 'twice', op = 'op-b' WHERE id = 1";
    assert_eq!(conn.run(retry).await.unwrap(), 0, "replayed");
    assert_eq!(
        conn.text("SELECT val FROM orders WHERE id = 1")
            .await
            .as_deref(),
        Some("once")
    );

    tokio::time::sleep(Duration::from_millis(2_500)).await;
    assert_eq!(
        conn.guard("s", Some(4), Some("op-a"), None, None).await,
        Guard::Accepted,
        "past its retention the record is ignored"
    );
    assert_eq!(conn.run(retry).await.unwrap(), 1);
    assert_eq!(
        fence.prune_operations().await.unwrap(),
        0,
        "both were just renewed"
    );
    conn.close().await;
    let outcomes: Vec<String> = audit_of_scope(&fence, "eu")
        .await
        .into_iter()
        .map(|row| row.outcome)
        .collect();
    assert_eq!(outcomes, ["accepted", "replayed", "accepted"]);
}
