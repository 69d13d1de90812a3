//! `bench --zookeeper HOSTS`: the lock the ZooKeeper path's writers hold, taken with
//! ZooKeeper's lock recipe as a worker would, and released when the run ends.

use anyhow::Context;
use std::time::Duration;
use zookeeper_client as zk;

/// The lock's znode, named by the writers as `Fencing-Lease: zk:/bench-zookeeper`.
pub(super) const PATH: &str = "/bench-zookeeper";
/// The resources the writers write.
pub(super) const NAMESPACE: &str = "bench-zookeeper";

/// A held lock: its node and the node's czxid, the writers' token.
pub(super) struct HeldLock {
    client: zk::Client,
    pub(super) node: String,
    pub(super) token: i64,
}

pub(super) async fn lock(hosts: &str) -> anyhow::Result<HeldLock> {
    let wait = Duration::from_secs(30);
    let client = tokio::time::timeout(
        wait,
        zk::Client::connector()
            .with_session_timeout(Duration::from_secs(30))
            .connect(hosts),
    )
    .await
    .with_context(|| format!("ZooKeeper at {hosts} did not answer within 30 s"))?
    .with_context(|| format!("cannot reach ZooKeeper at {hosts}"))?;
    let prefix = zk::LockPrefix::new_curator(PATH, "lock-")?;
    let options = zk::LockOptions::new(zk::Acls::anyone_all())
        .with_ancestor_options(zk::CreateMode::Persistent.with_acls(zk::Acls::anyone_all()))?;
    let held = tokio::time::timeout(wait, client.lock(prefix, b"fencewatch-bench", options))
        .await
        .with_context(|| format!("the ZooKeeper lock {PATH} stayed held by another for 30 s"))?
        .context("ZooKeeper refused the lock")?;
    let path = held.lock_path().to_owned();
    // Dropping the lock client deletes the node in the background; `release` deletes it and
    // waits for the answer instead.
    std::mem::forget(held);
    let token = client
        .check_stat(&path)
        .await
        .context("ZooKeeper did not return the lock's node")?
        .map(|stat| stat.czxid)
        .with_context(|| format!("the lock's node {path} vanished before it was read"))?;
    Ok(HeldLock {
        client,
        node: path,
        token,
    })
}

impl HeldLock {
    /// Deletes the node, which releases the lock; a failure leaves it to the session's end.
    pub(super) async fn release(self) {
        if let Err(error) = self.client.delete(&self.node, None).await {
            tracing::warn!(%error, node = %self.node, "failed to release the bench's ZooKeeper lock");
        }
    }
}
