//! The load the fault tests run: writers and lease clients spread over the daemons, recording
//! what each was told.

use crate::helpers::{Reply, Rng};
use serde_json::json;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::watch;
use tokio::task::JoinSet;

pub(super) const RESOURCES: i64 = 6;
/// Acknowledged writes each kill cycle waits for before its kill, so that every cycle proves
/// something on a slow machine as on a fast one.
pub(super) const MIN_ACKS_PER_CYCLE: u64 = 21;

pub(super) fn cycles() -> usize {
    std::env::var("FENCEWATCH_FAULT_CYCLES")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(4)
}

/// A write the daemon answered (2xx or 409): what the client was told.
#[derive(Debug, Clone)]
pub(super) struct Ack {
    pub(super) resource: String,
    pub(super) audit_id: i64,
    pub(super) outcome: String,
    pub(super) token: i64,
    pub(super) revision: i64,
}

/// A lease generation the authority said it granted.
#[derive(Debug, Clone)]
pub(super) struct Grant {
    pub(super) token: i64,
    pub(super) holder: String,
}

#[derive(Default)]
pub(super) struct Observed {
    pub(super) acks: Vec<Ack>,
    pub(super) grants: Vec<Grant>,
    /// Requests that got no answer (the daemon died under them): their outcome is unknown.
    pub(super) unanswered: usize,
    /// Writes refused with 503 while the database was unreachable.
    pub(super) refused: usize,
}

/// Writers and lease clients spread over `bases` until told to stop or their daemon dies.
/// Tokens rise with each cycle and round, with some stale ones mixed in.
pub(super) fn start_load(
    bases: &[String],
    cycle: usize,
    stop: &watch::Receiver<bool>,
    acknowledged: &Arc<AtomicU64>,
) -> JoinSet<Observed> {
    let mut clients = JoinSet::new();
    for client in 0..6_i64 {
        let base = bases[client as usize % bases.len()].clone();
        let stop = stop.clone();
        let acknowledged = acknowledged.clone();
        clients.spawn(async move {
            let http = crate::helpers::http_builder()
                .timeout(Duration::from_secs(10))
                .build()
                .unwrap();
            let mut rng = Rng::new(cycle as u64 * 100 + client as u64);
            let mut seen = Observed::default();
            for round in 0_i64.. {
                if *stop.borrow() {
                    break;
                }
                let resource = format!("faults/r{}", rng.below(RESOURCES as u64));
                let stale = rng.below(10) == 0;
                let token =
                    cycle as i64 * 100_000 + round * 10 + client - if stale { 50 } else { 0 };
                let sent = http
                    .put(format!("{base}/v1/resources/{resource}"))
                    .header("Fencing-Token", token.max(1).to_string())
                    .header("Fencing-Owner", format!("client-{client}"))
                    .body(format!("cycle {cycle} client {client} round {round}"))
                    .send()
                    .await;
                let Ok(response) = sent else {
                    seen.unanswered += 1;
                    break;
                };
                let Some(reply) = Reply::from_checked(response).await else {
                    seen.unanswered += 1;
                    break;
                };
                assert!(
                    reply.status.as_u16() != 500,
                    "a fault must never surface as a 500: {:?}",
                    reply.json
                );
                if reply.status.is_server_error() {
                    // 503 while the database is unreachable: refused, not acknowledged.
                    seen.refused += 1;
                    tokio::time::sleep(Duration::from_millis(20)).await;
                    continue;
                }
                acknowledged.fetch_add(1, Ordering::Relaxed);
                seen.acks.push(Ack {
                    resource,
                    audit_id: reply.json["audit_id"].as_i64().expect("audit_id"),
                    outcome: reply.json["outcome"].as_str().unwrap().to_owned(),
                    token: token.max(1),
                    revision: reply.json["revision"].as_i64().unwrap(),
                });
            }
            seen
        });
    }
    for client in 0..2_usize {
        let base = bases[client % bases.len()].clone();
        let stop = stop.clone();
        clients.spawn(async move {
            let http = crate::helpers::http_builder()
                .timeout(Duration::from_secs(10))
                .build()
                .unwrap();
            let holder = format!("holder-{cycle}-{client}");
            let mut seen = Observed::default();
            while !*stop.borrow() {
                let acquired = http
                    .post(format!("{base}/v1/leases/faults/lease/acquire"))
                    .json(&json!({"holder": holder, "ttl_ms": 60_000}))
                    .send()
                    .await;
                let Ok(response) = acquired else {
                    seen.unanswered += 1;
                    break;
                };
                let Some(reply) = Reply::from_checked(response).await else {
                    seen.unanswered += 1;
                    break;
                };
                if reply.status.as_u16() != 200 {
                    tokio::time::sleep(Duration::from_millis(2)).await;
                    continue;
                }
                let token = reply.json["token"].as_i64().expect("a granted token");
                seen.grants.push(Grant {
                    token,
                    holder: holder.clone(),
                });
                // Give it back so the other client (or the next cycle) can take the next one.
                let released = http
                    .post(format!("{base}/v1/leases/faults/lease/release"))
                    .json(&json!({"holder": holder, "token": token}))
                    .send()
                    .await;
                if released.is_err() {
                    seen.unanswered += 1;
                    break;
                }
            }
            seen
        });
    }
    clients
}
