//! Ownership overlaps: opened by a stale write, grown by the next ones, closed after a quiet
//! period, kept across restarts.

use crate::both_backends;
use crate::helpers::{Backend, Daemon, Reply, SseClient, TestApp};
use crate::test_db;
use fencewatch::live::LiveConfig;
use rstest_reuse::apply;
use serde_json::{json, Value};
use std::time::Duration;

const WAIT: Duration = Duration::from_secs(10);

async fn overlaps(app: &TestApp, query: &str) -> Vec<Value> {
    let reply = app.get(&format!("/v1/overlaps{query}")).await;
    assert_eq!(reply.status, 200, "{}", reply.json);
    reply.json["overlaps"].as_array().unwrap().clone()
}

#[apply(both_backends)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn overlaps_open_grow_and_close(#[case] backend: Backend) {
    let db = test_db!(backend);
    let live = LiveConfig {
        overlap_quiet: Duration::from_secs(1),
        ..LiveConfig::default()
    };
    let app = TestApp::on(&db).live(live).spawn().await;
    let mut events = SseClient::connect(&app.base, None).await;

    assert_eq!(
        app.put("totals")
            .token(8)
            .owner("new")
            .body("v")
            .send()
            .await
            .status,
        201
    );
    assert!(
        overlaps(&app, "").await.is_empty(),
        "no overlap before a stale write"
    );
    app.put("totals")
        .token(7)
        .owner("old")
        .body("v")
        .send()
        .await
        .assert_problem(409, "stale-token");
    // Visible by the time the response was sent.
    let open = overlaps(&app, "?state=open").await;
    assert_eq!(open.len(), 1);
    let first = &open[0];
    assert_eq!(
        (
            first["resource"].as_str(),
            first["stale_token"].as_i64(),
            first["superseding_token"].as_i64()
        ),
        (Some("totals"), Some(7), Some(8))
    );
    assert_eq!(
        (
            first["stale_owner"].as_str(),
            first["superseding_owner"].as_str()
        ),
        (Some("old"), Some("new"))
    );
    assert_eq!(
        (first["rejected_writes"].as_i64(), first["state"].as_str()),
        (Some(1), Some("open"))
    );
    assert_eq!(first["first_seen"], first["last_seen"]);

    app.put("totals")
        .token(7)
        .owner("old")
        .body("v")
        .send()
        .await;
    app.put("totals")
        .token(6)
        .owner("older")
        .body("v")
        .send()
        .await;
    let open = overlaps(&app, "?state=open").await;
    assert_eq!(open.len(), 2, "grouped by resource and stale generation");
    let seven = open.iter().find(|o| o["stale_token"] == 7).unwrap();
    assert_eq!(seven["rejected_writes"], 2);
    assert!(seven["last_seen"].as_str() > seven["first_seen"].as_str());
    assert_eq!(seven["id"], first["id"]);

    // Live: opened, then grew (or straight to its grown state), then the second one opened.
    let mut changes = Vec::new();
    while changes.len() < 2
        || !changes
            .iter()
            .any(|(token, change, _): &(i64, String, i64)| *token == 6 && change == "opened")
    {
        let event = events.next_of("overlap", WAIT).await.json();
        changes.push((
            event["stale_token"].as_i64().unwrap(),
            event["change"].as_str().unwrap().to_owned(),
            event["rejected_writes"].as_i64().unwrap(),
        ));
    }
    assert!(
        changes
            .iter()
            .any(|(token, _, count)| *token == 7 && *count == 2),
        "{changes:?}"
    );

    // Quiet for a second: both close.
    let closed = events.next_of("overlap", WAIT).await.json();
    let closed_too = events.next_of("overlap", WAIT).await.json();
    assert_eq!(
        (closed["change"].as_str(), closed_too["change"].as_str()),
        (Some("closed"), Some("closed"))
    );
    assert!(overlaps(&app, "?state=open").await.is_empty());
    let all_closed = overlaps(&app, "?state=closed").await;
    assert_eq!(all_closed.len(), 2);
    assert!(all_closed.iter().all(|o| o["closed_at"].is_string()));

    // The stale owner writes again: a new overlap opens.
    app.put("totals")
        .token(7)
        .owner("old")
        .body("v")
        .send()
        .await;
    let reopened = overlaps(&app, "?state=open").await;
    assert_eq!(
        (reopened.len(), reopened[0]["rejected_writes"].as_i64()),
        (1, Some(1))
    );
    assert_ne!(reopened[0]["id"], first["id"]);
    assert_eq!(overlaps(&app, "").await.len(), 3, "all by default");
    assert_eq!(overlaps(&app, "?resource=totals&limit=1").await.len(), 1);
    for bad in ["?state=half", "?limit=0", "?colour=red"] {
        app.get(&format!("/v1/overlaps{bad}"))
            .await
            .assert_problem(400, "invalid-request");
    }
}

/// A zombie refused by the lease authority overlaps with the lease's newer holder, even where
/// the resource never saw the newer generation.
#[apply(both_backends)]
#[tokio::test]
async fn a_superseded_write_overlaps_with_the_leases_holder(#[case] backend: Backend) {
    let db = test_db!(backend);
    let app = TestApp::spawn(&db).await;
    let acquire = |holder: &'static str| {
        app.http
            .post(format!("{}/v1/leases/jobs/acquire", app.base))
            .json(&json!({"holder": holder, "ttl_ms": 1}))
            .send()
    };
    acquire("old").await.unwrap();
    tokio::time::sleep(Duration::from_millis(5)).await;
    acquire("new").await.unwrap();
    app.put("jobs/x")
        .token(1)
        .lease("jobs")
        .owner("old")
        .body("v")
        .send()
        .await
        .assert_problem(409, "stale-token");
    let open = overlaps(&app, "?state=open").await;
    assert_eq!(open.len(), 1);
    assert_eq!(
        (
            open[0]["stale_token"].as_i64(),
            open[0]["superseding_token"].as_i64()
        ),
        (Some(1), Some(2))
    );
    assert_eq!(open[0]["superseding_owner"], "new");
}

#[apply(both_backends)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn overlaps_survive_a_restart(#[case] backend: Backend) {
    let db = test_db!(backend);
    let http = crate::helpers::http_client();
    let daemon = Daemon::spawn(&db, &["--overlap-quiet", "1h"]).await;
    for (token, owner) in [(5, "b"), (4, "a"), (4, "a"), (4, "a")] {
        http.put(format!("{}/v1/resources/kept", daemon.base))
            .header("Fencing-Token", token.to_string())
            .header("Fencing-Owner", owner)
            .body("v")
            .send()
            .await
            .unwrap();
    }
    assert!(daemon.terminate().await);
    let daemon = Daemon::spawn(&db, &["--overlap-quiet", "1h"]).await;
    let reply = Reply::from(
        http.get(format!("{}/v1/overlaps?state=open", daemon.base))
            .send()
            .await
            .unwrap(),
    )
    .await;
    let open = reply.json["overlaps"].as_array().unwrap();
    assert_eq!(open.len(), 1);
    assert_eq!(
        (
            open[0]["stale_token"].as_i64(),
            open[0]["rejected_writes"].as_i64()
        ),
        (Some(4), Some(3))
    );
    let stats = Reply::from(
        http.get(format!("{}/v1/stats", daemon.base))
            .send()
            .await
            .unwrap(),
    )
    .await;
    assert_eq!(stats.json["open_overlaps"], 1);
    assert_eq!(
        stats.json["totals"]["stale"], 3,
        "totals are the audit's, across restarts"
    );
    daemon.kill().await;
}
