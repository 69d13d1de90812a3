//! `bench --etcd URL`: the lock the etcd path's writers hold, taken with etcd's lock API as a
//! worker would, and released when the run ends.

use anyhow::Context;
use etcd_client::{Client, ConnectOptions, GetOptions, LockOptions};
use std::time::Duration;

/// The lock's key prefix, named by the writers as `Fencing-Lease: etcd:bench-etcd`.
pub(super) const PREFIX: &str = "bench-etcd";

/// A held lock: its key under `PREFIX/` and the key's create revision, the writers' token.
pub(super) struct HeldLock {
    client: Client,
    lease: i64,
    pub(super) key: String,
    pub(super) token: i64,
}

/// Takes the lock under a lease that outlives the run (`hold_for`), so that it needs no
/// keep-alive while the load runs.
pub(super) async fn lock(endpoint: &str, hold_for: Duration) -> anyhow::Result<HeldLock> {
    let wait = Duration::from_secs(10);
    let options = ConnectOptions::new()
        .with_connect_timeout(wait)
        .with_timeout(wait);
    let mut client = tokio::time::timeout(
        wait,
        Client::connect(
            endpoint.split(',').map(str::trim).collect::<Vec<_>>(),
            Some(options),
        ),
    )
    .await
    .with_context(|| format!("etcd at {endpoint} did not answer within 10 s"))?
    .with_context(|| format!("cannot reach etcd at {endpoint}"))?;
    let ttl = i64::try_from(hold_for.as_secs())
        .unwrap_or(i64::MAX)
        .saturating_add(300);
    let lease = client
        .lease_grant(ttl, None)
        .await
        .context("etcd refused a lease")?
        .id();
    let locked = tokio::time::timeout(
        Duration::from_secs(30),
        client.lock(PREFIX, Some(LockOptions::new().with_lease(lease))),
    )
    .await
    .with_context(|| format!("the etcd lock {PREFIX} stayed held by another for 30 s"))?
    .context("etcd refused the lock")?;
    let key = String::from_utf8_lossy(locked.key()).into_owned();
    let got = client
        .get(key.as_str(), None::<GetOptions>)
        .await
        .context("etcd did not return the lock's key")?;
    let token = got
        .kvs()
        .first()
        .map(|kv| kv.create_revision())
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
    pub(super) async fn release(mut self) {
        if let Err(error) = self.client.lease_revoke(self.lease).await {
            tracing::warn!(%error, key = %self.key, "failed to release the bench's etcd lock");
        }
    }
}
