//! `bench --etcd URL`: the lock the etcd path's writers hold, taken with etcd's lock API as a
//! worker would, and released when the run ends.

use crate::authority::etcd::EtcdClient;
use anyhow::Context;
use std::time::Duration;

/// The lock's key prefix, named by the writers as `Fencing-Lease: etcd:bench-etcd`.
pub(super) const PREFIX: &str = "bench-etcd";

/// A held lock: its key under `PREFIX/` and the key's create revision, the writers' token.
pub(super) struct HeldLock {
    client: EtcdClient,
    lease: i64,
    pub(super) key: String,
    pub(super) token: i64,
}

/// Takes the lock under a lease that outlives the run (`hold_for`), so that it needs no
/// keep-alive while the load runs.
pub(super) async fn lock(endpoint: &str, hold_for: Duration) -> anyhow::Result<HeldLock> {
    let endpoints = endpoint
        .split(',')
        .map(|url| url.trim().to_owned())
        .collect();
    // The lock call waits while another holds it: 30 s covers a previous run's lease.
    let client = EtcdClient::new(endpoints, Duration::from_secs(30))?;
    let ttl = i64::try_from(hold_for.as_secs())
        .unwrap_or(i64::MAX)
        .saturating_add(300);
    let lease = client
        .grant(ttl)
        .await
        .with_context(|| format!("etcd at {endpoint} refused a lease"))?;
    let key = client
        .lock(PREFIX, lease)
        .await
        .with_context(|| format!("the etcd lock {PREFIX} could not be taken within 30 s"))?;
    let token = client
        .get(&key)
        .await
        .context("etcd did not return the lock's key")?
        .map(|got| got.create_revision)
        .with_context(|| format!("the lock's key {key} vanished before it was read"))?;
    Ok(HeldLock {
        client,
        lease,
        key,
        token,
    })
}

impl HeldLock {
    /// Revokes the lease, which releases the lock; a failure leaves it to expire.
    pub(super) async fn release(self) {
        if let Err(error) = self.client.revoke(self.lease).await {
            tracing::warn!(%error, key = %self.key, "failed to release the bench's etcd lock");
        }
    }
}
