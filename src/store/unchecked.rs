//! The batch engine's doors, public only under a name that says what they skip: for tests and
//! benchmarks of the store itself, which choose how writes are batched.

use super::{Store, StoreError};
use crate::domain::{FencedWrite, LeasePolicy, WriteResult};

/// Fenced writes decided and committed by the store with **no lock-service check**.
///
/// The fence, revisions, idempotency and the leases this daemon grants are decided exactly as
/// on the daemon's path. What is skipped is the external lock: `FenceService::write`, the
/// daemon's one door for writes, reads the lock a write names (`etcd:`, `zk:`) from its lock
/// service and sets `FencedWrite::authority` from the answer; here the store trusts whatever
/// view the caller put there or, with none, judges the name against this daemon's own leases.
/// Not for serving writes: for tests and benchmarks of the store.
pub struct UncheckedWrites<'a> {
    store: &'a Store,
}

impl Store {
    /// The store's fenced writes without the lock-service check (see [`UncheckedWrites`]).
    pub fn unchecked_writes(&self) -> UncheckedWrites<'_> {
        UncheckedWrites { store: self }
    }
}

impl UncheckedWrites<'_> {
    /// A batch of one, durable when this returns.
    pub async fn apply_write(
        &self,
        write: &FencedWrite,
        policy: LeasePolicy,
    ) -> Result<WriteResult, StoreError> {
        self.store.apply_write(write, policy).await
    }

    /// `writes` decided in order and committed in one transaction (in chunks of at most
    /// `MAX_BATCH`), durable when this returns.
    pub async fn apply_batch(
        &self,
        writes: &[FencedWrite],
        policy: LeasePolicy,
    ) -> Result<Vec<WriteResult>, StoreError> {
        self.store.apply_batch(writes, policy).await
    }
}
