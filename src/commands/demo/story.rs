//! The demo's workers and the script of their incidents. Each worker holds one resource's lease
//! and writes with its generation; one stands by. On cue, a holder stalls past its lease (a GC
//! pause, a frozen VM), the standby is granted the next generation and writes, and the zombie
//! wakes and writes as if nothing happened, which the fence refuses. Incidents are spaced so
//! that each stands out; every third is a spike of refused retries that fires an alert, which
//! resolves once the window has passed.

use crate::api::leases::{AcquireRequest, LeaseView, ReleaseRequest, RenewRequest};
use crate::client::{DaemonClient, WriteRequest};
use std::sync::Mutex;
use std::time::Duration;
use tokio::sync::watch;
use tokio::time::Instant;

/// A grant's time to live; holders renew after every write.
const TTL_MS: i64 = 1000;
/// How often a holder writes.
const WRITE_EVERY: Duration = Duration::from_millis(250);
/// How long a zombie stalls: past its grant, long enough for its successor to be granted the
/// lease and write a few times.
const PAUSE: Duration = Duration::from_millis(1500);
/// How often a standby asks for a lease (one resource per try, in turn).
const STANDBY_POLL: Duration = Duration::from_millis(100);
/// Refused writes of an ordinary zombie, and of a spike: the alert rules fire above 2.
const LATE_WRITES: u32 = 2;
const SPIKE_WRITES: u32 = 6;
/// Every how many incidents one is a spike (the first always is, so a short run shows one).
const SPIKE_EVERY: u64 = 3;

/// When each incident happens and to which resource: the k-th at `first + k × every`, on the
/// resources in turn.
pub struct Script {
    resources: Vec<String>,
    first: Duration,
    every: Duration,
    started: Instant,
    cued: Mutex<u64>,
}

/// What a holder is told to do.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Cue {
    /// Retry refused writes in a burst (fires the stale-owner alert).
    pub spike: bool,
}

impl Script {
    pub fn new(resources: Vec<String>, first: Duration, every: Duration) -> Self {
        Self {
            resources,
            first,
            every,
            started: Instant::now(),
            cued: Mutex::new(0),
        }
    }

    pub fn resources(&self) -> &[String] {
        &self.resources
    }

    /// The incident due now on `resource`, if any; each is handed out once.
    fn due(&self, resource: &str) -> Option<Cue> {
        let mut cued = self.cued.lock().ok()?;
        let k = *cued;
        let at = self.first
            + self
                .every
                .saturating_mul(u32::try_from(k).unwrap_or(u32::MAX));
        let target = self
            .resources
            .get(usize::try_from(k).ok()? % self.resources.len())?;
        if self.started.elapsed() < at || target != resource {
            return None;
        }
        *cued += 1;
        Some(Cue {
            spike: k % SPIKE_EVERY == 0,
        })
    }
}

/// One simulated worker: stands by until a lease is free, then holds it until its cue.
pub async fn worker(id: usize, daemon: DaemonClient, script: &Script, stop: watch::Receiver<bool>) {
    let holder = format!("worker-{id}");
    let resources = script.resources();
    let mut turn = id;
    while !*stop.borrow() {
        let resource = &resources[turn % resources.len()];
        turn += 1;
        let acquire = AcquireRequest {
            holder: holder.clone(),
            ttl_ms: TTL_MS,
        };
        let granted = match daemon.acquire(resource, &acquire).await {
            Ok(answer) if answer.is_success() => answer.read::<LeaseView>().ok(),
            _ => None,
        };
        match granted {
            Some(lease) => hold(&daemon, resource, &holder, lease.token, script, &stop).await,
            None => tokio::time::sleep(STANDBY_POLL).await,
        }
    }
}

/// Writes and renews until cued (then stalls, writes late, and gives up), superseded, or
/// stopped.
async fn hold(
    daemon: &DaemonClient,
    resource: &str,
    holder: &str,
    token: i64,
    script: &Script,
    stop: &watch::Receiver<bool>,
) {
    let mut step = 0;
    while !*stop.borrow() {
        if !write(daemon, resource, token, holder, step).await {
            return;
        }
        step += 1;
        if let Some(cue) = script.due(resource) {
            tokio::time::sleep(PAUSE).await;
            // Awake, it carries on where it was, with the generation it no longer holds.
            let late = if cue.spike { SPIKE_WRITES } else { LATE_WRITES };
            for _ in 0..late {
                write(daemon, resource, token, holder, step).await;
                step += 1;
                tokio::time::sleep(Duration::from_millis(60)).await;
            }
            // Its next renewal tells it the lease is lost; it stands by again.
            let _ = daemon.renew(resource, &renew_request(holder, token)).await;
            tokio::time::sleep(Duration::from_secs(1)).await;
            return;
        }
        let renewed = daemon
            .renew(resource, &renew_request(holder, token))
            .await
            .is_ok_and(|answer| answer.is_success());
        if !renewed {
            return;
        }
        tokio::time::sleep(WRITE_EVERY).await;
    }
    let release = ReleaseRequest {
        holder: holder.to_owned(),
        token,
    };
    let _ = daemon.release(resource, &release).await;
}

fn renew_request(holder: &str, token: i64) -> RenewRequest {
    RenewRequest {
        holder: holder.to_owned(),
        token,
        ttl_ms: None,
    }
}

/// One fenced write naming the lease; returns whether it was accepted.
async fn write(daemon: &DaemonClient, resource: &str, token: i64, holder: &str, step: u32) -> bool {
    let token_text = token.to_string();
    let idempotency_key = format!("{holder}-{token}-{step}");
    let request = WriteRequest {
        token: &token_text,
        idempotency_key: Some(&idempotency_key),
        lease: Some(resource),
        owner: Some(holder),
        body: format!("total written by {holder} with generation {token}, step {step}")
            .into_bytes(),
        ..WriteRequest::default()
    };
    daemon
        .write(resource, request)
        .await
        .is_ok_and(|answer| answer.is_success())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(start_paused = true)]
    async fn incidents_come_on_schedule_to_each_resource_in_turn_every_third_a_spike() {
        let script = Script::new(
            vec!["a".into(), "b".into()],
            Duration::from_secs(1),
            Duration::from_secs(10),
        );
        assert_eq!(script.due("a"), None, "not before the first is due");
        tokio::time::advance(Duration::from_secs(1)).await;
        assert_eq!(script.due("b"), None, "the first is a's");
        assert_eq!(script.due("a"), Some(Cue { spike: true }));
        assert_eq!(script.due("a"), None, "handed out once");
        tokio::time::advance(Duration::from_secs(9)).await;
        assert_eq!(script.due("b"), None, "spaced");
        tokio::time::advance(Duration::from_secs(1)).await;
        assert_eq!(script.due("b"), Some(Cue { spike: false }));
        tokio::time::advance(Duration::from_secs(10)).await;
        assert_eq!(script.due("a"), Some(Cue { spike: false }));
        tokio::time::advance(Duration::from_secs(10)).await;
        assert_eq!(script.due("b"), Some(Cue { spike: true }));
    }
}
