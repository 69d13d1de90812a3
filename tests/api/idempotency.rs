//! Operation identity (`Idempotency-Key`) is separate from ownership (the token).

use crate::both_backends;
use crate::helpers::{Backend, TestApp};
use crate::test_db;
use fencewatch::app::retention::{claim_retention, RetentionFlags, RetentionTasks};
use rstest_reuse::apply;
use std::time::Duration;

#[apply(both_backends)]
#[tokio::test]
async fn a_repeat_returns_the_stored_result_and_applies_nothing(#[case] backend: Backend) {
    let db = test_db!(backend);
    let app = TestApp::spawn(&db).await;
    let first = app
        .put("ledger")
        .token(7)
        .key("op-1")
        .body("+10")
        .send()
        .await;
    assert_eq!(first.status, 201);
    assert!(first.header("idempotent-replayed").is_none());

    // Quoted and bare forms are the same key.
    let repeat = app
        .put("ledger")
        .token(7)
        .header("Idempotency-Key", "op-1")
        .body("+10")
        .send()
        .await;
    assert_eq!(repeat.status, 201, "the stored status again");
    assert_eq!(repeat.header("idempotent-replayed"), Some("true"));
    assert_eq!(repeat.header("etag"), Some("\"1\""));
    assert_eq!(repeat.json["outcome"], "replayed");
    assert_eq!(repeat.json["revision"], 1);
    assert_eq!(repeat.json["token"], 7);
    assert_eq!(repeat.json["idempotency_key"], "op-1");
    assert_ne!(
        repeat.json["audit_id"], first.json["audit_id"],
        "the repeat is audited too"
    );

    // Another operation of the same owner is valid.
    let second = app
        .put("ledger")
        .token(7)
        .key("op-2")
        .body("+5")
        .send()
        .await;
    assert_eq!(
        (second.status.as_u16(), second.json["revision"].as_i64()),
        (200, Some(2))
    );

    // The value reflects each operation once.
    let value = app.get("/v1/resources/ledger").await;
    assert_eq!(
        (value.body.as_slice(), value.header("etag")),
        (&b"+5"[..], Some("\"2\""))
    );

    // The same key with another token or another body is a conflict.
    let other_token = app
        .put("ledger")
        .token(8)
        .key("op-1")
        .body("+10")
        .send()
        .await;
    other_token.assert_problem(422, "idempotency-key-reuse");
    assert_eq!(other_token.json["outcome"], "idempotency_conflict");
    let other_body = app
        .put("ledger")
        .token(7)
        .key("op-1")
        .body("+11")
        .send()
        .await;
    other_body.assert_problem(422, "idempotency-key-reuse");

    // Keys belong to their resource: op-1 is new on another resource.
    assert_eq!(
        app.put("other")
            .token(1)
            .key("op-1")
            .body("x")
            .send()
            .await
            .status,
        201
    );

    let outcomes: Vec<_> = app
        .audit_of("ledger")
        .await
        .iter()
        .map(|row| row["outcome"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(
        outcomes,
        [
            "accepted",
            "replayed",
            "accepted",
            "idempotency_conflict",
            "idempotency_conflict"
        ]
    );
}

#[apply(both_backends)]
#[tokio::test]
async fn an_older_generation_fails_even_with_a_new_key(#[case] backend: Backend) {
    let db = test_db!(backend);
    let app = TestApp::spawn(&db).await;
    assert_eq!(
        app.put("r").token(7).key("a").body("1").send().await.status,
        201
    );
    assert_eq!(
        app.put("r").token(8).key("b").body("2").send().await.status,
        200
    );
    app.put("r")
        .token(7)
        .key("c")
        .body("3")
        .send()
        .await
        .assert_problem(409, "stale-token");
    // A retry of an operation accepted before generation 8 is still a replay, not a rejection,
    // and it applies nothing.
    let retry = app.put("r").token(7).key("a").body("1").send().await;
    assert_eq!(
        (retry.status.as_u16(), retry.header("idempotent-replayed")),
        (201, Some("true"))
    );
    assert_eq!(retry.json["revision"], 1);
    assert_eq!(
        retry.json["highest_token"], 7,
        "the result as it was stored"
    );
    let value = app.get("/v1/resources/r").await;
    assert_eq!(
        (value.body.as_slice(), value.header("fencing-token")),
        (&b"2"[..], Some("8"))
    );
    // Its audit row shows the resource as it is now.
    let row = app.audit_of("r").await.pop().unwrap();
    assert_eq!(
        (
            row["outcome"].as_str(),
            row["highest_token"].as_i64(),
            row["revision"].as_i64()
        ),
        (Some("replayed"), Some(8), Some(2))
    );
}

/// Past the retention window a repeat is decided afresh; `If-Match` is what keeps it from
/// applying twice (the README's promise).
#[apply(both_backends)]
#[tokio::test]
async fn after_retention_a_retry_is_new_and_if_match_makes_it_safe(#[case] backend: Backend) {
    let db = test_db!(backend);
    let app = TestApp::spawn(&db).await;
    assert_eq!(
        app.put("guarded")
            .token(3)
            .key("op")
            .if_match(0)
            .body("once")
            .send()
            .await
            .status,
        201
    );
    assert_eq!(
        app.put("bare")
            .token(3)
            .key("op")
            .body("once")
            .send()
            .await
            .status,
        201
    );

    assert_eq!(app.store.prune_operations(Duration::ZERO).await.unwrap(), 2);

    let guarded = app
        .put("guarded")
        .token(3)
        .key("op")
        .if_match(0)
        .body("once")
        .send()
        .await;
    guarded.assert_problem(412, "revision-mismatch");
    assert_eq!(
        app.get("/v1/resources/guarded").await.header("etag"),
        Some("\"1\"")
    );

    let bare = app.put("bare").token(3).key("op").body("once").send().await;
    assert_eq!(
        (bare.status.as_u16(), bare.json["revision"].as_i64()),
        (200, Some(2))
    );
    assert!(bare.header("idempotent-replayed").is_none());
}

/// The daemon prunes by itself.
#[apply(both_backends)]
#[tokio::test]
async fn operation_records_are_pruned_in_the_background(#[case] backend: Backend) {
    let db = test_db!(backend);
    let app = TestApp::spawn(&db).await;
    let flags = RetentionFlags {
        idempotency: Some(Duration::from_millis(300)),
        ..RetentionFlags::default()
    };
    claim_retention(&app.store, &flags).await.unwrap();
    let pruner = RetentionTasks::spawn(app.store.clone());
    assert_eq!(
        app.put("p")
            .token(1)
            .key("op")
            .body("x")
            .send()
            .await
            .status,
        201
    );
    assert_eq!(
        app.put("p").token(1).key("op").body("x").send().await.json["outcome"],
        "replayed"
    );
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    loop {
        tokio::time::sleep(Duration::from_millis(250)).await;
        let reply = app.put("p").token(1).key("op").body("x").send().await;
        if reply.json["outcome"] == "accepted" {
            break;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "the record was never pruned"
        );
    }
    drop(pruner);
}
