//! Retention is a setting of the database, shared by every daemon on it: the first daemon
//! stores it, a later one is told the stored one applies, `--set-retention` changes it for all.
//! And prunes that run at once (the daemon's, `audit prune`) take turns, so the audit they leave
//! verifies.

use crate::both_backends;
use crate::helpers::{audit_of, http_client, Backend, Daemon, Put, Rng, TestDb};
use crate::test_db;
use chrono::{DateTime, Utc};
use fencewatch::domain::clock::{Clock, ManualClock};
use fencewatch::domain::{FencedWrite, FencingToken, LeasePolicy, ResourceKey};
use fencewatch::store::{Retention, RetentionClaim, Store, StoreOptions, StoreRetention};
use rstest_reuse::apply;
use std::sync::Arc;
use std::time::Duration;
use tokio::process::Command;

fn put_once(http: &reqwest::Client, base: &str, resource: &str, key: &str) -> Put {
    Put::new(http, format!("{base}/v1/resources/{resource}"))
        .token(1)
        .key(key)
        .body("once")
}

/// Asserts that the retry of `key` on `resource` through `base` was replayed, not applied.
async fn assert_replayed(http: &reqwest::Client, base: &str, resource: &str, key: &str) {
    let retry = put_once(http, base, resource, key).send().await;
    assert_eq!(
        (
            retry.status.as_u16(),
            retry.header("idempotent-replayed"),
            retry.json["revision"].as_i64()
        ),
        (201, Some("true"), Some(1)),
        "the retry through {base} was applied again: {}",
        retry.json
    );
}

/// SQLite is for one daemon: there the next daemon takes the previous one's place on the file.
/// On PostgreSQL they all keep running, side by side.
async fn keep_running(backend: Backend, daemon: Daemon, running: &mut Vec<Daemon>) {
    match backend {
        Backend::Sqlite => assert!(daemon.terminate().await, "stops cleanly"),
        Backend::Postgres => running.push(daemon),
    }
}

/// The daemon's log has, within a few seconds, a warning with every one of `parts`.
async fn assert_warned(log: &crate::helpers::DaemonLog, parts: &[&str]) {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(5);
    let mut wanted = vec!["WARN"];
    wanted.extend(parts);
    while log.lines_with(&wanted).is_empty() {
        assert!(
            tokio::time::Instant::now() < deadline,
            "no warning naming {parts:?}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// Daemon A keeps operations for the default 24 h; B was started with 2 s. A client of A
/// retries after 5 s, well inside A's window: whichever daemon the retry reaches, it is
/// replayed, and the operation is applied once. (Issue 34: B pruned A's record by its own
/// window, and the retry was applied again.)
#[apply(both_backends)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_retry_is_replayed_whichever_daemon_it_reaches(#[case] backend: Backend) {
    let db = test_db!(backend);
    let http = http_client();
    let a = Daemon::spawn(&db, &[]).await;
    let first = put_once(&http, &a.base, "shared", "op-1").send().await;
    assert_eq!(first.status, 201, "{}", first.json);
    let mut running = Vec::new();
    keep_running(backend, a, &mut running).await;
    let (b, log) = Daemon::on(&db.url)
        .args(&["--idempotency-retention", "2s"])
        .spawn_logged()
        .await;
    // B prunes every second.
    tokio::time::sleep(Duration::from_secs(5)).await;
    for daemon in running.iter().chain([&b]) {
        assert_replayed(&http, &daemon.base, "shared", "op-1").await;
    }
    let rows = audit_of(&http, &b.base, "shared").await;
    let accepted = rows.iter().filter(|row| row["outcome"] == "accepted");
    assert_eq!(accepted.count(), 1, "{rows:?}");
    let value = http
        .get(format!("{}/v1/resources/shared", b.base))
        .send()
        .await
        .unwrap();
    assert_eq!(value.headers()["etag"], "\"1\"");
    assert_warned(&log, &["2s", "24h"]).await;
}

/// The first daemon's retention is stored and outlives it; a later daemon asking for another is
/// told the stored one applies, and keeps to it; `--set-retention` stores a new one, which the
/// daemons already running follow from their next prune.
#[apply(both_backends)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_stored_retention_applies_until_set_retention_changes_it(#[case] backend: Backend) {
    let db = test_db!(backend);
    let http = http_client();
    let mut running = Vec::new();
    let first = Daemon::spawn(&db, &["--idempotency-retention", "2s"]).await;
    keep_running(backend, first, &mut running).await;

    // A daemon asking for an hour is told the stored 2 s applies, and forgets by it.
    let (second, log) = Daemon::on(&db.url)
        .args(&["--idempotency-retention", "1h"])
        .spawn_logged()
        .await;
    assert_warned(&log, &["2s", "1h"]).await;
    let written = put_once(&http, &second.base, "early", "op-a").send().await;
    assert_eq!(written.status, 201, "{}", written.json);
    let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
    loop {
        tokio::time::sleep(Duration::from_millis(500)).await;
        let retry = put_once(&http, &second.base, "early", "op-a").send().await;
        if retry.json["outcome"] == "accepted" {
            break;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "the stored 2 s did not apply: {}",
            retry.json
        );
    }
    keep_running(backend, second, &mut running).await;

    // `--set-retention` stores an hour, and every daemon keeps to it.
    let third = Daemon::spawn(&db, &["--set-retention", "--idempotency-retention", "1h"]).await;
    running.push(third);
    let written = put_once(&http, &running[0].base, "later", "op-b")
        .send()
        .await;
    assert_eq!(written.status, 201, "{}", written.json);
    tokio::time::sleep(Duration::from_secs(5)).await;
    for daemon in &running {
        assert_replayed(&http, &daemon.base, "later", "op-b").await;
    }
}

/// What the store answers of the setting: the first claim stores, a later one keeps what is
/// stored unless it replaces it, and the stored value outlives the store that wrote it.
#[apply(both_backends)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_first_claim_stores_and_later_ones_keep_it_or_replace_it(#[case] backend: Backend) {
    let db = test_db!(backend);
    let day = Retention {
        idempotency: Duration::from_secs(24 * 3600),
        audit: None,
    };
    let short = Retention {
        idempotency: Duration::from_secs(2),
        audit: Some(Duration::from_secs(90 * 24 * 3600)),
    };
    let store = db.store().await;
    assert_eq!(store.retention().await.unwrap(), None);
    let claim = |retention, when| {
        let store = store.clone();
        async move { store.claim_retention(retention, when).await.unwrap() }
    };
    assert_eq!(
        claim(day, StoreRetention::IfNoneStored).await,
        RetentionClaim::Stored
    );
    assert_eq!(
        claim(short, StoreRetention::IfNoneStored).await,
        RetentionClaim::Kept(day)
    );
    store.close().await;
    let reopened = db.store().await;
    assert_eq!(reopened.retention().await.unwrap(), Some(day));
    assert_eq!(
        reopened
            .claim_retention(short, StoreRetention::Replacing)
            .await
            .unwrap(),
        RetentionClaim::Replaced(day)
    );
    assert_eq!(reopened.retention().await.unwrap(), Some(short));
    assert_eq!(
        reopened
            .claim_retention(short, StoreRetention::Replacing)
            .await
            .unwrap(),
        RetentionClaim::Kept(short)
    );
}

/// `--audit-retention` left out stores "keep everything": a later daemon asking for a second
/// prunes nothing, until `--set-retention` stores it.
#[apply(both_backends)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn keeping_the_audit_is_a_stored_setting_too(#[case] backend: Backend) {
    let db = test_db!(backend);
    let http = http_client();
    let mut running = Vec::new();
    let first = Daemon::spawn(&db, &[]).await;
    for token in 1..=3 {
        let put = Put::new(&http, format!("{}/v1/resources/kept", first.base))
            .token(token)
            .body("x")
            .send()
            .await;
        assert!(put.status.is_success(), "{}", put.json);
    }
    keep_running(backend, first, &mut running).await;

    let (second, log) = Daemon::on(&db.url)
        .args(&["--audit-retention", "1s"])
        .spawn_logged()
        .await;
    assert_warned(&log, &["audit", "1s", "keep everything"]).await;
    tokio::time::sleep(Duration::from_secs(4)).await;
    assert_eq!(audit_of(&http, &second.base, "kept").await.len(), 3);
    keep_running(backend, second, &mut running).await;

    let third = Daemon::spawn(&db, &["--set-retention", "--audit-retention", "1s"]).await;
    let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
    while !audit_of(&http, &third.base, "kept").await.is_empty() {
        assert!(
            tokio::time::Instant::now() < deadline,
            "the stored 1 s never pruned the audit"
        );
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
    let (code, stdout) = audit_verify(&db).await;
    assert_eq!(code, 0, "{stdout}");
}

async fn audit_verify(db: &TestDb) -> (i32, String) {
    let output = Command::new(env!("CARGO_BIN_EXE_fencewatch"))
        .args(["audit", "--database", &db.url, "verify"])
        .output()
        .await
        .unwrap();
    (
        output.status.code().unwrap_or(-1),
        format!(
            "{}{}",
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr)
        ),
    )
}

fn write(resource: &str, token: i64) -> FencedWrite {
    FencedWrite::new(
        ResourceKey::parse(resource).unwrap(),
        FencingToken::new(token).unwrap(),
        format!("v{token}"),
    )
}

/// `audit prune --before T` as a process, as an operator runs it beside the daemon.
async fn prune_process(url: &str, before_us: i64) -> Result<(), String> {
    let before = DateTime::<Utc>::from_timestamp_micros(before_us).unwrap();
    let output = Command::new(env!("CARGO_BIN_EXE_fencewatch"))
        .args(["audit", "--database", url, "prune", "--json", "--before"])
        .arg(fencewatch::domain::audit::format_rfc3339_micros(&before))
        .output()
        .await
        .unwrap();
    match output.status.success() {
        true => Ok(()),
        false => Err(String::from_utf8_lossy(&output.stderr).into_owned()),
    }
}

/// Two prunes at once with different cut-offs (the daemon's retention and `audit prune`, or
/// two of either), over ten rounds of timings: both succeed, and the audit verifies after each
/// round and while they run. (Issue 34: a prune that read a chain's end before the other
/// deleted past it put the chain's checkpoint back behind the deleted rows, and verify called
/// the honest audit tampered, in 2 and 4 rounds of 10.)
#[apply(both_backends)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_prunes_at_once_leave_an_audit_that_verifies(#[case] backend: Backend) {
    const RESOURCES: usize = 30;
    const ROWS: i64 = 10;
    let db = test_db!(backend);
    let clock = Arc::new(ManualClock::starting_at(
        Utc::now() - chrono::TimeDelta::days(1),
    ));
    let writer = Store::open(
        &db.url,
        &StoreOptions {
            max_connections: 4,
            clock: clock.clone(),
            ..StoreOptions::default()
        },
    )
    .await
    .unwrap();
    let (daemon, other, verifier) = (db.store().await, db.store().await, db.store().await);
    let mut rng = Rng::new(34);
    let (mut failed, mut broken_after, mut broken_during) = (Vec::new(), Vec::new(), Vec::new());
    for round in 0..10_i64 {
        // Ten rows on each resource, a second apart.
        let start = clock.now_us();
        for step in 0..ROWS {
            let writes: Vec<FencedWrite> = (0..RESOURCES)
                .map(|r| write(&format!("pruned/{r}"), round * ROWS + step + 1))
                .collect();
            writer
                .unchecked_writes()
                .apply_batch(&writes, LeasePolicy::default())
                .await
                .unwrap();
            clock.advance(Duration::from_secs(1));
        }
        // One prunes the first three rows of each chain, the other the first seven; which one
        // starts first, and how much later the other does, change from round to round.
        let (early, late) = (start + 2_500_000, start + 6_500_000);
        let (first, second) = match round % 2 {
            0 => (early, late),
            _ => (late, early),
        };
        let delay = Duration::from_micros(rng.below(4_000));
        let by_daemon = {
            let store = daemon.clone();
            tokio::spawn(async move { store.prune_audit(first).await.map_err(|e| e.to_string()) })
        };
        let by_other = {
            let (store, url) = (other.clone(), db.url.clone());
            tokio::spawn(async move {
                tokio::time::sleep(delay).await;
                // Every third round, `audit prune` as its own process.
                match round % 3 {
                    2 => prune_process(&url, second).await,
                    _ => store
                        .prune_audit(second)
                        .await
                        .map(|_| ())
                        .map_err(|e| e.to_string()),
                }
            })
        };
        let during = verifier.verify_audit().await.unwrap();
        let (a, b) = (by_daemon.await.unwrap(), by_other.await.unwrap());
        if a.is_err() || b.is_err() {
            failed.push(format!("round {round}: {a:?} {b:?}"));
        }
        if !during.breaches.is_empty() {
            broken_during.push((round, during.breaches[0].clone()));
        }
        let after = verifier.verify_audit().await.unwrap();
        if !after.breaches.is_empty() {
            broken_after.push((round, after.breaches[0].clone()));
        }
    }
    assert!(
        failed.is_empty() && broken_after.is_empty() && broken_during.is_empty(),
        "of 10 rounds, prunes failed in {}: {failed:?}\n\
         verify called the audit broken after the prunes in {}: {broken_after:?}\n\
         and while they ran in {}: {broken_during:?}",
        failed.len(),
        broken_after.len(),
        broken_during.len()
    );
    // Every chain kept its last three rows, and `audit verify` agrees.
    let report = verifier.verify_audit().await.unwrap();
    assert_eq!(report.rows, RESOURCES as u64 * 3);
    let (code, stdout) = audit_verify(&db).await;
    assert_eq!(code, 0, "{stdout}");
}
