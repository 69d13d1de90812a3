//! `fencewatch audit verify` against an insider with SQL access who leaves the chains alone:
//! each resource's stored state (highest generation, revision, value) is held to its audit, and
//! a row added without a place in a chain is a breach, unless it is older than the chain
//! (migration 28 recorded which). Resets, replays, rejections, refused attempts and prunes still
//! verify clean; what a prune took is listed as unchecked, not guessed.

use crate::both_backends;
use crate::helpers::{self, Backend, RawPool, TestApp, TestDb};
use crate::on_raw;
use crate::test_db;
use rstest_reuse::apply;
use serde_json::{json, Value};
use std::path::Path;
use std::time::Duration;

/// `fencewatch audit --database … ARGS`: its exit code and stdout.
async fn audit(db: &TestDb, args: &[&str]) -> (i32, String) {
    let (code, stdout, stderr) =
        helpers::fencewatch(&[&["audit", "--database", &db.url], args].concat()).await;
    assert!(!stderr.contains("error"), "{stderr}");
    (code, stdout)
}

/// `audit verify ARGS --json`: its exit code and report.
async fn verify_json(db: &TestDb, args: &[&str]) -> (i32, Value) {
    let mut args = [&["verify"], args].concat();
    args.push("--json");
    let (code, stdout) = audit(db, &args).await;
    (code, serde_json::from_str(&stdout).unwrap())
}

/// A clean run: exit 0 and its report.
async fn clean(db: &TestDb, args: &[&str]) -> Value {
    let (code, report) = verify_json(db, args).await;
    assert_eq!(code, 0, "{report}");
    assert_eq!(report["breaches"], json!([]));
    report
}

/// A run that finds exactly one breach, of `resource`: exit 1 in both outputs, the text naming
/// the resource and the breach's row; the breach.
async fn one_breach(db: &TestDb, args: &[&str], resource: &str) -> Value {
    let (code, report) = verify_json(db, args).await;
    assert_eq!(code, 1, "{report}");
    let breaches = report["breaches"].as_array().unwrap();
    assert_eq!(breaches.len(), 1, "{report}");
    let breach = breaches[0].clone();
    assert_eq!(breach["resource"], resource, "{breach}");
    let (code, text) = audit(db, &[&["verify"], args].concat()).await;
    assert_eq!(code, 1, "{text}");
    let named = match breach["audit_id"].as_i64() {
        Some(id) => format!("BROKEN {resource}: at audit row {id}"),
        None => format!("BROKEN {resource}: at position"),
    };
    assert!(text.contains(&named), "{text}");
    breach
}

/// Runs `sql` on the test's database.
async fn sql(pool: &RawPool, sql: &str) {
    on_raw!(pool, h => sqlx::query(sql).execute(h).await.unwrap().rows_affected());
}

async fn set_value(pool: &RawPool, value: &[u8]) {
    on_raw!(pool, h => sqlx::query("UPDATE resources SET value = $1 WHERE key = 'ledger'")
        .bind(value)
        .execute(h)
        .await
        .unwrap()
        .rows_affected());
}

/// A resource's row made by SQL, with no chain head (`chain_seq` 0).
async fn insert_resource(pool: &RawPool, key: &str, highest_token: i64) {
    on_raw!(pool, h => sqlx::query(
        "INSERT INTO resources (key, highest_token, revision, value, updated_at_us) \
         VALUES ($1, $2, 1, $3, 0)",
    )
    .bind(key)
    .bind(highest_token)
    .bind(&b"v"[..])
    .execute(h)
    .await
    .unwrap()
    .rows_affected());
}

async fn newest_id(pool: &RawPool, resource: &str) -> i64 {
    on_raw!(pool, h => sqlx::query_scalar("SELECT max(id) FROM audit WHERE resource = $1")
        .bind(resource)
        .fetch_one(h)
        .await
        .unwrap())
}

async fn put(app: &TestApp, resource: &str, token: i64, body: &str, key: Option<&str>) -> u16 {
    let mut put = app
        .put(resource)
        .token(token)
        .owner("w")
        .body(body.to_owned());
    if let Some(key) = key {
        put = put.key(key);
    }
    put.send().await.status.as_u16()
}

async fn reset(app: &TestApp, resource: &str, highest_token: i64) {
    let reply = app
        .http
        .post(format!("{}/v1/resources/{resource}/reset", app.base))
        .json(&json!({"highest_token": highest_token, "reason": "INC-7: runaway token"}))
        .send()
        .await
        .unwrap();
    assert_eq!(reply.status(), 200, "{:?}", reply.text().await);
}

/// Every kind of row that says what a resource holds: accepted writes, a replay, a stale write,
/// a reset, a write after it, and a refused attempt last (`ledger`); a plain resource
/// (`plain`); attempts on a resource never written, which has no row (`never`).
async fn history(app: &TestApp) {
    assert_eq!(put(app, "ledger", 1, "a", None).await, 201);
    assert_eq!(put(app, "ledger", 9, "b", Some("op-1")).await, 200);
    assert_eq!(
        put(app, "ledger", 9, "b", Some("op-1")).await,
        200,
        "a replay"
    );
    assert_eq!(put(app, "ledger", 2, "late", None).await, 409, "stale");
    reset(app, "ledger", 3).await;
    assert_eq!(put(app, "ledger", 4, "c", None).await, 200);
    let refused = app
        .put("ledger")
        .token("not-a-number")
        .body("x")
        .send()
        .await;
    assert_eq!(refused.status, 400, "{}", refused.json);
    assert_eq!(put(app, "plain", 5, "x", None).await, 201);
    let refused = app.put("never").token("nope").body("x").send().await;
    assert_eq!(refused.status, 400, "{}", refused.json);
}

#[apply(both_backends)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_state_changed_by_sql_is_named_and_an_honest_one_verifies(#[case] backend: Backend) {
    let db = test_db!(backend);
    let app = TestApp::spawn(&db).await;
    history(&app).await;
    let dir = tempfile::tempdir().unwrap();
    let checkpoint = dir.path().join("verified.json");
    let checkpoint = checkpoint.to_str().unwrap();
    let report = clean(&db, &["--checkpoint", checkpoint]).await;
    assert_eq!(report["states"], 2, "ledger and plain have rows: {report}");
    assert_eq!(report["unchecked_states"], json!([]));
    let (code, text) = audit(&db, &["verify"]).await;
    assert_eq!(code, 0, "{text}");
    assert!(
        text.contains("the stored state of 2 resources agrees with their audit"),
        "{text}"
    );

    let pool = db.raw_pool().await;
    // The refused attempt is the ledger's last row: it records the state the reset and the
    // write after it left, generation 4 at revision 3.
    let head = newest_id(&pool, "ledger").await;
    let accepted: i64 = on_raw!(&pool, h => sqlx::query_scalar(
        "SELECT max(id) FROM audit WHERE resource = 'ledger' AND outcome = 'accepted'",
    )
    .fetch_one(h)
    .await
    .unwrap());

    // The fence lowered: the generation the audit's last row recorded is named, in a full run
    // and in one that reads only the rows after its checkpoint.
    sql(
        &pool,
        "UPDATE resources SET highest_token = 2 WHERE key = 'ledger'",
    )
    .await;
    for args in [&[][..], &["--checkpoint", checkpoint][..]] {
        let breach = one_breach(&db, args, "ledger").await;
        assert_eq!(breach["audit_id"], head, "{breach}");
        assert_eq!(
            breach["problem"], "highest generation 2 is stored, its audit says 4",
            "{breach}"
        );
    }
    sql(
        &pool,
        "UPDATE resources SET highest_token = 4 WHERE key = 'ledger'",
    )
    .await;
    clean(&db, &[]).await;

    // The value replaced: held to the digest its last accepted write recorded.
    set_value(&pool, b"forged").await;
    let breach = one_breach(&db, &[], "ledger").await;
    assert_eq!(breach["audit_id"], accepted, "{breach}");
    assert!(
        breach["problem"]
            .as_str()
            .unwrap()
            .starts_with("the value's SHA-256 is "),
        "{breach}"
    );
    set_value(&pool, b"c").await;
    clean(&db, &[]).await;

    // The revision moved: one breach, at the row that records it.
    sql(
        &pool,
        "UPDATE resources SET revision = revision + 1 WHERE key = 'plain'",
    )
    .await;
    let breach = one_breach(&db, &[], "plain").await;
    assert_eq!(breach["audit_id"], newest_id(&pool, "plain").await);
    assert_eq!(breach["problem"], "revision 2 is stored, its audit says 1");
    sql(
        &pool,
        "UPDATE resources SET revision = 1 WHERE key = 'plain'",
    )
    .await;

    // How fast the rows are found may depend on when the last accepted write was (a
    // partitioned audit looks at the days since first), what is found does not.
    sql(
        &pool,
        "UPDATE resources SET updated_at_us = 9000000000000000 WHERE key = 'plain'",
    )
    .await;
    clean(&db, &[]).await;

    // A resource row made by hand: nothing in the audit wrote it.
    insert_resource(&pool, "forged", 7).await;
    let breach = one_breach(&db, &[], "forged").await;
    assert!(
        breach["problem"]
            .as_str()
            .unwrap()
            .contains("added outside fencewatch"),
        "{breach}"
    );
    sql(&pool, "DELETE FROM resources WHERE key = 'forged'").await;
    clean(&db, &["--checkpoint", checkpoint]).await;
}

#[apply(both_backends)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_row_without_a_place_in_a_chain_is_a_breach(#[case] backend: Backend) {
    let db = test_db!(backend);
    let app = TestApp::spawn(&db).await;
    history(&app).await;
    let dir = tempfile::tempdir().unwrap();
    let checkpoint = dir.path().join("verified.json");
    let checkpoint = checkpoint.to_str().unwrap();
    clean(&db, &["--checkpoint", checkpoint]).await;
    let pool = db.raw_pool().await;
    // For a resource with no chain of its own: no walk can tell it from an older row.
    let insert = "INSERT INTO audit (at_us, resource, outcome, token, highest_token, revision) \
                  VALUES (1, $1, 'accepted', 9, 9, 1) RETURNING id";
    let injected: i64 = on_raw!(&pool, h => sqlx::query_scalar(insert)
        .bind("ghost")
        .fetch_one(h)
        .await
        .unwrap());
    for args in [&[][..], &["--checkpoint", checkpoint][..]] {
        let breach = one_breach(&db, args, "ghost").await;
        assert_eq!(breach["audit_id"], injected, "{breach}");
        assert_eq!(
            breach["problem"],
            format!("row {injected} has no place in the chain: it was added outside fencewatch")
        );
    }
    sql(&pool, "DELETE FROM audit WHERE resource = 'ghost'").await;
    // After a chain's rows: named once, by the walk or by this check.
    let after: i64 = on_raw!(&pool, h => sqlx::query_scalar(insert)
        .bind("plain")
        .fetch_one(h)
        .await
        .unwrap());
    let breach = one_breach(&db, &[], "plain").await;
    assert_eq!(breach["audit_id"], after, "{breach}");
}

#[apply(both_backends)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn after_a_prune_what_the_audit_no_longer_records_is_listed_not_guessed(
    #[case] backend: Backend,
) {
    let db = test_db!(backend);
    let app = TestApp::spawn(&db).await;
    assert_eq!(put(&app, "idle", 1, "a", None).await, 201);
    assert_eq!(put(&app, "busy", 1, "a", None).await, 201);
    assert_eq!(put(&app, "busy", 2, "b", None).await, 200);
    tokio::time::sleep(Duration::from_millis(50)).await;
    let cutoff = fencewatch::domain::audit::format_rfc3339_micros(&chrono::Utc::now());
    tokio::time::sleep(Duration::from_millis(50)).await;
    // After the cut: a stale write and a reset of `busy`, its accepted writes all before it.
    assert_eq!(put(&app, "busy", 1, "late", None).await, 409);
    reset(&app, "busy", 1).await;
    let (code, text) = audit(&db, &["prune", "--before", &cutoff]).await;
    assert_eq!(code, 0, "{text}");
    let report = clean(&db, &[]).await;
    assert_eq!(report["states"], 2, "{report}");
    let unchecked: Vec<(String, String)> = report["unchecked_states"]
        .as_array()
        .unwrap()
        .iter()
        .map(|u| {
            (
                u["resource"].as_str().unwrap().to_owned(),
                u["what"].as_str().unwrap().to_owned(),
            )
        })
        .collect();
    let pair = |r: &str, w: &str| (r.to_owned(), w.to_owned());
    assert_eq!(
        unchecked,
        [
            pair("busy", "value"),
            pair("idle", "highest generation and revision"),
            pair("idle", "value"),
        ],
        "busy's reset still records its generation: {report}"
    );
    let (code, text) = audit(&db, &["verify"]).await;
    assert_eq!(code, 0, "{text}");
    assert!(
        text.contains(
            "unchecked idle: its value: the audit row of its last accepted write was pruned"
        ),
        "{text}"
    );
    // What the audit still records is still held: the reset's generation.
    let pool = db.raw_pool().await;
    sql(
        &pool,
        "UPDATE resources SET highest_token = 2 WHERE key = 'busy'",
    )
    .await;
    let breach = one_breach(&db, &[], "busy").await;
    assert_eq!(
        breach["problem"],
        "highest generation 2 is stored, its audit says 1"
    );
}

#[apply(both_backends)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rows_older_than_the_chain_stay_a_count_and_later_ones_are_breaches(
    #[case] backend: Backend,
) {
    let db = test_db!(backend);
    let folder = match backend {
        Backend::Sqlite => "migrations/sqlite",
        Backend::Postgres => "migrations/postgres",
    };
    // A database as the build before this check left it, with rows and a resource from before
    // the chain existed.
    let earlier = tempfile::tempdir().unwrap();
    let source = Path::new(env!("CARGO_MANIFEST_DIR")).join(folder);
    for file in std::fs::read_dir(&source).unwrap() {
        let path = file.unwrap().path();
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        if name.as_str() < "20261204000028" {
            std::fs::copy(&path, earlier.path().join(&name)).unwrap();
        }
    }
    let pool = db.raw_pool().await;
    let migrator = sqlx::migrate::Migrator::new(earlier.path()).await.unwrap();
    on_raw!(&pool, h => migrator.run(h).await.unwrap());
    let now = chrono::Utc::now().timestamp_micros();
    for _ in 0..2 {
        on_raw!(&pool, h => sqlx::query(
            "INSERT INTO audit (at_us, resource, outcome, token, highest_token, revision) \
             VALUES ($1, 'old/row', 'accepted', 1, 1, 1)",
        )
        .bind(now)
        .execute(h)
        .await
        .unwrap()
        .rows_affected());
    }
    insert_resource(&pool, "old/row", 1).await;
    pool.close().await;

    // Opening the store migrates, recording the boundary.
    let app = TestApp::spawn(&db).await;
    assert_eq!(put(&app, "new", 1, "a", None).await, 201);
    let report = clean(&db, &[]).await;
    assert_eq!(report["unchained"], 2, "{report}");
    let unchecked = report["unchecked_states"].as_array().unwrap();
    assert_eq!(unchecked.len(), 2, "{report}");
    assert!(unchecked.iter().all(|u| u["resource"] == "old/row"));
    let (_, text) = audit(&db, &["verify"]).await;
    assert!(text.contains("(2 older rows are not chained)"), "{text}");

    // One more such row now was not written by fencewatch.
    let pool = db.raw_pool().await;
    on_raw!(&pool, h => sqlx::query(
        "INSERT INTO audit (at_us, resource, outcome, token, highest_token, revision) \
         VALUES ($1, 'old/row', 'accepted', 2, 2, 2)",
    )
    .bind(now)
    .execute(h)
    .await
    .unwrap()
    .rows_affected());
    let breach = one_breach(&db, &[], "old/row").await;
    assert_eq!(breach["audit_id"], newest_id(&pool, "old/row").await);
}
