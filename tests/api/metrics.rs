//! `/metrics`: valid Prometheus text whose counters agree with the audit.

use crate::helpers::{fencewatch, http_client, Backend, Daemon, TestApp};
use crate::{both_backends, on_raw, test_db};
use rstest_reuse::apply;
use std::collections::HashMap;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

/// Parses the exposition strictly enough to catch malformed output: every line is a comment or
/// `name{labels} value`, and every sample's family has a TYPE.
fn parse(text: &str) -> HashMap<String, f64> {
    let mut samples = HashMap::new();
    let mut typed = Vec::new();
    for line in text.lines() {
        if let Some(rest) = line.strip_prefix("# TYPE ") {
            typed.push(rest.split_whitespace().next().unwrap().to_owned());
            continue;
        }
        if line.starts_with('#') || line.is_empty() {
            continue;
        }
        let (series, value) = line
            .rsplit_once(' ')
            .unwrap_or_else(|| panic!("bad line {line:?}"));
        let value: f64 = value
            .parse()
            .unwrap_or_else(|_| panic!("bad value in {line:?}"));
        let name = series.split('{').next().unwrap();
        assert!(
            name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_'),
            "bad name {name:?}"
        );
        if let Some(labels) = series.strip_prefix(name) {
            assert!(
                labels.is_empty() || (labels.starts_with('{') && labels.ends_with('}')),
                "bad labels {labels:?}"
            );
        }
        assert!(
            typed.iter().any(|family| name.starts_with(family.as_str())),
            "{name} has no TYPE"
        );
        samples.insert(series.to_owned(), value);
    }
    samples
}

#[apply(both_backends)]
#[tokio::test]
async fn metrics_parse_and_match_the_audit(#[case] backend: Backend) {
    let db = test_db!(backend);
    let app = TestApp::spawn(&db).await;
    app.put("m").token(5).key("a").body("v").send().await;
    app.put("m").token(5).key("a").body("v").send().await;
    app.put("m").token(4).body("v").send().await;
    app.put("m").token(4).body("v").send().await;
    app.put("m").token(6).if_match(9).body("v").send().await;
    app.put("m").token(0).body("v").send().await;
    app.http
        .post(format!("{}/v1/leases/l/acquire", app.base))
        .json(&serde_json::json!({"holder": "w", "ttl_ms": 1000}))
        .send()
        .await
        .unwrap();

    let reply = app.get("/metrics").await;
    assert_eq!(reply.status, 200);
    let samples = parse(&String::from_utf8(reply.body).unwrap());
    let mut audit: HashMap<String, f64> = HashMap::new();
    for row in app.audit_of("m").await {
        *audit
            .entry(row["outcome"].as_str().unwrap().to_owned())
            .or_default() += 1.0;
    }
    for outcome in [
        "accepted",
        "replayed",
        "stale",
        "revision_conflict",
        "invalid",
        "superseded",
        "unauthorized",
    ] {
        let series = format!("fencewatch_writes_total{{outcome=\"{outcome}\"}}");
        assert_eq!(
            samples.get(&series).copied(),
            Some(audit.get(outcome).copied().unwrap_or(0.0)),
            "{series}"
        );
    }
    assert_eq!(samples["fencewatch_write_duration_seconds_count"], 6.0);
    assert_eq!(samples["fencewatch_leases_granted_total"], 1.0);
    assert!(samples.contains_key("fencewatch_open_overlaps"));
    assert!(samples.contains_key("fencewatch_alerts_firing"));
    assert!(samples.contains_key("fencewatch_events_dropped_total"));
    assert_eq!(
        samples.contains_key("fencewatch_sqlite_wal_bytes"),
        backend == Backend::Sqlite,
        "the WAL's size is SQLite's alone"
    );
    // No key, so no witness: none of its series, whose age would page.
    assert!(
        samples
            .keys()
            .all(|series| !series.starts_with("fencewatch_audit_checkpoint")),
        "{samples:?}"
    );
    // No unbounded labels: no resource keys or operation ids anywhere.
    assert!(samples
        .keys()
        .all(|series| !series.contains("\"m\"") && !series.contains("resource")));
}

/// The WAL gauge is the file's size at the scrape, which an operator watches for a WAL that
/// readers keep from starting over.
#[tokio::test]
async fn sqlite_exports_the_size_of_its_wal_file() {
    let db = test_db!(Backend::Sqlite);
    let app = TestApp::spawn(&db).await;
    for token in 1..=20 {
        app.put("w")
            .token(token)
            .body("v".repeat(2000))
            .send()
            .await;
    }
    let database = db.url.strip_prefix("sqlite://").unwrap();
    let wal = std::path::PathBuf::from(format!("{database}-wal"));
    // Background tasks may write between the readings; below the checkpoint mark the WAL only
    // grows, so the scrape's reading lies between the two.
    let before = std::fs::metadata(&wal).unwrap().len();
    let reply = app.get("/metrics").await;
    let after = std::fs::metadata(&wal).unwrap().len();
    let reported = parse(&String::from_utf8(reply.body).unwrap())["fencewatch_sqlite_wal_bytes"];
    assert!(
        before > 20 * 2000,
        "twenty 2 KB values are in the WAL: {before}"
    );
    assert!(
        before as f64 <= reported && reported <= after as f64,
        "{before} <= {reported} <= {after}"
    );
}

/// The writer copies its WAL back into the database file between its transactions, on its own
/// schedule, long before SQLite's own mark (whose checkpoint would stall a batch's commit).
/// Three hundred writes fill far fewer WAL pages than that mark: the database file grows by
/// their values only if the writer's schedule checkpointed.
#[tokio::test]
async fn the_sqlite_writer_checkpoints_between_its_transactions() {
    let db = test_db!(Backend::Sqlite);
    let app = TestApp::spawn(&db).await;
    let database = std::path::PathBuf::from(db.url.strip_prefix("sqlite://").unwrap());
    let before = std::fs::metadata(&database).unwrap().len();
    for n in 0..300 {
        let reply = app
            .put(&format!("r{n}"))
            .token(1)
            .body("v".repeat(2000))
            .send()
            .await;
        assert_eq!(reply.status, 201, "{:?}", reply.body);
    }
    let after = std::fs::metadata(&database).unwrap().len();
    let wal = std::fs::metadata(format!("{}-wal", database.display()))
        .unwrap()
        .len();
    assert!(
        wal < 10_000 * 4096,
        "below SQLite's own mark, so no checkpoint of its own: WAL {wal} bytes"
    );
    assert!(
        after >= before + 200 * 2000,
        "the values of the first transactions were copied into the file: {before} -> {after} \
         bytes, WAL {wal} bytes"
    );
}

/// A daemon that signs counts its witness's rounds: checkpoints signed as the audit changes,
/// with the newest one's time; rounds that found nothing new; and, once rows it signed are
/// erased behind it, refused rounds that sign nothing more.
#[apply(both_backends)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_witness_counts_its_rounds(#[case] backend: Backend) {
    let db = test_db!(backend);
    let dir = tempfile::tempdir().unwrap();
    let key = dir.path().join("witness.key");
    let key = key.to_str().unwrap();
    let (code, _, stderr) = fencewatch(&["audit", "keygen", "--out", key]).await;
    assert_eq!(code, 0, "{stderr}");
    let daemon = Daemon::spawn(
        &db,
        &["--audit-signing-key", key, "--witness-interval", "100ms"],
    )
    .await;
    let http = http_client();
    for (resource, token) in [("r1", 1), ("r1", 2), ("r2", 1)] {
        let reply = http
            .put(format!("{}/v1/resources/{resource}", daemon.base))
            .header("Fencing-Token", token.to_string())
            .body("v")
            .send()
            .await
            .unwrap();
        assert!(reply.status().is_success(), "{}", reply.status());
    }
    let written = now_seconds();
    // A checkpoint taken after the writes, then rounds that found nothing new.
    let signed = scrape_until(&daemon.base, |s| {
        s["fencewatch_audit_checkpoint_last_signed_timestamp_seconds"] >= written
            && s[&rounds("unchanged")] >= 1.0
    })
    .await;
    let last_signed = signed["fencewatch_audit_checkpoint_last_signed_timestamp_seconds"];
    assert!(last_signed <= now_seconds(), "{last_signed}");
    // The first at the start, over an empty audit, and at least one over the writes.
    assert!(signed[&rounds("signed")] >= 2.0, "{signed:?}");
    assert_eq!(signed[&rounds("refused")], 0.0, "{signed:?}");
    assert_eq!(signed[&rounds("failed")], 0.0, "{signed:?}");

    let pool = db.raw_pool().await;
    on_raw!(&pool, h => {
        for sql in [
            "DELETE FROM audit WHERE resource = 'r1'",
            "DELETE FROM resources WHERE key = 'r1'",
        ] {
            sqlx::query(sql).execute(h).await.unwrap();
        }
    });
    pool.close().await;
    let refused = scrape_until(&daemon.base, |s| s[&rounds("refused")] >= 2.0).await;
    assert_eq!(
        refused["fencewatch_audit_checkpoint_last_signed_timestamp_seconds"], last_signed,
        "nothing signed since: {refused:?}"
    );
    assert_eq!(refused[&rounds("signed")], signed[&rounds("signed")]);
    assert!(daemon.terminate().await);
}

fn rounds(outcome: &str) -> String {
    format!("fencewatch_audit_checkpoints_total{{outcome=\"{outcome}\"}}")
}

fn now_seconds() -> f64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_secs_f64()
}

/// The daemon's samples once `done` holds of them (within 20 s).
async fn scrape_until(
    base: &str,
    done: impl Fn(&HashMap<String, f64>) -> bool,
) -> HashMap<String, f64> {
    let http = http_client();
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let text = http
            .get(format!("{base}/metrics"))
            .send()
            .await
            .unwrap()
            .text()
            .await
            .unwrap();
        let samples = parse(&text);
        if samples.contains_key(&rounds("signed")) && done(&samples) {
            return samples;
        }
        assert!(Instant::now() < deadline, "{text}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}
