//! The fence under an ORM, as an application team would adopt it
//! (`assets/examples/orm_worker.py`, SQLAlchemy 2 over psycopg 3): a worker loads a region's
//! orders, pauses past its generation (SIGSTOP, the article's pause) while a newer one writes,
//! and resumes. SQLAlchemy's UPDATE names only the columns that changed, leaving the token
//! column out. With the documented recipe (the generation stated per transaction) the old
//! worker's writes are refused, SQLAlchemy raises `StaleDataError` and rolls back, and the
//! refusals are in the audit all the same and in a watching daemon's overlaps within a second;
//! without it, a table whose generation is stated refuses the UPDATE that states none.

use crate::helpers::{fencewatch, http_client, Backend, Daemon, TestDb, UserDb};
use serde_json::Value;
use std::process::Stdio;
use std::time::{Duration, Instant};
use tokio::process::Command;

const WORKER: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/assets/examples/orm_worker.py");
const EXIT_FENCED: i32 = 3;

/// Whether python3 can import SQLAlchemy and psycopg; missing, the test is skipped, saying so,
/// unless `FENCEWATCH_REQUIRE_PEERS=1` makes that a failure (`.ci/run` installs both).
fn python_with_sqlalchemy() -> bool {
    let found = std::process::Command::new("python3")
        .args(["-c", "import sqlalchemy, psycopg"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|status| status.success());
    if !found {
        assert!(
            std::env::var("FENCEWATCH_REQUIRE_PEERS").as_deref() != Ok("1"),
            "FENCEWATCH_REQUIRE_PEERS=1 but python3 cannot import sqlalchemy and psycopg"
        );
        eprintln!(
            "SKIPPED: python3 cannot import sqlalchemy and psycopg; orm_worker.py was not run"
        );
    }
    found
}

const ORDERS: &str = "CREATE TABLE orders (id integer PRIMARY KEY, region text NOT NULL, \
     status text NOT NULL, updated_by text, fence_token bigint NOT NULL DEFAULT 1); \
     INSERT INTO orders (id, region, status) SELECT i, 'eu', 'new' FROM generate_series(1, 20) i; \
     INSERT INTO orders (id, region, status) VALUES (100, 'us', 'new')";

/// The shop: its orders protected (the generation stated, the default), the worker role
/// granted the guard, and a daemon watching it.
async fn shop() -> (UserDb, Daemon, TestDb) {
    let db = UserDb::new(Backend::Postgres).await;
    db.run(ORDERS).await;
    for args in [
        &["fence", "install", "--database", db.url.as_str()][..],
        &[
            "fence",
            "protect",
            "--database",
            db.url.as_str(),
            "orders",
            "--token-column",
            "fence_token",
            "--scope-column",
            "region",
            "--owner-column",
            "updated_by",
        ],
    ] {
        let (code, stdout, stderr) = fencewatch(args).await;
        assert_eq!(code, 0, "{args:?}: {stdout}{stderr}");
    }
    db.grant_guard().await;
    let daemon_db = TestDb::new(Backend::Sqlite).await;
    let watch = format!("shop={}", db.url);
    let daemon = Daemon::spawn(&daemon_db, &["--watch", &watch]).await;
    (db, daemon, daemon_db)
}

/// Starts the worker; with `pause`, waits until it has stopped itself after reading.
async fn worker(db: &UserDb, token: i64, owner: &str, extra: &[&str]) -> tokio::process::Child {
    let token = token.to_string();
    let mut child = Command::new("python3")
        .arg(WORKER)
        .args([
            "--database",
            &db.app_url,
            "--token",
            &token,
            "--owner",
            owner,
        ])
        .args(["--status", &format!("shipped-by-{owner}")])
        .args(extra)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    if extra.contains(&"--pause-after-read") {
        let pid = child.id().unwrap();
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
            // The state is the field after the command's closing parenthesis.
            if stat
                .rsplit(')')
                .next()
                .is_some_and(|rest| rest.trim_start().starts_with('T'))
            {
                break;
            }
            assert!(Instant::now() < deadline, "the worker never paused");
            if let Ok(Some(status)) = child.try_wait() {
                panic!("the worker exited {status} before pausing");
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }
    child
}

async fn finish(child: tokio::process::Child) -> (i32, String) {
    let out = child.wait_with_output().await.unwrap();
    (
        out.status.code().unwrap_or(-1),
        format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        ),
    )
}

fn resume(child: &tokio::process::Child) {
    let pid = child.id().unwrap().to_string();
    let status = std::process::Command::new("kill")
        .args(["-CONT", &pid])
        .status()
        .unwrap();
    assert!(status.success());
}

/// The orders' (status, updated_by) as they are.
async fn orders(db: &UserDb) -> Vec<(String, Option<String>)> {
    let mut conn: sqlx::PgConnection = sqlx::Connection::connect(&db.app_url).await.unwrap();
    let rows =
        sqlx::query_as("SELECT status, updated_by FROM orders WHERE region = 'eu' ORDER BY id")
            .fetch_all(&mut conn)
            .await
            .unwrap();
    sqlx::Connection::close(conn).await.ok();
    rows
}

/// The eu audit's (outcome, token, owner), as the installer reads it.
async fn eu_audit(db: &UserDb) -> Vec<(String, Option<i64>, Option<String>)> {
    let mut conn: sqlx::PgConnection = sqlx::Connection::connect(&db.url).await.unwrap();
    let rows = sqlx::query_as(
        "SELECT outcome, token, owner FROM fencewatch.audit WHERE resource = 'eu' ORDER BY id",
    )
    .fetch_all(&mut conn)
    .await
    .unwrap();
    sqlx::Connection::close(conn).await.ok();
    rows
}

async fn overlaps(base: &str) -> Vec<Value> {
    let body: Value = http_client()
        .get(format!("{base}/v1/overlaps?state=all"))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    body["overlaps"].as_array().cloned().unwrap_or_default()
}

#[cfg_attr(
    not(fencewatch_pg),
    ignore = "needs PostgreSQL: set FENCEWATCH_TEST_PG"
)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_paused_orm_worker_writes_nothing_and_its_refusals_outlive_its_rollback() {
    if !python_with_sqlalchemy() {
        return;
    }
    let (db, daemon, _daemon_db) = shop().await;
    let old = worker(&db, 1, "orm-A", &["--pause-after-read"]).await;
    let (code, out) = finish(worker(&db, 2, "orm-B", &[]).await).await;
    assert_eq!(code, 0, "{out}");
    resume(&old);
    let (code, out) = finish(old).await;
    let resumed = Instant::now();
    assert_eq!(code, EXIT_FENCED, "{out}");
    assert!(
        out.contains("fenced") && out.contains("StaleData") || out.contains("0 were matched"),
        "{out}"
    );
    assert!(
        orders(&db)
            .await
            .iter()
            .all(|(status, by)| status == "shipped-by-orm-B" && by.as_deref() == Some("orm-B")),
        "the successor's values stand"
    );
    // After the ORM's rollback, the refusal is in the audit (one row per refused statement:
    // SQLAlchemy sends one UPDATE per order).
    let audit = eu_audit(&db).await;
    let refused: Vec<_> = audit
        .iter()
        .filter(|(outcome, _, _)| outcome == "stale")
        .collect();
    assert!(!refused.is_empty(), "{audit:?}");
    assert!(
        refused
            .iter()
            .all(|(_, token, owner)| *token == Some(1) && owner.as_deref() == Some("orm-A")),
        "{audit:?}"
    );
    // And in the watching daemon's overlaps, within a second.
    let found = loop {
        let found = overlaps(&daemon.base).await;
        if let Some(overlap) = found.iter().find(|o| o["resource"] == "eu") {
            break overlap.clone();
        }
        assert!(
            resumed.elapsed() < Duration::from_secs(1),
            "no overlap within a second: {found:?}"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    };
    println!(
        "overlap seen {} ms after the old worker exited",
        resumed.elapsed().as_millis()
    );
    assert_eq!(found["source"], "shop");
    assert_eq!(found["stale_token"], 1);
    assert_eq!(found["superseding_token"], 2);
    assert_eq!(found["stale_owner"], "orm-A");

    // A refused INSERT affects zero rows without an error: the recipe's check at commit turns
    // it into the same StaleDataError, and nothing of that transaction is written.
    let (code, out) = finish(worker(&db, 1, "orm-A", &["--new-order", "21"]).await).await;
    assert_eq!(code, EXIT_FENCED, "{out}");
    let mut conn: sqlx::PgConnection = sqlx::Connection::connect(&db.app_url).await.unwrap();
    let new: i64 = sqlx::query_scalar("SELECT count(*) FROM orders WHERE id = 21")
        .fetch_one(&mut conn)
        .await
        .unwrap();
    assert_eq!(new, 0);
    sqlx::Connection::close(conn).await.ok();
    daemon.kill().await;
}

/// Without the recipe, SQLAlchemy's UPDATE leaves the token column out; a table whose
/// generation is stated refuses it (FW400), audited, whatever token the row holds.
#[cfg_attr(
    not(fencewatch_pg),
    ignore = "needs PostgreSQL: set FENCEWATCH_TEST_PG"
)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_orm_update_that_states_no_generation_is_refused() {
    if !python_with_sqlalchemy() {
        return;
    }
    let (db, daemon, _daemon_db) = shop().await;
    let old = worker(&db, 1, "orm-A", &["--pause-after-read", "--no-recipe"]).await;
    let (code, out) = finish(worker(&db, 2, "orm-B", &[]).await).await;
    assert_eq!(code, 0, "{out}");
    resume(&old);
    let (code, out) = finish(old).await;
    assert_eq!(code, EXIT_FENCED, "{out}");
    assert!(out.contains("FW400"), "{out}");
    assert!(orders(&db)
        .await
        .iter()
        .all(|(status, _)| status == "shipped-by-orm-B"));
    let audit = eu_audit(&db).await;
    assert!(
        audit
            .iter()
            .any(|(outcome, _, owner)| outcome == "invalid" && owner.as_deref() == Some("orm-A")),
        "the refusal outlived the rollback: {audit:?}"
    );
    daemon.kill().await;
}
