//! Many clients (and, on PostgreSQL, several daemons) racing on one resource: afterwards the
//! history must read as if the writes had happened one at a time.

use crate::both_backends;
use crate::helpers::{audit_of, Backend, Daemon, Reply, Rng, TestApp};
use crate::test_db;
use rstest_reuse::apply;
use serde_json::Value;
use std::collections::HashMap;

const CLIENTS: u64 = 16;
const WRITES_PER_CLIENT: u64 = 25;

/// What one client was told about one attempt.
struct Seen {
    token: i64,
    status: u16,
    outcome: String,
    audit_id: i64,
}

/// Runs `CLIENTS` concurrent writers against the given daemons (client i uses daemon i mod n).
async fn race(bases: &[String], resource: &str) -> Vec<Seen> {
    let http = crate::helpers::http_client();
    let mut tasks = Vec::new();
    for client in 0..CLIENTS {
        let http = http.clone();
        let url = format!(
            "{}/v1/resources/{resource}",
            bases[client as usize % bases.len()]
        );
        tasks.push(tokio::spawn(async move {
            let mut rng = Rng::new(client + 1);
            let mut seen = Vec::new();
            for round in 0..WRITES_PER_CLIENT {
                // Generations overlap between clients, so both stale rejections and equal-token
                // writes are frequent.
                let token = (round * 2 + rng.below(6) + 1) as i64;
                let reply = Reply::from(
                    http.put(&url)
                        .header("Fencing-Token", token.to_string())
                        .header("Fencing-Owner", format!("client-{client}"))
                        .body(format!("client {client} round {round}"))
                        .send()
                        .await
                        .expect("PUT"),
                )
                .await;
                seen.push(Seen {
                    token,
                    status: reply.status.as_u16(),
                    outcome: reply.json["outcome"]
                        .as_str()
                        .unwrap_or_default()
                        .to_owned(),
                    audit_id: reply.json["audit_id"].as_i64().expect("audit_id"),
                });
            }
            seen
        }));
    }
    let mut all = Vec::new();
    for task in tasks {
        all.extend(task.await.expect("client task"));
    }
    all
}

/// Checks the history against what the clients saw.
async fn check(base: &str, resource: &str, seen: &[Seen]) {
    let http = crate::helpers::http_client();
    let audit = audit_of(&http, base, resource).await;
    assert_eq!(audit.len(), seen.len(), "exactly one audit row per attempt");

    // Every response names its own audit row, with the same outcome.
    let by_id: HashMap<i64, &Value> = audit
        .iter()
        .map(|r| (r["id"].as_i64().unwrap(), r))
        .collect();
    for attempt in seen {
        assert!(
            matches!(attempt.status, 200 | 201 | 409),
            "status {}",
            attempt.status
        );
        let row = by_id[&attempt.audit_id];
        assert_eq!(row["outcome"], attempt.outcome.as_str());
        assert_eq!(row["token"], attempt.token);
    }

    // Accepted writes in revision order: revisions without gaps, tokens never decreasing.
    let mut accepted: Vec<(i64, i64)> = audit
        .iter()
        .filter(|r| r["outcome"] == "accepted")
        .map(|r| {
            (
                r["revision"].as_i64().unwrap(),
                r["token"].as_i64().unwrap(),
            )
        })
        .collect();
    accepted.sort();
    assert!(!accepted.is_empty());
    for (index, (revision, _)) in accepted.iter().enumerate() {
        assert_eq!(*revision, index as i64 + 1, "revisions have no gaps");
    }
    for pair in accepted.windows(2) {
        assert!(
            pair[0].1 <= pair[1].1,
            "accepted tokens decreased: {pair:?}"
        );
    }
    // Every stale rejection really was below the fence at its moment.
    for row in audit.iter().filter(|r| r["outcome"] == "stale") {
        assert!(
            row["token"].as_i64() < row["highest_token"].as_i64(),
            "{row}"
        );
    }
    let largest = accepted.iter().map(|(_, token)| *token).max().unwrap();
    let value = Reply::from(
        http.get(format!("{base}/v1/resources/{resource}"))
            .send()
            .await
            .unwrap(),
    )
    .await;
    assert_eq!(
        value.header("fencing-token"),
        Some(largest.to_string().as_str())
    );
    assert_eq!(
        value.header("etag"),
        Some(format!("\"{}\"", accepted.len()).as_str())
    );
    let stale = seen.iter().filter(|s| s.outcome == "stale").count();
    assert!(
        stale > 0 && accepted.len() > 1,
        "the race produced both outcomes"
    );
}

#[apply(both_backends)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sixteen_clients_on_one_resource(#[case] backend: Backend) {
    let db = test_db!(backend);
    let app = TestApp::spawn(&db).await;
    let seen = race(std::slice::from_ref(&app.base), "contended").await;
    check(&app.base, "contended", &seen).await;
}

/// Two `serve` processes on one PostgreSQL database keep one fence.
#[cfg_attr(
    not(fencewatch_pg),
    ignore = "needs PostgreSQL: set FENCEWATCH_TEST_PG"
)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_daemons_on_one_postgres_database() {
    let db = test_db!(Backend::Postgres);
    let first = Daemon::spawn(&db, &[]).await;
    let second = Daemon::spawn(&db, &[]).await;
    let bases = [first.base.clone(), second.base.clone()];
    let seen = race(&bases, "shared").await;
    check(&first.base, "shared", &seen).await;
    // Each daemon served half the clients, and both see the same state.
    let a = Reply::from(
        reqwest::get(format!("{}/v1/resources/shared", first.base))
            .await
            .unwrap(),
    )
    .await;
    let b = Reply::from(
        reqwest::get(format!("{}/v1/resources/shared", second.base))
            .await
            .unwrap(),
    )
    .await;
    assert_eq!(
        (a.header("etag"), a.header("fencing-token")),
        (b.header("etag"), b.header("fencing-token"))
    );
    assert!(first.terminate().await && second.terminate().await);
}
