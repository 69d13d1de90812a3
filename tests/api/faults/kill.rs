//! Daemons SIGKILLed again and again under load, and the checks of what survived.

use super::load::{cycles, start_load, Ack, Observed, MIN_ACKS_PER_CYCLE, RESOURCES};
use super::proxy::{proxied_url, Proxy};
use crate::helpers::{Daemon, Rng, TestDb};
use fencewatch::domain::{Outcome, ResourceKey};
use fencewatch::store::{AuditQuery, Store};
use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::watch;

/// Runs `cycles()` rounds of load in which a fresh daemon is SIGKILLed at a random moment,
/// beside `survivors` daemons that stay up throughout (PostgreSQL only), then checks.
pub(super) async fn kill_repeatedly(
    db: &TestDb,
    survivors: usize,
    outages: Option<&Proxy>,
) -> Report {
    // With a proxy, the daemons reach PostgreSQL through it, and it is cut now and then.
    let database_url = match outages {
        Some(proxy) => proxied_url(&db.url, proxy),
        None => db.url.clone(),
    };
    let stable: Vec<Daemon> = {
        let mut daemons = Vec::new();
        for _ in 0..survivors {
            daemons.push(Daemon::on(&database_url).spawn().await);
        }
        daemons
    };
    let mut observed = Observed::default();
    let mut rng = Rng::new(7);
    let cycles = cycles();
    for cycle in 0..cycles {
        let victim = Daemon::on(&database_url).spawn().await;
        let mut bases = vec![victim.base.clone()];
        bases.extend(stable.iter().map(|d| d.base.clone()));
        let (stop_tx, stop_rx) = watch::channel(false);
        let acknowledged = Arc::new(AtomicU64::new(0));
        let mut clients = start_load(&bases, cycle + 1, &stop_rx, &acknowledged);
        tokio::time::sleep(Duration::from_millis(300 + rng.below(500))).await;
        // Enough writes in flight to prove something, however slow the machine is today: the
        // kill waits for them rather than the test asserting a throughput.
        let enough = tokio::time::Instant::now() + Duration::from_secs(30);
        while acknowledged.load(Ordering::Relaxed) < MIN_ACKS_PER_CYCLE
            && tokio::time::Instant::now() < enough
        {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        if let Some(proxy) = outages {
            proxy.cut();
            tokio::time::sleep(Duration::from_millis(200 + rng.below(400))).await;
            proxy.restore();
            tokio::time::sleep(Duration::from_millis(rng.below(300))).await;
        }
        victim.kill().await;
        // The survivors' clients go on a little after the kill, then everyone stops.
        tokio::time::sleep(Duration::from_millis(100)).await;
        stop_tx.send(true).ok();
        while let Some(done) = clients.join_next().await {
            let done = done.expect("a client task panicked");
            observed.acks.extend(done.acks);
            observed.grants.extend(done.grants);
            observed.unanswered += done.unanswered;
            observed.refused += done.refused;
        }
    }
    for daemon in stable {
        daemon.kill().await;
    }
    let store = db.store().await;
    check(&store, &observed, cycles).await
}

/// Every audit row of `resources`, by id.
pub(super) async fn audit_by_id(
    store: &Store,
    resources: impl IntoIterator<Item = String>,
) -> HashMap<i64, fencewatch::domain::AuditEntry> {
    let mut audit = HashMap::new();
    for resource in resources {
        let rows = store
            .audit_page(&AuditQuery {
                resource: Some(ResourceKey::parse(resource).unwrap()),
                limit: 1_000_000,
                ..Default::default()
            })
            .await
            .unwrap();
        audit.extend(rows.into_iter().map(|row| (row.id, row)));
    }
    audit
}

/// Every acknowledged write is in the audit as it was acknowledged.
pub(super) fn assert_acknowledged(
    audit: &HashMap<i64, fencewatch::domain::AuditEntry>,
    acks: &[Ack],
) {
    for ack in acks {
        let row = audit
            .get(&ack.audit_id)
            .unwrap_or_else(|| panic!("acknowledged {ack:?} is not in the audit"));
        assert_eq!(row.resource, ack.resource);
        assert_eq!(row.outcome.as_str(), ack.outcome);
        assert_eq!(row.token, Some(ack.token));
        assert_eq!(row.revision, ack.revision, "{ack:?}");
    }
}

#[derive(Debug)]
pub(super) struct Report {
    pub(super) cycles: usize,
    pub(super) acknowledged: usize,
    pub(super) unanswered: usize,
    pub(super) audit_rows: usize,
    pub(super) grants: usize,
    pub(super) refused: usize,
}

pub(super) async fn check(store: &Store, observed: &Observed, cycles: usize) -> Report {
    // 1. Per resource, in commit order, accepted generations never go down, and every refusal
    //    as stale was below what had been accepted.
    let mut audit: HashMap<i64, fencewatch::domain::AuditEntry> = HashMap::new();
    for resource in 0..RESOURCES {
        let key = ResourceKey::parse(format!("faults/r{resource}")).unwrap();
        let rows = store
            .audit_page(&AuditQuery {
                resource: Some(key.clone()),
                limit: 1_000_000,
                ..Default::default()
            })
            .await
            .unwrap();
        let mut highest = 0;
        let mut last_accepted = None;
        for row in rows.iter().rev() {
            let token = row.token.unwrap();
            match row.outcome {
                Outcome::Accepted => {
                    assert!(
                        token >= highest,
                        "{key}: generation {token} accepted after {highest} (audit {})",
                        row.id
                    );
                    highest = token;
                    last_accepted = Some(row);
                }
                Outcome::Stale => assert!(token < highest, "{key}: {row:?}"),
                other => panic!("{key}: unexpected outcome {other:?}"),
            }
        }
        // 2b. The resource holds what its last accepted write carried.
        if let Some(last) = last_accepted {
            let stored = store.read_value(&key).await.unwrap().unwrap();
            assert_eq!(stored.revision, last.revision, "{key}");
            assert_eq!(stored.highest_token, last.token.unwrap(), "{key}");
            assert_eq!(
                fencewatch::domain::sha256_hex(&stored.value),
                last.body_sha256.clone().unwrap(),
                "{key}"
            );
        }
        audit.extend(rows.into_iter().map(|row| (row.id, row)));
    }
    // 2. Every acknowledged write is in the audit as it was acknowledged.
    assert_acknowledged(&audit, &observed.acks);
    // 3. No generation granted twice, and each holder saw its grants rise.
    let mut granted: BTreeMap<i64, &str> = BTreeMap::new();
    for grant in &observed.grants {
        if let Some(before) = granted.insert(grant.token, &grant.holder) {
            panic!(
                "generation {} was granted to {before} and to {}",
                grant.token, grant.holder
            );
        }
    }
    let mut by_holder: HashMap<&str, Vec<i64>> = HashMap::new();
    for grant in &observed.grants {
        by_holder
            .entry(&grant.holder)
            .or_default()
            .push(grant.token);
    }
    for (holder, tokens) in by_holder {
        assert!(
            tokens.windows(2).all(|w| w[0] < w[1]),
            "{holder}: {tokens:?}"
        );
    }
    // 4. The chains verify.
    let report = store.verify_audit().await.unwrap();
    assert!(report.breaches.is_empty(), "{:?}", report.breaches);
    Report {
        cycles,
        acknowledged: observed.acks.len(),
        unanswered: observed.unanswered,
        audit_rows: audit.len(),
        grants: observed.grants.len(),
        refused: observed.refused,
    }
}
