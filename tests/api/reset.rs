//! `POST /v1/resources/{key}/reset`: an operator's way back from a runaway token. A token of
//! 9223372036854775807 accepted once locked its resource for good; an admin now sets the
//! highest accepted generation back, audited in the resource's chain with who and why.

use crate::both_backends;
use crate::helpers::{Backend, Reply, TestApp, TestDb};
use crate::test_db;
use fencewatch::domain::{
    FencedWrite, FencingToken, LeasePolicy, Outcome, Reset, ResetReason, ResourceKey,
};
use fencewatch::http::auth::ApiKeys;
use rstest_reuse::apply;
use serde_json::{json, Value};
use std::sync::Arc;

const KEYS: &str = "\
operator:k-operator-5e1f0a9c3b admin
worker:k-worker-5e1f0a9c3b write lease read
legacy:k-legacy-5e1f0a9c3b
";

async fn reset(app: &TestApp, key: Option<&str>, resource: &str, body: Value) -> Reply {
    let mut request = app
        .http
        .post(format!("{}/v1/resources/{resource}/reset", app.base))
        .json(&body);
    if let Some(key) = key {
        request = request.bearer_auth(key);
    }
    Reply::from(request.send().await.unwrap()).await
}

async fn put(app: &TestApp, key: Option<&str>, resource: &str, token: i64) -> Reply {
    let mut put = app.put(resource).token(token).body(format!("v{token}"));
    if let Some(key) = key {
        put = put.header("Authorization", format!("Bearer {key}"));
    }
    put.send().await
}

async fn get(app: &TestApp, path: &str) -> Reply {
    let request = app
        .http
        .get(format!("{}{path}", app.base))
        .bearer_auth("k-operator-5e1f0a9c3b");
    Reply::from(request.send().await.unwrap()).await
}

/// `fencewatch audit verify` on the test's database: its exit code and output.
async fn verify(db: &TestDb) -> (i32, String) {
    audit(db, &["verify"]).await
}

/// `fencewatch audit ARGS` on the test's database: its exit code and output.
async fn audit(db: &TestDb, args: &[&str]) -> (i32, String) {
    let output = tokio::process::Command::new(env!("CARGO_BIN_EXE_fencewatch"))
        .args(["audit", "--database", &db.url])
        .args(args)
        .env("FENCEWATCH_LOG", "warn")
        .output()
        .await
        .unwrap();
    (
        output.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&output.stdout).into_owned(),
    )
}

#[apply(both_backends)]
#[tokio::test]
async fn an_admin_resets_a_runaway_token(#[case] backend: Backend) {
    let db = test_db!(backend);
    let keys = Some(Arc::new(ApiKeys::parse(KEYS).unwrap()));
    let app = TestApp::on(&db).keys(keys).spawn().await;
    let worker = Some("k-worker-5e1f0a9c3b");

    // The runaway: one write with the highest token there is, and the resource is locked.
    assert_eq!(put(&app, worker, "ledger", i64::MAX).await.status, 201);
    put(&app, worker, "ledger", 6)
        .await
        .assert_problem(409, "stale-token");
    // Written twice more at the top, so that a PostgreSQL daemon knows the resource from its
    // own commits and decides the next write on that knowledge.
    assert_eq!(put(&app, worker, "ledger", i64::MAX).await.status, 200);

    // Only an admin may reset: any other key is refused, and nothing changes.
    let body = json!({"highest_token": 5, "reason": "INC-42: a test client sent i64::MAX"});
    reset(&app, worker, "ledger", body.clone())
        .await
        .assert_problem(403, "forbidden");
    reset(&app, None, "ledger", body.clone())
        .await
        .assert_problem(401, "unauthorized");
    let value = get(&app, "/v1/resources/ledger").await;
    assert_eq!(
        value.header("fencing-token"),
        Some(i64::MAX.to_string().as_str())
    );

    let done = reset(&app, Some("k-operator-5e1f0a9c3b"), "ledger", body).await;
    assert_eq!(done.status, 200, "{}", done.json);
    assert_eq!(done.content_type(), "application/json");
    assert_eq!(done.json["resource"], "ledger");
    assert_eq!(done.json["outcome"], "reset");
    assert_eq!(done.json["highest_token"], 5);
    assert_eq!(done.json["previous_highest_token"], i64::MAX);
    assert_eq!(done.json["revision"], 2, "the value did not change");
    let audit_id = done.json["audit_id"].as_i64().unwrap();

    // The value and its revision stay; the fence is at 5.
    let value = get(&app, "/v1/resources/ledger").await;
    assert_eq!(value.header("fencing-token"), Some("5"));
    assert_eq!(value.header("etag"), Some("\"2\""));
    assert_eq!(value.body, format!("v{}", i64::MAX).into_bytes());

    // The next writes are decided on the new highest.
    let six = put(&app, worker, "ledger", 6).await;
    assert_eq!(six.status, 200, "{}", six.json);
    assert_eq!(six.json["highest_token"], 6);
    assert_eq!(six.json["revision"], 3);
    put(&app, worker, "ledger", 4)
        .await
        .assert_problem(409, "stale-token");
    assert_eq!(put(&app, worker, "ledger", 6).await.status, 200);

    // The audit: one row, chained like every other, naming who and why.
    let rows = app_audit(&app, "ledger").await;
    let row = rows
        .iter()
        .find(|row| row["outcome"] == "reset")
        .expect("the reset is audited");
    assert_eq!(row["id"], audit_id);
    assert_eq!(row["token"], 5);
    assert_eq!(row["highest_token"], 5);
    assert_eq!(row["revision"], 2);
    assert_eq!(row["owner"], "operator");
    assert_eq!(row["caller"], "operator");
    assert_eq!(row["detail"], "INC-42: a test client sent i64::MAX");
    assert_eq!(
        rows.iter().filter(|row| row["outcome"] == "reset").count(),
        1
    );
    let (code, report) = verify(&db).await;
    assert_eq!(code, 0, "{report}");
    assert!(report.starts_with("ok:"), "{report}");
    // The audit tools show it as what it is: in the log, and in the timeline as a reset,
    // not among the refused attempts.
    let (code, log) = audit(&db, &["log", "--outcome", "reset"]).await;
    assert_eq!(code, 0, "{log}");
    assert_eq!(log.lines().count(), 2, "a header and the reset: {log}");
    assert!(log.contains("reset") && log.contains("operator"), "{log}");
    let (code, timeline) = audit(&db, &["timeline", "ledger", "--json"]).await;
    assert_eq!(code, 0, "{timeline}");
    let timeline: Value = serde_json::from_str(&timeline).unwrap();
    let refused: Vec<&Value> = timeline["rejected"].as_array().unwrap().iter().collect();
    assert!(
        refused.iter().all(|row| row["outcome"] == "stale"),
        "{refused:?}"
    );
    assert!(timeline["entries"]
        .as_array()
        .unwrap()
        .iter()
        .any(|row| row["outcome"] == "reset"
            && row["detail"] == "INC-42: a test client sent i64::MAX"));
    let (_, human) = audit(&db, &["timeline", "ledger"]).await;
    assert!(
        human.contains("RESET          highest set to 5 by operator: INC-42"),
        "{human}"
    );

    // Counted as such, beside the writes.
    let metrics = String::from_utf8(app.get("/metrics").await.body).unwrap();
    assert!(
        metrics
            .lines()
            .any(|line| line == "fencewatch_writes_total{outcome=\"reset\"} 1"),
        "{metrics}"
    );

    // An unscoped key line counts as admin, as everywhere.
    let again = reset(
        &app,
        Some("k-legacy-5e1f0a9c3b"),
        "ledger",
        json!({"highest_token": 9, "reason": "raise it past a zombie"}),
    )
    .await;
    assert_eq!(again.status, 200, "{}", again.json);
    put(&app, worker, "ledger", 6)
        .await
        .assert_problem(409, "stale-token");
}

/// The audit of `resource`, oldest first, read with the operator's key.
async fn app_audit(app: &TestApp, resource: &str) -> Vec<Value> {
    let reply = get(app, &format!("/v1/audit?resource={resource}&limit=1000")).await;
    assert_eq!(reply.status, 200, "{}", reply.json);
    let mut rows = reply.json["entries"].as_array().unwrap().clone();
    rows.reverse();
    rows
}

/// A bad body is a `400` and changes nothing; a resource never written is a `404`, with no
/// audit row or chain head left behind. Without `--api-key-file` the daemon is open, and a
/// reset is allowed as every other admin action is.
#[apply(both_backends)]
#[tokio::test]
async fn a_reset_checks_its_body_and_its_resource(#[case] backend: Backend) {
    let db = test_db!(backend);
    let app = TestApp::spawn(&db).await;
    assert_eq!(put(&app, None, "r", 100).await.status, 201);
    let long = "x".repeat(513);
    for body in [
        json!({}),
        json!({"highest_token": 5}),
        json!({"reason": "why"}),
        json!({"highest_token": 0, "reason": "why"}),
        json!({"highest_token": -1, "reason": "why"}),
        json!({"highest_token": "5", "reason": "why"}),
        json!({"highest_token": 5.5, "reason": "why"}),
        json!({"highest_token": 9_223_372_036_854_775_808_u64, "reason": "why"}),
        json!({"highest_token": 5, "reason": ""}),
        json!({"highest_token": 5, "reason": long}),
        json!({"highest_token": 5, "reason": "line\nbreak"}),
        json!({"highest_token": 5, "reason": "why", "extra": true}),
        json!([5, "why"]),
    ] {
        let reply = reset(&app, None, "r", body.clone()).await;
        assert_eq!(reply.status, 400, "{body}: {}", reply.json);
        reply.assert_problem(400, "invalid-request");
        assert!(!reply.json["detail"].as_str().unwrap().is_empty(), "{body}");
    }
    // Not JSON at all, or not declared JSON.
    let raw = |content_type: &str, body: &str| {
        app.http
            .post(format!("{}/v1/resources/r/reset", app.base))
            .header("content-type", content_type.to_owned())
            .body(body.to_owned())
            .send()
    };
    Reply::from(raw("application/json", "{not json").await.unwrap())
        .await
        .assert_problem(400, "invalid-request");
    Reply::from(
        raw("text/plain", r#"{"highest_token":5,"reason":"x"}"#)
            .await
            .unwrap(),
    )
    .await
    .assert_problem(415, "unsupported-media-type");
    // The largest token there is, and a reason of 512 characters, are fine.
    let max = reset(
        &app,
        None,
        "r",
        json!({"highest_token": i64::MAX, "reason": "é".repeat(512)}),
    )
    .await;
    assert_eq!(max.status, 200, "{}", max.json);

    // Nothing of the refusals reached the resource or its audit.
    let rows = app.audit_of("r").await;
    let outcomes: Vec<&str> = rows
        .iter()
        .map(|row| row["outcome"].as_str().unwrap())
        .collect();
    assert_eq!(outcomes, ["accepted", "reset"]);
    assert_eq!(rows[1]["owner"], Value::Null, "no key, no caller");

    // A resource never written: 404, and no trace of it.
    reset(
        &app,
        None,
        "never/written",
        json!({"highest_token": 5, "reason": "why"}),
    )
    .await
    .assert_problem(404, "not-found");
    assert!(app.audit_of("never/written").await.is_empty());
    let report = app.store.verify_audit().await.unwrap();
    assert!(report.breaches.is_empty(), "{:?}", report.breaches);
    assert_eq!(
        report.resources, 1,
        "no chain was started for the unknown resource"
    );

    // POST to a resource without the action is no route.
    let bare = Reply::from(
        app.http
            .post(format!("{}/v1/resources/r", app.base))
            .json(&json!({"highest_token": 5, "reason": "why"}))
            .send()
            .await
            .unwrap(),
    )
    .await;
    bare.assert_problem(405, "method-not-allowed");
    // A key ending in /reset is reset by its own path.
    assert_eq!(put(&app, None, "jobs/reset", 9).await.status, 201);
    let nested = reset(
        &app,
        None,
        "jobs/reset",
        json!({"highest_token": 2, "reason": "why"}),
    )
    .await;
    assert_eq!(nested.status, 200, "{}", nested.json);
    assert_eq!(nested.json["resource"], "jobs/reset");
}

fn reset_to(key: &ResourceKey, token: i64, reason: &str, caller: Option<&str>) -> Reset {
    Reset {
        key: key.clone(),
        highest_token: FencingToken::new(token).unwrap(),
        reason: ResetReason::parse(reason).unwrap(),
        caller: caller.map(str::to_owned),
    }
}

fn write(key: &str, token: i64, body: &str) -> FencedWrite {
    FencedWrite::new(
        ResourceKey::parse(key).unwrap(),
        FencingToken::new(token).unwrap(),
        body.to_owned(),
    )
}

/// PostgreSQL: a batch may be decided on what this daemon's own commits left, without reading
/// it (`store::batch::known`). A reset by another daemon changes the resource behind that
/// knowledge; the statement that applies the batch checks the chain head, which the reset's
/// audit row moved, so the write is decided again on the reset's highest. And the daemon that
/// reset decides its next write on it too.
#[cfg_attr(
    not(fencewatch_pg),
    ignore = "needs PostgreSQL: set FENCEWATCH_TEST_PG"
)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reset_is_seen_by_writes_decided_on_known_state() {
    let db = test_db!(Backend::Postgres);
    let writer = db.store().await;
    let operator = db.store().await;
    let policy = LeasePolicy::default();
    let key = ResourceKey::parse("known/ledger").unwrap();
    let decided = |result: &fencewatch::domain::WriteResult| {
        (result.entry.outcome, result.entry.highest_token)
    };

    writer
        .unchecked_writes()
        .apply_write(&write(key.as_str(), i64::MAX, "runaway"), policy)
        .await
        .unwrap();
    let known = writer
        .unchecked_writes()
        .apply_write(&write(key.as_str(), 6, "refused"), policy)
        .await
        .unwrap();
    assert!(known.decided_on_known_state);
    assert_eq!(decided(&known), (Outcome::Stale, i64::MAX));

    // Another daemon resets; the writer still knows i64::MAX.
    let done = operator
        .reset_highest(&reset_to(&key, 5, "INC-42", Some("ops")))
        .await
        .unwrap()
        .expect("the resource exists");
    assert_eq!(done.previous_highest_token, i64::MAX);
    assert_eq!(done.entry.outcome, Outcome::Reset);

    let six = writer
        .unchecked_writes()
        .apply_write(&write(key.as_str(), 6, "six"), policy)
        .await
        .unwrap();
    assert!(
        six.observations >= 2 && !six.decided_on_known_state,
        "decided on the old knowledge, found changed, decided again"
    );
    assert_eq!(decided(&six), (Outcome::Accepted, 6));
    let four = writer
        .unchecked_writes()
        .apply_write(&write(key.as_str(), 4, "four"), policy)
        .await
        .unwrap();
    assert!(
        four.decided_on_known_state,
        "known again from its own commit"
    );
    assert_eq!(decided(&four), (Outcome::Stale, 6));

    // The daemon that reset: its next write is decided on the new highest, known or read.
    writer
        .unchecked_writes()
        .apply_write(&write(key.as_str(), i64::MAX, "again"), policy)
        .await
        .unwrap();
    writer
        .reset_highest(&reset_to(&key, 5, "again", None))
        .await
        .unwrap()
        .expect("the resource exists");
    let six = writer
        .unchecked_writes()
        .apply_write(&write(key.as_str(), 6, "six"), policy)
        .await
        .unwrap();
    assert_eq!(decided(&six), (Outcome::Accepted, 6));
    let four = writer
        .unchecked_writes()
        .apply_write(&write(key.as_str(), 4, "four"), policy)
        .await
        .unwrap();
    assert_eq!(decided(&four), (Outcome::Stale, 6));

    let report = writer.verify_audit().await.unwrap();
    assert!(report.breaches.is_empty(), "{:?}", report.breaches);
    assert_eq!(report.rows, 9);
}

/// PostgreSQL: two daemons over HTTP, the reset made through one and the writes through the
/// other, which had written the runaway itself.
#[cfg_attr(
    not(fencewatch_pg),
    ignore = "needs PostgreSQL: set FENCEWATCH_TEST_PG"
)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_second_daemon_sees_a_reset() {
    let db = test_db!(Backend::Postgres);
    let writing = TestApp::spawn(&db).await;
    let resetting = TestApp::spawn(&db).await;
    assert_eq!(put(&writing, None, "shared", i64::MAX).await.status, 201);
    put(&writing, None, "shared", 6)
        .await
        .assert_problem(409, "stale-token");
    let done = reset(
        &resetting,
        None,
        "shared",
        json!({"highest_token": 5, "reason": "INC-43"}),
    )
    .await;
    assert_eq!(done.status, 200, "{}", done.json);
    assert_eq!(put(&writing, None, "shared", 6).await.status, 200);
    put(&writing, None, "shared", 4)
        .await
        .assert_problem(409, "stale-token");
    let (code, report) = verify(&db).await;
    assert_eq!(code, 0, "{report}");
}
