//! Persistence over SQLite and PostgreSQL, each through its own sqlx driver (`native`). The
//! schema keeps to types both databases share (integers, text, bytes; times as microseconds
//! since the epoch) so that a statement written once serves both; where the dialects differ
//! there is one folder of migrations each, and the store matches on the database.

mod alerts;
mod audit_query;
mod batch;
mod chain;
mod chain_heads;
mod connect;
mod db_url;
mod error;
mod incident;
mod leases;
mod lock_holders;
mod lock_records;
pub(crate) mod native;
mod overlaps;
mod pg_schema;
mod reads;
mod refusals;
mod refused;
mod reset;
mod retention;
mod tail;
mod tx;
mod unchecked;
mod wal_sync;
mod watched;

pub use crate::domain::lock_record::{HolderSighting, RecordedLock};
pub use alerts::{AlertChange, RejectionCount, StoredAlert};
pub use audit_query::{AuditFilter, AuditRecord};
pub use batch::MAX_BATCH;
pub use chain::{Breach, PruneReport, VerifyReport};
pub use connect::{is_sqlite_url, Backend, OpenMode, StoreOptions, DEFAULT_DB_TIMEOUT};
/// The fence in a user's own database connects to PostgreSQL outside `Store::open`.
pub(crate) use db_url::driver_url;
pub use error::{within, StoreError};
pub use leases::{
    AcquireResult, LeaseHistoryQuery, LeaseState, ReleaseResult, RenewResult, StoredLeaseEvent,
};
pub use lock_records::RegressedLock;
pub use overlaps::OverlapQuery;
pub use pg_schema::{InvalidSchema, PgSchema};
pub use reads::{AuditQuery, StoredValue};
pub use retention::{Retention, RetentionClaim, StoreRetention};
pub use unchecked::UncheckedWrites;
pub use watched::WatchAdvance;

use crate::domain::clock::SharedClock;
use native::Pool;
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
    /// SQLite allows one writer at a time, so the SQLite store funnels writes through a pool of
    /// one connection instead of letting connections queue on the file lock.
    writer: Pool,
    /// PostgreSQL: the connections group commit applies batches on, whose sessions plan for
    /// batches (see `connect::BATCH_SESSION`); `None` on SQLite, whose batches take `writer`,
    /// and for the read-only tools.
    batch_sessions: Option<Arc<batch::BatchSessions>>,
    /// PostgreSQL: the committed state of resources this daemon wrote, for batches decided
    /// without reading it first (`batch::known`).
    known: Arc<batch::KnownResources>,
    reader: Pool,
    /// SQLite only: syncs group commits' WAL frames after their commit (see `wal_sync`).
    wal: Option<Arc<wal_sync::WalSync>>,
    /// SQLite only: set by a batch that left the writer committed and back to FULL, so that its
    /// release skips the check (a round trip to the connection's thread on every batch).
    writer_clean: Arc<std::sync::atomic::AtomicBool>,
    observe_hook: Option<ObserveHook>,
    clock: SharedClock,
}

impl Store {
    pub fn backend(&self) -> Backend {
        self.writer.backend()
    }

    /// The daemon's clock, which the live side and the service read too.
    pub fn clock(&self) -> &SharedClock {
        &self.clock
    }

    /// The SQLite writer's pool, for tests that inspect its connection.
    #[cfg(test)]
    pub(crate) fn sqlite_writer(&self) -> &sqlx::SqlitePool {
        match &self.writer {
            native::Native::Sqlite(pool) => pool,
            native::Native::Postgres(_) => panic!("not a SQLite store"),
        }
    }

    /// Installs a hook that runs between observing and changing state on the write path.
    /// For tests of interleavings; production code never sets one.
    pub fn with_observe_hook(mut self, hook: ObserveHook) -> Self {
        self.observe_hook = Some(hook);
        self
    }

    /// Installs a hook that runs before each sync of SQLite's WAL by group commit, with the
    /// commits it will cover already visible to readers. For tests; production code never
    /// sets one. No effect on PostgreSQL.
    pub fn with_sync_hook(mut self, hook: ObserveHook) -> Self {
        self.wal = self.wal.map(|wal| Arc::new(wal.hooked(hook)));
        self
    }

    /// How group commit drives this database's writes.
    pub fn commit_path(&self) -> CommitPath {
        match &self.writer {
            native::Native::Sqlite(_) => CommitPath::OneWriter,
            native::Native::Postgres(pool) => CommitPath::Sessions {
                connections: pool.options().get_max_connections(),
            },
        }
    }

    /// Whether the database keeps a write-ahead log file beside it that the daemon watches
    /// (SQLite's; see `wal_bytes`).
    pub fn has_wal_file(&self) -> bool {
        self.wal.is_some()
    }

    /// Answers whether the database is reachable.
    pub async fn ping(&self) -> Result<(), StoreError> {
        native::on_db!(&self.reader, pool => sqlx::query("SELECT 1").execute(pool).await.map(drop))?;
        Ok(())
    }

    /// Waits until everything a read may have seen is on disk: reads answer only with what an
    /// acknowledged write would survive. Immediate on PostgreSQL, whose commits are durable
    /// before they are visible.
    pub async fn settle(&self) -> Result<(), StoreError> {
        match &self.wal {
            Some(wal) => wal.settle().await,
            None => Ok(()),
        }
    }

    /// SQLite: the size of the WAL file beside the database, which grows past its checkpoint
    /// mark while readers keep a checkpoint from finishing (see `connect`). `None` on PostgreSQL.
    pub async fn wal_bytes(&self) -> Option<std::io::Result<u64>> {
        match &self.wal {
            Some(wal) => Some(wal.file_size().await),
            None => None,
        }
    }

    /// Waits for connections to finish and closes them. On SQLite the readers go first and the
    /// writer copies the whole WAL into the database and truncates it before it closes: SQLite
    /// only removes the WAL when the last connection to close can write, and a read-only
    /// connection closing last left it behind at its full size beside the database.
    pub async fn close(&self) {
        self.reader.close().await;
        if self.wal.is_some() {
            let checkpoint = native::on_db!(&self.writer, pool => {
                sqlx::query("PRAGMA wal_checkpoint(TRUNCATE)").execute(pool).await.map(drop)
            });
            if let Err(error) = checkpoint {
                tracing::warn!(%error, "could not checkpoint the SQLite WAL on shutdown");
            }
        }
        if let Some(sessions) = &self.batch_sessions {
            sessions.close().await;
        }
        self.writer.close().await;
    }
}
