//! `audit incidents` and `audit timeline KEY` on a long history show its latest part by
//! default (the N latest incidents, a resource's latest rows), read from the newest end of an
//! index; `--limit`/`--latest` choose how much, `--all` everything.

use crate::both_backends;
use crate::helpers::{fencewatch as run, Backend, TestDb};
use crate::test_db;
use rstest_reuse::apply;
use serde_json::Value;

async fn audit_json(db: &TestDb, args: &[&str]) -> Value {
    let mut all = vec!["audit", "--database", &db.url];
    all.extend_from_slice(args);
    let (code, stdout, stderr) = run(&all).await;
    assert_eq!(code, 0, "{stdout}{stderr}");
    serde_json::from_str(&stdout).unwrap()
}

fn ids(list: &Value, field: &str) -> Vec<i64> {
    list.as_array()
        .unwrap()
        .iter()
        .filter_map(|item| item[field].as_i64())
        .collect()
}

/// The audit ids of a timeline's writes, in its order.
fn write_ids(timeline: &Value) -> Vec<i64> {
    timeline["entries"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["kind"] == "write")
        .map(|e| e["id"].as_i64().unwrap())
        .collect()
}

#[apply(both_backends)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn incidents_and_timelines_show_the_latest_by_default(#[case] backend: Backend) {
    let db = test_db!(backend);
    // 3,000 rows over 5 resources and 30 days: a stale write every few hours on each, so
    // about 150 incidents (an overlap closes after a quiet minute).
    let (code, stdout, stderr) = run(&[
        "bench",
        "--database",
        &db.url,
        "--fill",
        "3000",
        "--fill-resources",
        "5",
        "--duration",
        "0s",
    ])
    .await;
    assert_eq!(code, 0, "{stdout}{stderr}");

    let every = audit_json(&db, &["incidents", "--all", "--json"]).await;
    let every = ids(&every["incidents"], "id");
    assert!(every.len() > 100, "{} incidents", every.len());
    let latest = audit_json(&db, &["incidents", "--json"]).await;
    assert_eq!(
        ids(&latest["incidents"], "id"),
        every[every.len() - 100..],
        "the 100 latest, oldest of them first"
    );
    let three = audit_json(&db, &["incidents", "--limit", "3", "--json"]).await;
    assert_eq!(ids(&three["incidents"], "id"), every[every.len() - 3..]);
    let (code, table, note) = run(&["audit", "--database", &db.url, "incidents"]).await;
    assert_eq!(code, 0, "{note}");
    assert_eq!(table.lines().count(), 101, "a header and 100 rows");
    assert!(note.contains("the 100 latest incidents"), "{note}");
    let (code, _, error) =
        run(&["audit", "--database", &db.url, "incidents", "--limit", "0"]).await;
    assert_ne!(code, 0);
    assert!(error.contains("--limit"), "{error}");

    let whole = audit_json(&db, &["timeline", "bench/0", "--all", "--json"]).await;
    let whole = write_ids(&whole);
    assert!(
        whole.len() > 500,
        "about 3,000 rows over 5 resources: {}",
        whole.len()
    );
    let latest = audit_json(&db, &["timeline", "bench/0", "--json"]).await;
    assert_eq!(write_ids(&latest), whole[whole.len() - 200..]);
    let five = audit_json(&db, &["timeline", "bench/0", "--latest", "5", "--json"]).await;
    assert_eq!(write_ids(&five), whole[whole.len() - 5..]);
    let (code, _, error) = run(&[
        "audit",
        "--database",
        &db.url,
        "timeline",
        "bench/0",
        "--latest",
        "5",
        "--since",
        "1h",
    ])
    .await;
    assert_ne!(code, 0, "a window and --latest together are refused");
    assert!(error.contains("--latest"), "{error}");
}
