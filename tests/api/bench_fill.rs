//! `fencewatch bench --fill N`: an audit of N rows as the bench's writers would have left it,
//! which `audit verify` passes, whose newest rows `audit log` shows first, whose fence state
//! and overlaps agree with it, and on which a second fill or a load still verifies.

use crate::both_backends;
use crate::helpers::{fencewatch as run, Backend, TestDb};
use crate::on_raw;
use crate::test_db;
use rstest_reuse::apply;
use serde_json::{json, Value};

/// `bench --fill ROWS --duration 0s --json` on the test's database: the fill's report.
async fn fill(db: &TestDb, rows: &str) -> Value {
    let (code, stdout, stderr) = run(&[
        "bench",
        "--database",
        &db.url,
        "--fill",
        rows,
        "--fill-resources",
        "50",
        "--duration",
        "0s",
        "--json",
    ])
    .await;
    assert_eq!(code, 0, "{stdout}{stderr}");
    serde_json::from_str(&stdout).unwrap()
}

async fn verify(db: &TestDb) -> Value {
    let (code, stdout, stderr) = run(&["audit", "--database", &db.url, "verify", "--json"]).await;
    assert_eq!(code, 0, "{stdout}{stderr}");
    serde_json::from_str(&stdout).unwrap()
}

/// One integer from a query on the test's database.
async fn count(db: &TestDb, sql: &str) -> i64 {
    let pool = db.raw_pool().await;
    let value: i64 = on_raw!(&pool, h => sqlx::query_scalar(sql).fetch_one(h).await.unwrap());
    pool.close().await;
    value
}

/// The fence state, the overlaps and the audit agree: every resource's revision is its
/// accepted rows, its generation the highest accepted, and the overlaps count every stale row.
async fn assert_consistent(db: &TestDb) {
    let disagreeing = count(
        db,
        "SELECT count(*) FROM resources AS r WHERE r.revision <> \
           (SELECT count(*) FROM audit AS a WHERE a.resource = r.key AND a.outcome = 'accepted') \
         OR r.highest_token <> \
           (SELECT max(a.token) FROM audit AS a WHERE a.resource = r.key \
              AND a.outcome = 'accepted')",
    )
    .await;
    assert_eq!(disagreeing, 0, "resources whose state is not their audit's");
    let stale = count(db, "SELECT count(*) FROM audit WHERE outcome = 'stale'").await;
    let sighted = count(
        db,
        "SELECT CAST(COALESCE(sum(rejected_writes), 0) AS BIGINT) FROM ownership_overlaps",
    )
    .await;
    assert!(stale > 0);
    assert_eq!(sighted, stale, "overlaps that do not count every stale row");
}

#[apply(both_backends)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_filled_audit_verifies_and_lists_newest_first_and_fills_again(#[case] backend: Backend) {
    let db = test_db!(backend);
    let report = fill(&db, "20000").await;
    assert_eq!(
        (report["rows"].as_u64(), report["resources"].as_u64()),
        (Some(20_000), Some(50)),
        "{report}"
    );
    assert!(
        report["rows_per_second"].as_f64().unwrap() > 0.0,
        "{report}"
    );
    assert!(report.get("http").is_none(), "the load ran: {report}");

    let verified = verify(&db).await;
    assert_eq!(
        (
            verified["rows"].as_i64(),
            verified["resources"].as_i64(),
            &verified["breaches"]
        ),
        (Some(20_000), Some(50), &json!([])),
        "{verified}"
    );
    assert_consistent(&db).await;
    if backend == Backend::Postgres {
        // Rows 30 days back land in their days' partitions, not in the safety net.
        assert_eq!(count(&db, "SELECT count(*) FROM audit_default").await, 0);
        assert!(
            count(
                &db,
                "SELECT count(*) FROM pg_partition_tree('audit') WHERE isleaf"
            )
            .await
                > 30
        );
    }
    // 400 rows a resource: one owner, the bench writers' generation.
    assert_eq!(
        count(
            &db,
            "SELECT count(*) FROM resources WHERE highest_token = 1000"
        )
        .await,
        50
    );

    let (code, stdout, stderr) = run(&[
        "audit",
        "--database",
        &db.url,
        "log",
        "--limit",
        "5",
        "--json",
    ])
    .await;
    assert_eq!(code, 0, "{stderr}");
    let rows: Vec<Value> = stdout
        .lines()
        .map(|line| serde_json::from_str(line).unwrap())
        .collect();
    let newest = count(&db, "SELECT max(id) FROM audit").await;
    let ids: Vec<i64> = rows.iter().map(|row| row["id"].as_i64().unwrap()).collect();
    assert_eq!(ids, (newest - 4..=newest).rev().collect::<Vec<_>>());
    let at = chrono::DateTime::parse_from_rfc3339(rows[0]["at"].as_str().unwrap()).unwrap();
    let age = chrono::Utc::now().signed_duration_since(at);
    assert!(age.num_seconds() < 60, "the newest row is {age} old");
    assert!(rows[0]["resource"].as_str().unwrap().starts_with("bench/"));
    assert!(rows[0]["body_sha256"].is_string() && rows[0]["body_len"].is_i64());

    // On top of the first: the chains continue from their heads.
    let again = fill(&db, "20000").await;
    assert_eq!(again["rows"].as_u64(), Some(20_000), "{again}");
    let verified = verify(&db).await;
    assert_eq!(
        (verified["rows"].as_i64(), &verified["breaches"]),
        (Some(40_000), &json!([])),
        "{verified}"
    );
    assert_consistent(&db).await;
}

/// A load after a fill writes as the current owner (its seed writes are accepted), and a fill
/// after that load continues its chains.
#[apply(both_backends)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_load_after_a_fill_and_a_fill_after_it_still_verify(#[case] backend: Backend) {
    let db = test_db!(backend);
    let (code, stdout, stderr) = run(&[
        "bench",
        "--database",
        &db.url,
        "--fill",
        "5000",
        "--resources",
        "50",
        "--connections",
        "2",
        "--duration",
        "1s",
        "--no-baseline",
        "--json",
    ])
    .await;
    assert_eq!(code, 0, "{stdout}{stderr}");
    let report: Value = serde_json::from_str(&stdout).unwrap();
    assert_eq!(report["fill"]["rows"].as_u64(), Some(5_000), "{report}");
    let writes = report["http"]["requests"].as_u64().unwrap();
    assert!(writes > 0 && report["http"]["errors"] == 0, "{report}");
    let verified = verify(&db).await;
    assert_eq!(verified["breaches"], json!([]), "{verified}");
    let after_load = verified["rows"].as_u64().unwrap();
    // The 50 seed writes and the load's, after the fill's.
    assert!(after_load > 5_050, "{verified}");

    fill(&db, "5000").await;
    let verified = verify(&db).await;
    assert_eq!(
        (verified["rows"].as_u64(), &verified["breaches"]),
        (Some(after_load + 5_000), &json!([])),
        "{verified}"
    );
}

#[tokio::test]
async fn bad_fill_arguments_are_refused_with_a_reason() {
    for (args, expected) in [
        (vec!["--fill", "0"], "0 is not in 1.."),
        (vec!["--fill=-5"], "invalid value '-5'"),
        (
            vec!["--fill", "10", "--fill-span", "0s"],
            "the span must be longer than 0s",
        ),
        (vec!["--fill-resources", "10"], "--fill <ROWS>"),
        (
            vec!["--fill", "10", "--url", "http://127.0.0.1:9"],
            "with --url, name it with --database",
        ),
    ] {
        let mut all = vec!["bench", "--duration", "0s"];
        all.extend(&args);
        let (code, stdout, stderr) = run(&all).await;
        assert_ne!(code, 0, "{args:?} was taken: {stdout}");
        assert!(stderr.contains(expected), "{args:?}: {stderr}");
    }
}
