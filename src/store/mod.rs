//! Persistence over SQLite and PostgreSQL, each through its own sqlx driver (`native`). The
//! schema keeps to types both databases share (integers, text, bytes; times as microseconds
//! since the epoch) so that a statement written once serves both; where the dialects differ
//! there is one folder of migrations each, and the store matches on the database; what only one
//! database's write path needs is its engine's (`engine`).

mod alerts;
mod audit_query;
mod batch;
mod chain;
mod chain_heads;
mod checkpoints;
mod connect;
mod db_url;
mod engine;
mod error;
mod fill;
mod incident;
mod leases;
mod lock_holders;
mod lock_records;
pub(crate) mod native;
mod overlaps;
mod partitions;
mod pg_schema;
mod reads;
mod refusals;
mod refused;
mod reset;
mod retention;
mod tail;
mod tx;
mod unchecked;
mod verify;
mod wal_sync;
mod watched;
mod witness;

pub use crate::domain::lock_record::{HolderSighting, RecordedLock};
pub use alerts::{AlertChange, RejectionCount, StoredAlert};
pub use audit_query::{AuditFilter, AuditOrder, AuditRecord, AuditWalk};
pub use batch::MAX_BATCH;
pub use chain::PruneReport;
pub use connect::{is_sqlite_url, Backend, OpenMode, StoreOptions, DEFAULT_DB_TIMEOUT};
/// The fence in a user's own database connects to PostgreSQL outside `Store::open`.
pub(crate) use db_url::driver_url;
pub use error::{within, StoreError};
pub use fill::{FillChunk, FillHead, FillOverlap, FillResource, FillRow, FillStart};
pub use leases::{
    AcquireResult, LeaseHistoryQuery, LeaseState, ReleaseResult, RenewResult, StoredLeaseEvent,
};
pub use lock_records::RegressedLock;
pub use overlaps::OverlapQuery;
pub use partitions::{PartitionMade, PartitionsAhead};
pub use pg_schema::{InvalidSchema, PgSchema};
pub use reads::{AuditQuery, StoredValue};
pub use retention::{Retention, RetentionClaim, StoreRetention};
pub use unchecked::UncheckedWrites;
pub use verify::{
    Breach, ChainPosition, UncheckedState, VerifiedPositions, VerifyReport, WitnessSnapshot,
    WitnessSummary,
};
pub use watched::WatchAdvance;

use crate::domain::clock::SharedClock;
use crate::domain::witness::SigningKey;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

/// Called by the write path after it has observed a resource and decided, before it changes
/// anything. Tests use it to pause one writer there while another commits.
pub type ObserveHook = Arc<dyn Fn() -> Pin<Box<dyn Future<Output = ()> + Send>> + Send + Sync>;

/// How writes reach the database, for group commit to shape its workers by.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CommitPath {
    /// One writer connection, whose commits' WAL frames are synced after them (SQLite): one
    /// worker, best on a thread of its own, and a commit in flight is always seen to its end.
    OneWriter,
    /// Sessions of a server, `connections` at most (PostgreSQL): several workers, a lone write
    /// committed by its writer itself, and a batch the server stopped answering abandoned.
    Sessions { connections: u32 },
}

/// A handle on the database; cheap to clone.
#[derive(Clone)]
pub struct Store {
    /// The database's pools and what only its write path needs (`engine`).
    engine: engine::Engine,
    observe_hook: Option<ObserveHook>,
    clock: SharedClock,
    /// The witness's key, when it has one: a prune signs each chain start it moves with it
    /// (`store::witness`).
    audit_signer: Option<Arc<SigningKey>>,
}

impl Store {
    pub fn backend(&self) -> Backend {
        match &self.engine {
            engine::Engine::Sqlite(_) => Backend::Sqlite,
            engine::Engine::Postgres(_) => Backend::Postgres,
        }
    }

    /// The daemon's clock, which the live side and the service read too.
    pub fn clock(&self) -> &SharedClock {
        &self.clock
    }

    /// Installs a hook that runs between observing and changing state on the write path.
    /// For tests of interleavings; production code never sets one.
    pub fn with_observe_hook(mut self, hook: ObserveHook) -> Self {
        self.observe_hook = Some(hook);
        self
    }

    /// Signs the chain starts its prunes move with `key` (a witnessed audit).
    pub fn with_audit_signer(mut self, key: Arc<SigningKey>) -> Self {
        self.audit_signer = Some(key);
        self
    }
}
