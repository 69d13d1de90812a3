//! `fencewatch audit verify --checkpoint FILE`: a run reads only the rows after the positions the
//! previous one verified, still finds a change among them, a tail deleted behind them or an
//! erased resource, takes a prune in between for what it is, and leaves a change before them
//! to `--full`.

use crate::helpers::{Backend, TestApp, TestDb};
use crate::on_raw;
use crate::test_db;
use serde_json::Value;
use std::path::Path;
use std::time::Duration;
use tokio::process::Command;

const BIN: &str = env!("CARGO_BIN_EXE_fencewatch");

/// Runs `fencewatch audit --database … verify --checkpoint FILE ARGS`; returns the exit code
/// and stdout.
async fn verify(db: &TestDb, checkpoint: &Path, args: &[&str]) -> (i32, String) {
    let output = Command::new(BIN)
        .args(["audit", "--database", &db.url, "verify", "--checkpoint"])
        .arg(checkpoint)
        .args(args)
        .env("FENCEWATCH_LOG", "warn")
        .output()
        .await
        .unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(!stderr.contains("error"), "{stderr}");
    (
        output.status.code().unwrap_or(-1),
        String::from_utf8(output.stdout).unwrap(),
    )
}

/// A clean run's report.
async fn verified(db: &TestDb, checkpoint: &Path, args: &[&str]) -> Value {
    let mut args = args.to_vec();
    args.push("--json");
    let (code, stdout) = verify(db, checkpoint, &args).await;
    assert_eq!(code, 0, "{stdout}");
    serde_json::from_str(&stdout).unwrap()
}

/// A run that finds one breach: it, after checking the human output names its row.
async fn broken(db: &TestDb, checkpoint: &Path, args: &[&str]) -> Value {
    let mut json_args = args.to_vec();
    json_args.push("--json");
    let (code, stdout) = verify(db, checkpoint, &json_args).await;
    assert_eq!(code, 1, "the breach must fail verification: {stdout}");
    let report: Value = serde_json::from_str(&stdout).unwrap();
    let breaches = report["breaches"].as_array().unwrap();
    assert_eq!(breaches.len(), 1, "{report}");
    let breach = breaches[0].clone();
    let (code, human) = verify(db, checkpoint, args).await;
    assert_eq!(code, 1, "{human}");
    let named = match breach["audit_id"].as_i64() {
        Some(id) => format!(
            "BROKEN {}: at audit row {id}",
            breach["resource"].as_str().unwrap()
        ),
        None => format!(
            "BROKEN {}: at position",
            breach["resource"].as_str().unwrap()
        ),
    };
    assert!(human.contains(&named), "{human}");
    breach
}

/// `count` accepted writes on `resource` from generation `from` on; their audit ids.
async fn write(app: &TestApp, resource: &str, from: i64, count: i64) -> Vec<i64> {
    let mut ids = Vec::new();
    for token in from..from + count {
        let reply = app
            .put(resource)
            .token(token)
            .owner("w")
            .body("v")
            .send()
            .await;
        assert!(
            reply.status == 200 || reply.status == 201,
            "{:?}",
            reply.json
        );
        ids.push(reply.json["audit_id"].as_i64().unwrap());
    }
    ids
}

fn counts(report: &Value) -> [Option<i64>; 4] {
    [
        report["rows"].as_i64(),
        report["resources"].as_i64(),
        report["covered_rows"].as_i64(),
        report["covered_chains"].as_i64(),
    ]
}

#[rstest::rstest]
#[case::sqlite(Backend::Sqlite)]
#[cfg_attr(
    not(fencewatch_pg),
    ignore = "needs PostgreSQL: set FENCEWATCH_TEST_PG"
)]
#[case::postgres(Backend::Postgres)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_incremental_run_reads_only_the_new_rows_and_catches_a_change_among_them(
    #[case] backend: Backend,
) {
    let db = test_db!(backend);
    let app = TestApp::spawn(&db).await;
    let dir = tempfile::tempdir().unwrap();
    let checkpoint = dir.path().join("verified.json");
    write(&app, "r1", 1, 5).await;
    write(&app, "r2", 1, 4).await;
    // No file yet: every row, and the file records where each chain ends.
    let first = verified(&db, &checkpoint, &[]).await;
    assert_eq!(counts(&first), [Some(9), Some(2), Some(0), Some(0)]);
    assert_eq!(first["full"], true);
    assert!(checkpoint.exists());
    write(&app, "r1", 6, 3).await;
    write(&app, "r3", 1, 1).await;
    let second = verified(&db, &checkpoint, &[]).await;
    assert_eq!(
        counts(&second),
        [Some(4), Some(2), Some(9), Some(2)],
        "only r1's three new rows and r3's: {second}"
    );
    assert_eq!(second["full"], false);
    let (_, human) = verify(&db, &checkpoint, &[]).await;
    assert!(
        human.starts_with("ok: 0 rows in 0 chains verify")
            && human.contains("13 earlier rows in 3 chains are covered by the checkpoint"),
        "{human}"
    );
    // A row changed among those written since is found, and the file is left as it was.
    let new = write(&app, "r2", 5, 2).await;
    let recorded = std::fs::read(&checkpoint).unwrap();
    let pool = db.raw_pool().await;
    on_raw!(&pool, h => sqlx::query("UPDATE audit SET owner = 'mallory' WHERE id = $1")
        .bind(new[0])
        .execute(h)
        .await
        .unwrap().rows_affected());
    let breach = broken(&db, &checkpoint, &[]).await;
    assert_eq!(
        (breach["resource"].as_str(), breach["audit_id"].as_i64()),
        (Some("r2"), Some(new[0])),
        "{breach}"
    );
    assert!(breach["problem"].as_str().unwrap().contains("changed"));
    assert_eq!(std::fs::read(&checkpoint).unwrap(), recorded);
}

#[rstest::rstest]
#[case::sqlite(Backend::Sqlite)]
#[cfg_attr(
    not(fencewatch_pg),
    ignore = "needs PostgreSQL: set FENCEWATCH_TEST_PG"
)]
#[case::postgres(Backend::Postgres)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_change_before_the_checkpoint_is_found_only_by_a_full_run(#[case] backend: Backend) {
    let db = test_db!(backend);
    let app = TestApp::spawn(&db).await;
    let dir = tempfile::tempdir().unwrap();
    let checkpoint = dir.path().join("verified.json");
    let old = write(&app, "r1", 1, 4).await;
    verified(&db, &checkpoint, &[]).await;
    let pool = db.raw_pool().await;
    on_raw!(&pool, h => sqlx::query("UPDATE audit SET token = 99 WHERE id = $1")
        .bind(old[1])
        .execute(h)
        .await
        .unwrap().rows_affected());
    write(&app, "r1", 5, 2).await;
    // What an incremental run does not cover, by design: it reads only the two new rows.
    let incremental = verified(&db, &checkpoint, &[]).await;
    assert_eq!(counts(&incremental), [Some(2), Some(1), Some(4), Some(1)]);
    let breach = broken(&db, &checkpoint, &["--full"]).await;
    assert_eq!(
        (breach["resource"].as_str(), breach["audit_id"].as_i64()),
        (Some("r1"), Some(old[1])),
        "{breach}"
    );
}

#[rstest::rstest]
#[case::sqlite_tail(Backend::Sqlite, "tail")]
#[case::sqlite_erased(Backend::Sqlite, "erased")]
#[cfg_attr(
    not(fencewatch_pg),
    ignore = "needs PostgreSQL: set FENCEWATCH_TEST_PG"
)]
#[case::postgres_tail(Backend::Postgres, "tail")]
#[cfg_attr(
    not(fencewatch_pg),
    ignore = "needs PostgreSQL: set FENCEWATCH_TEST_PG"
)]
#[case::postgres_erased(Backend::Postgres, "erased")]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rows_removed_behind_the_checkpoint_are_found(
    #[case] backend: Backend,
    #[case] removal: &str,
) {
    let db = test_db!(backend);
    let app = TestApp::spawn(&db).await;
    let dir = tempfile::tempdir().unwrap();
    let checkpoint = dir.path().join("verified.json");
    let ids = write(&app, "r1", 1, 4).await;
    write(&app, "r2", 1, 2).await;
    verified(&db, &checkpoint, &[]).await;
    let pool = db.raw_pool().await;
    on_raw!(&pool, h => {
        if removal == "tail" {
            // The last two rows deleted and the head set back onto the row before them: a
            // chain that verifies whole, shorter than the one verified.
            // The audit keeps digests as bytes, the heads as hex.
            let hex = match backend {
                Backend::Sqlite => "lower(hex(hash))",
                Backend::Postgres => "encode(hash, 'hex')",
            };
            sqlx::query(&format!(
                "UPDATE resources SET chain_seq = 2, \
                 chain_hash = (SELECT {hex} FROM audit WHERE id = $1) WHERE key = 'r1'"
            ))
            .bind(ids[1])
            .execute(h)
            .await
            .unwrap();
            sqlx::query("DELETE FROM audit WHERE id >= $1 AND resource = 'r1'")
                .bind(ids[2])
                .execute(h)
                .await
                .unwrap();
        } else {
            for sql in [
                "DELETE FROM audit WHERE resource = 'r1'",
                "DELETE FROM resources WHERE key = 'r1'",
            ] {
                sqlx::query(sql)
                    .execute(h)
                    .await
                    .unwrap();
            }
        }
    });
    let breach = broken(&db, &checkpoint, &[]).await;
    assert_eq!(breach["resource"], "r1", "{breach}");
    if removal == "tail" {
        // The chain that is left is whole: without the record of what was verified, only the
        // resource's state, still that of the deleted rows, tells.
        let fresh = broken(&db, &dir.path().join("fresh.json"), &[]).await;
        assert_eq!(
            (fresh["resource"].as_str(), fresh["audit_id"].as_i64()),
            (Some("r1"), Some(ids[1])),
            "{fresh}"
        );
        assert!(
            fresh["problem"]
                .as_str()
                .unwrap()
                .contains("highest generation 4 is stored, its audit says 2"),
            "{fresh}"
        );
    }
}

#[rstest::rstest]
#[case::sqlite(Backend::Sqlite)]
#[cfg_attr(
    not(fencewatch_pg),
    ignore = "needs PostgreSQL: set FENCEWATCH_TEST_PG"
)]
#[case::postgres(Backend::Postgres)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_prune_between_runs_is_no_breach(#[case] backend: Backend) {
    let db = test_db!(backend);
    let app = TestApp::spawn(&db).await;
    let dir = tempfile::tempdir().unwrap();
    let checkpoint = dir.path().join("verified.json");
    write(&app, "r1", 1, 3).await;
    write(&app, "r2", 1, 2).await;
    verified(&db, &checkpoint, &[]).await;
    write(&app, "r1", 4, 2).await;
    tokio::time::sleep(Duration::from_millis(50)).await;
    let cutoff = fencewatch::domain::audit::format_rfc3339_micros(&chrono::Utc::now());
    tokio::time::sleep(Duration::from_millis(50)).await;
    write(&app, "r1", 6, 2).await;
    // The prune takes r1's rows past the verified position, and all of r2's.
    let output = Command::new(BIN)
        .args(["audit", "--database", &db.url, "prune", "--before", &cutoff])
        .output()
        .await
        .unwrap();
    assert!(output.status.success(), "{output:?}");
    let after = verified(&db, &checkpoint, &[]).await;
    assert_eq!(after["breaches"], serde_json::json!([]));
    assert_eq!(after["rows"], 2, "r1's two rows after the prune: {after}");
    write(&app, "r1", 8, 1).await;
    write(&app, "r2", 3, 1).await;
    let later = verified(&db, &checkpoint, &[]).await;
    assert_eq!(counts(&later)[..2], [Some(2), Some(2)], "{later}");
    assert_eq!(verified(&db, &checkpoint, &["--full"]).await["rows"], 4);
}
