//! What is acknowledged stays: across clean restarts, SIGTERM under load and SIGKILL under load.

use crate::both_backends;
use crate::helpers::{audit_of, Backend, Daemon, Reply, TestDb};
use crate::test_db;
use rstest::rstest;
use rstest_reuse::apply;
use sha2::{Digest, Sha256};
use std::collections::HashMap;
use std::time::Duration;

#[apply(both_backends)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_restart_keeps_the_highest_generation(#[case] backend: Backend) {
    let db = test_db!(backend);
    let http = crate::helpers::http_client();
    let daemon = Daemon::spawn(&db, &[]).await;
    let put = |base: &str, token: i64, body: &'static str| {
        http.put(format!("{base}/v1/resources/kept"))
            .header("Fencing-Token", token.to_string())
            .body(body)
            .send()
    };
    assert_eq!(put(&daemon.base, 8, "eight").await.unwrap().status(), 201);
    assert!(daemon.terminate().await, "clean exit on SIGTERM");

    let daemon = Daemon::spawn(&db, &[]).await;
    let stale = Reply::from(put(&daemon.base, 7, "seven").await.unwrap()).await;
    stale.assert_problem(409, "stale-token");
    assert_eq!(stale.json["highest_token"], 8);
    let value = Reply::from(
        http.get(format!("{}/v1/resources/kept", daemon.base))
            .send()
            .await
            .unwrap(),
    )
    .await;
    assert_eq!(
        (value.body.as_slice(), value.header("fencing-token")),
        (&b"eight"[..], Some("8"))
    );
    assert_eq!(audit_of(&http, &daemon.base, "kept").await.len(), 2);
    daemon.kill().await;
}

/// One acknowledged attempt.
#[derive(Debug)]
struct Ack {
    resource: String,
    audit_id: i64,
    outcome: String,
    token: i64,
    revision: i64,
}

/// Writers hammer a few resources until the daemon goes away; returns what was acknowledged.
async fn load_until_gone(
    base: &str,
) -> (
    tokio::task::JoinSet<Vec<Ack>>,
    tokio::sync::watch::Sender<bool>,
) {
    let (stop_tx, stop_rx) = tokio::sync::watch::channel(false);
    let mut writers = tokio::task::JoinSet::new();
    for client in 0..8i64 {
        let http = crate::helpers::http_builder()
            .timeout(Duration::from_secs(10))
            .build()
            .unwrap();
        let base = base.to_owned();
        let stop = stop_rx.clone();
        writers.spawn(async move {
            let mut acks = Vec::new();
            for round in 0i64.. {
                if *stop.borrow() {
                    break;
                }
                let resource = format!("r{}", (client + round) % 5);
                // Tokens rise with time so most writes are accepted, some stale.
                let token = round + (client % 3) + 1;
                let sent = http
                    .put(format!("{base}/v1/resources/{resource}"))
                    .header("Fencing-Token", token.to_string())
                    .body(format!("client {client} round {round}"))
                    .send()
                    .await;
                let Ok(response) = sent else { break };
                let reply = Reply::from_checked(response).await;
                let Some(reply) = reply else { break };
                if reply.status.is_server_error() {
                    break;
                }
                acks.push(Ack {
                    resource,
                    audit_id: reply.json["audit_id"].as_i64().expect("audit_id"),
                    outcome: reply.json["outcome"].as_str().unwrap().to_owned(),
                    token,
                    revision: reply.json["revision"].as_i64().unwrap(),
                });
            }
            acks
        });
    }
    (writers, stop_tx)
}

async fn verify_acknowledged(db: &TestDb, acks: &[Ack]) -> usize {
    let daemon = Daemon::spawn(db, &[]).await;
    let http = crate::helpers::http_client();
    let mut audit: HashMap<i64, serde_json::Value> = HashMap::new();
    let mut resources: Vec<&str> = acks.iter().map(|a| a.resource.as_str()).collect();
    resources.sort();
    resources.dedup();
    for resource in &resources {
        let rows = audit_of(&http, &daemon.base, resource).await;
        // The value is the one the last accepted write carried.
        let last = rows
            .iter()
            .filter(|r| r["outcome"] == "accepted")
            .max_by_key(|r| r["revision"].as_i64())
            .unwrap();
        let value = Reply::from(
            http.get(format!("{}/v1/resources/{resource}", daemon.base))
                .send()
                .await
                .unwrap(),
        )
        .await;
        assert_eq!(
            hex::encode(Sha256::digest(&value.body)),
            last["body_sha256"].as_str().unwrap()
        );
        assert_eq!(
            value.header("etag"),
            Some(format!("\"{}\"", last["revision"]).as_str())
        );
        audit.extend(rows.into_iter().map(|r| (r["id"].as_i64().unwrap(), r)));
    }
    for ack in acks {
        let row = audit
            .get(&ack.audit_id)
            .unwrap_or_else(|| panic!("acknowledged {ack:?} is not in the audit"));
        assert_eq!(row["resource"], ack.resource.as_str());
        assert_eq!(row["outcome"], ack.outcome.as_str());
        assert_eq!(row["token"], ack.token);
        if ack.outcome == "accepted" {
            assert_eq!(row["revision"], ack.revision);
        }
    }
    daemon.kill().await;
    acks.len()
}

#[rstest]
#[case::sqlite_sigkill(Backend::Sqlite, "KILL")]
#[cfg_attr(
    not(fencewatch_pg),
    ignore = "needs PostgreSQL: set FENCEWATCH_TEST_PG"
)]
#[case::postgres_sigkill(Backend::Postgres, "KILL")]
#[case::sqlite_sigterm(Backend::Sqlite, "TERM")]
#[cfg_attr(
    not(fencewatch_pg),
    ignore = "needs PostgreSQL: set FENCEWATCH_TEST_PG"
)]
#[case::postgres_sigterm(Backend::Postgres, "TERM")]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_signal_under_load_loses_nothing_acknowledged(
    #[case] backend: Backend,
    #[case] signal: &str,
) {
    let db = test_db!(backend);
    let daemon = Daemon::spawn(&db, &[]).await;
    let (mut writers, stop) = load_until_gone(&daemon.base).await;
    tokio::time::sleep(Duration::from_millis(1500)).await;
    daemon.signal(signal);
    let mut daemon = daemon;
    let status = tokio::time::timeout(Duration::from_secs(30), daemon.child.wait())
        .await
        .unwrap()
        .unwrap();
    if signal == "TERM" {
        assert!(
            status.success(),
            "SIGTERM ends the daemon cleanly, got {status}"
        );
    }
    stop.send(true).ok();
    let mut acks = Vec::new();
    while let Some(done) = writers.join_next().await {
        acks.extend(done.unwrap());
    }
    assert!(
        acks.len() > 50,
        "only {} writes were acknowledged before the signal",
        acks.len()
    );
    let checked = verify_acknowledged(&db, &acks).await;
    eprintln!("{backend:?} SIG{signal}: {checked} acknowledged writes all survived");
}
