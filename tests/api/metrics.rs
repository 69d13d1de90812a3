//! `/metrics`: valid Prometheus text whose counters agree with the audit.

use crate::both_backends;
use crate::helpers::{Backend, TestApp};
use crate::test_db;
use rstest_reuse::apply;
use std::collections::HashMap;

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
