//! The database going away under load, in one of several ways, and the daemon recovering.

use super::kill::{assert_acknowledged, audit_by_id};
use super::load::{Ack, Observed};
use super::proxy::{proxied_url, upstream_of, Proxy};
use crate::helpers::{Backend, Daemon, Reply, SseClient};
use crate::test_db;
use std::time::Duration;
use tokio::sync::watch;
use tokio::task::JoinSet;

/// What writers saw around an outage: every answer's status, by phase.
#[derive(Default, Debug)]
pub(super) struct OutageLog {
    pub(super) acks: Vec<Ack>,
    pub(super) unavailable: usize,
    pub(super) other_errors: Vec<String>,
    pub(super) acked_after_restore: usize,
}

/// How the database goes away.
pub(super) enum Outage {
    /// The network to it is cut by a proxy for three seconds.
    Network,
    /// The network to it stops delivering for three seconds, closing nothing.
    Stall,
    /// Every connection open to it stops delivering for good, closing nothing, while new
    /// connections work.
    StallForGood,
    /// The server itself is restarted, by this shell command.
    Restart(String),
}

/// The live side came back with the writes: a write made now reaches a new subscriber of the
/// event stream.
pub(super) async fn live_side_recovered(base: &str) {
    let mut events = SseClient::connect(base, None).await;
    let reply = Reply::from(
        crate::helpers::http_client()
            .put(format!("{base}/v1/resources/outage/live"))
            .header("Fencing-Token", "1")
            .body("after")
            .send()
            .await
            .unwrap(),
    )
    .await;
    assert!(
        matches!(reply.status.as_u16(), 200 | 201),
        "{}",
        String::from_utf8_lossy(&reply.body)
    );
    let audit_id = reply.json["audit_id"].as_i64().unwrap();
    // Writes other than this one may come first (the stream starts where the tail stands). An
    // id the outage consumed but never committed is a gap the tail proves final by the server's
    // oldest running transaction; other tests' transactions on the shared server can hold that
    // back, and then the tail skips the gap after its patience (30 s), so the wait is longer.
    loop {
        let event = events.next_of("write", Duration::from_secs(45)).await;
        if event.json()["id"].as_i64() == Some(audit_id) {
            break;
        }
    }
}

/// When the shared server last started: a restart changes it.
pub(super) async fn postmaster_start_time() -> String {
    let base = std::env::var("FENCEWATCH_TEST_PG").unwrap();
    let mut conn = <sqlx::PgConnection as sqlx::Connection>::connect(&base)
        .await
        .unwrap();
    sqlx::query_scalar("SELECT pg_postmaster_start_time()::text")
        .fetch_one(&mut conn)
        .await
        .unwrap()
}

pub(super) async fn outage_under_load(outage: Outage) {
    let db = test_db!(Backend::Postgres);
    let proxy = Proxy::start(upstream_of(&db.url)).await;
    let database_url = match outage {
        Outage::Network | Outage::Stall | Outage::StallForGood => proxied_url(&db.url, &proxy),
        Outage::Restart(_) => db.url.clone(),
    };
    let daemon = Daemon::on(&database_url)
        .args(&["--db-timeout", "1s"])
        .spawn()
        .await;

    let restored = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let (stop_tx, stop_rx) = watch::channel(false);
    let mut writers = JoinSet::new();
    for client in 0..4_i64 {
        let base = daemon.base.clone();
        let stop = stop_rx.clone();
        let restored = restored.clone();
        writers.spawn(async move {
            let http = crate::helpers::http_builder()
                .timeout(Duration::from_secs(20))
                .build()
                .unwrap();
            let mut log = OutageLog::default();
            for round in 0_i64.. {
                if *stop.borrow() {
                    break;
                }
                let resource = format!("outage/r{}", client % 3);
                let token = round * 10 + client + 1;
                let after_restore = restored.load(std::sync::atomic::Ordering::SeqCst);
                let sent = http
                    .put(format!("{base}/v1/resources/{resource}"))
                    .header("Fencing-Token", token.to_string())
                    .body(format!("client {client} round {round}"))
                    .send()
                    .await;
                let reply = match sent {
                    Ok(response) => Reply::from(response).await,
                    Err(error) => {
                        log.other_errors.push(format!("no answer: {error}"));
                        continue;
                    }
                };
                match reply.status.as_u16() {
                    200 | 201 | 409 => {
                        log.acks.push(Ack {
                            resource,
                            audit_id: reply.json["audit_id"].as_i64().unwrap(),
                            outcome: reply.json["outcome"].as_str().unwrap().to_owned(),
                            token,
                            revision: reply.json["revision"].as_i64().unwrap(),
                        });
                        if after_restore {
                            log.acked_after_restore += 1;
                        }
                    }
                    503 => {
                        assert_eq!(reply.content_type(), "application/problem+json");
                        assert_eq!(reply.json["type"], "unavailable", "{:?}", reply.json);
                        log.unavailable += 1;
                        tokio::time::sleep(Duration::from_millis(50)).await;
                    }
                    other => log
                        .other_errors
                        .push(format!("{other}: {}", String::from_utf8_lossy(&reply.body))),
                }
            }
            log
        });
    }
    tokio::time::sleep(Duration::from_millis(800)).await;
    let what = match &outage {
        Outage::Network => {
            proxy.cut();
            tokio::time::sleep(Duration::from_secs(3)).await;
            proxy.restore();
            "a 3 s network outage"
        }
        Outage::Stall => {
            proxy.stall();
            tokio::time::sleep(Duration::from_secs(3)).await;
            proxy.restore();
            "a 3 s stall of the network"
        }
        Outage::StallForGood => {
            proxy.abandon_links();
            tokio::time::sleep(Duration::from_secs(12)).await;
            "every open connection stalled for good"
        }
        Outage::Restart(command) => {
            let started_before = postmaster_start_time().await;
            let status = tokio::process::Command::new("sh")
                .args(["-c", command])
                .status()
                .await
                .expect("run FENCEWATCH_PG_RESTART");
            assert!(status.success(), "{command:?} failed: {status}");
            let base = std::env::var("FENCEWATCH_TEST_PG").unwrap();
            let mut back = false;
            for _ in 0..120 {
                if <sqlx::PgConnection as sqlx::Connection>::connect(&base)
                    .await
                    .is_ok()
                {
                    back = true;
                    break;
                }
                tokio::time::sleep(Duration::from_millis(250)).await;
            }
            assert!(back, "PostgreSQL came back within 30 s");
            assert_ne!(
                postmaster_start_time().await,
                started_before,
                "the server really restarted"
            );
            "a restart of PostgreSQL"
        }
    };
    restored.store(true, std::sync::atomic::Ordering::SeqCst);
    tokio::time::sleep(Duration::from_secs(3)).await;
    stop_tx.send(true).ok();

    let mut total = OutageLog::default();
    while let Some(log) = writers.join_next().await {
        let log = log.unwrap();
        total.acks.extend(log.acks);
        total.unavailable += log.unavailable;
        total.other_errors.extend(log.other_errors);
        total.acked_after_restore += log.acked_after_restore;
    }
    assert!(
        total.other_errors.is_empty(),
        "every answer is a write's or a 503 problem: {:?}",
        total.other_errors
    );
    // A restart can be short enough for every write to wait it out (each batch takes a fresh
    // connection); a 3 s cut cannot, and a 3 s stall outlasts the 1 s timeout.
    match outage {
        Outage::Network | Outage::Stall | Outage::StallForGood => {
            assert!(
                total.unavailable > 0,
                "the outage was seen: {} acks, {} after",
                total.acks.len(),
                total.acked_after_restore
            )
        }
        Outage::Restart(_) => assert!(
            total.acks.len() > total.acked_after_restore,
            "writes were acknowledged before the restart too"
        ),
    }
    assert!(
        total.acked_after_restore > 0,
        "writes go through again once the database is back, without a restart"
    );
    let readiness = reqwest::get(format!("{}/readyz", daemon.base))
        .await
        .unwrap();
    assert_eq!(readiness.status(), 200);
    live_side_recovered(&daemon.base).await;
    daemon.kill().await;

    // Checked on the database directly, not through the proxy.
    let store = db.store().await;
    let observed = Observed {
        acks: total.acks,
        ..Observed::default()
    };
    let audit = audit_by_id(&store, (0..3).map(|r| format!("outage/r{r}"))).await;
    assert_acknowledged(&audit, &observed.acks);
    assert!(store.verify_audit().await.unwrap().breaches.is_empty());
    eprintln!(
        "PostgreSQL outage, {what}: {} writes acknowledged ({} after it), {} answered 503, \
         none lost",
        observed.acks.len(),
        total.acked_after_restore,
        total.unavailable
    );
}
