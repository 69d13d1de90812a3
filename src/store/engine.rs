//! What each database needs of its own to be the store's, chosen once when the store opens
//! (`connect`): its pools, and the parts of its write path no other database has. Statements
//! both databases share take the engine's pools through `Store::writer` and `Store::reader`
//! (`native::Pool`); what one engine does differently is a `match` on `Engine`.
//!
//! An enum rather than a trait: the store stays one type, cloned into every layer above it,
//! and each batch's run is a direct call into the engine at hand, with no boxed futures.

use super::batch::known::KnownResources;
use super::batch::sessions::BatchSessions;
use super::native::{on_db, Native, Pool};
use super::wal_sync::WalSync;
use super::{CommitPath, ObserveHook, Store, StoreError};
use sqlx::{PgPool, SqlitePool};
use std::sync::atomic::AtomicBool;
use std::sync::Arc;

#[derive(Clone)]
pub(crate) enum Engine {
    Sqlite(SqliteEngine),
    Postgres(PostgresEngine),
}

/// A SQLite file: one writer connection, readers beside it, and the WAL synced after group
/// commit's commits.
#[derive(Clone)]
pub(crate) struct SqliteEngine {
    /// SQLite allows one writer at a time, so writes go through a pool of one connection
    /// instead of letting connections queue on the file lock. Opened read-only, the readers'
    /// pool, whose writes SQLite refuses.
    pub(super) writer: SqlitePool,
    pub(super) readers: SqlitePool,
    /// Syncs group commits' WAL frames after their commit (see `wal_sync`). `None` when opened
    /// read-only: nothing is written to sync, and no connection may checkpoint on close.
    pub(super) wal: Option<Arc<WalSync>>,
    /// Set by a batch that left the writer committed and back to FULL, so that its release
    /// skips the check (a round trip to the connection's thread on every batch).
    pub(super) writer_clean: Arc<AtomicBool>,
}

/// A PostgreSQL server: one pool for reads and single writes, and group commit's sessions.
#[derive(Clone)]
pub(crate) struct PostgresEngine {
    pub(super) pool: PgPool,
    /// The connections group commit applies batches on, whose sessions plan for batches (see
    /// `connect::BATCH_SESSION`). `None` when opened read-only, which applies no batch.
    pub(super) batch_sessions: Option<Arc<BatchSessions>>,
    /// The committed state of resources this daemon wrote, for batches decided without
    /// reading it first (`batch::known`).
    pub(super) known: Arc<KnownResources>,
}

impl Engine {
    /// The pool that writes outside group commit go through.
    pub(super) fn writer(&self) -> Pool<'_> {
        match self {
            Engine::Sqlite(sqlite) => Native::Sqlite(&sqlite.writer),
            Engine::Postgres(postgres) => Native::Postgres(&postgres.pool),
        }
    }

    pub(super) fn reader(&self) -> Pool<'_> {
        match self {
            Engine::Sqlite(sqlite) => Native::Sqlite(&sqlite.readers),
            Engine::Postgres(postgres) => Native::Postgres(&postgres.pool),
        }
    }

    /// SQLite's WAL sync; `None` on PostgreSQL, whose commits are durable before they are
    /// visible, and on a read-only SQLite store.
    pub(super) fn wal(&self) -> Option<&Arc<WalSync>> {
        match self {
            Engine::Sqlite(sqlite) => sqlite.wal.as_ref(),
            Engine::Postgres(_) => None,
        }
    }
}

impl Store {
    /// The pool that writes outside group commit go through.
    pub(super) fn writer(&self) -> Pool<'_> {
        self.engine.writer()
    }

    /// The pool reads go through.
    pub(super) fn reader(&self) -> Pool<'_> {
        self.engine.reader()
    }

    /// The SQLite writer's pool, for tests that inspect its connection.
    #[cfg(test)]
    pub(crate) fn sqlite_writer(&self) -> &SqlitePool {
        match &self.engine {
            Engine::Sqlite(sqlite) => &sqlite.writer,
            Engine::Postgres(_) => panic!("not a SQLite store"),
        }
    }

    /// SQLite's WAL sync, for tests that wait on it.
    #[cfg(test)]
    pub(crate) fn wal_sync(&self) -> Option<&Arc<WalSync>> {
        self.engine.wal()
    }

    /// Installs a hook that runs before each sync of SQLite's WAL by group commit, with the
    /// commits it will cover already visible to readers. For tests; production code never
    /// sets one. No effect on PostgreSQL.
    pub fn with_sync_hook(mut self, hook: ObserveHook) -> Self {
        if let Engine::Sqlite(sqlite) = &mut self.engine {
            sqlite.wal = sqlite.wal.take().map(|wal| Arc::new(wal.hooked(hook)));
        }
        self
    }

    /// How group commit drives this database's writes.
    pub fn commit_path(&self) -> CommitPath {
        match &self.engine {
            Engine::Sqlite(_) => CommitPath::OneWriter,
            Engine::Postgres(postgres) => CommitPath::Sessions {
                connections: postgres.pool.options().get_max_connections(),
            },
        }
    }

    /// Answers whether the database is reachable.
    pub async fn ping(&self) -> Result<(), StoreError> {
        on_db!(self.reader(), pool => sqlx::query("SELECT 1").execute(pool).await.map(drop))?;
        Ok(())
    }

    /// Whether the database keeps a write-ahead log file beside it that the daemon watches
    /// (SQLite's; see `wal_bytes`).
    pub fn has_wal_file(&self) -> bool {
        self.engine.wal().is_some()
    }

    /// Waits until everything a read may have seen is on disk: reads answer only with what an
    /// acknowledged write would survive. Immediate on PostgreSQL, whose commits are durable
    /// before they are visible.
    pub async fn settle(&self) -> Result<(), StoreError> {
        match self.engine.wal() {
            Some(wal) => wal.settle().await,
            None => Ok(()),
        }
    }

    /// SQLite: the size of the WAL file beside the database, which grows past its checkpoint
    /// mark while readers keep a checkpoint from finishing (see `connect`). `None` on PostgreSQL.
    pub async fn wal_bytes(&self) -> Option<std::io::Result<u64>> {
        match self.engine.wal() {
            Some(wal) => Some(wal.file_size().await),
            None => None,
        }
    }

    /// Forgets what this daemon knows of `key`, changed outside group commit (a reset). Nothing
    /// to forget on SQLite, whose batches always observe.
    pub(crate) fn forget_known(&self, key: &str) {
        if let Engine::Postgres(postgres) = &self.engine {
            postgres.known.forget([key]);
        }
    }

    /// Waits for connections to finish and closes them.
    pub async fn close(&self) {
        match &self.engine {
            Engine::Sqlite(sqlite) => sqlite.close().await,
            Engine::Postgres(postgres) => postgres.close().await,
        }
    }
}

impl SqliteEngine {
    /// The readers go first, and the writer copies the whole WAL into the database and
    /// truncates it before it closes: SQLite only removes the WAL when the last connection to
    /// close can write, and a read-only connection closing last left it behind at its full size
    /// beside the database.
    async fn close(&self) {
        self.readers.close().await;
        if self.wal.is_some() {
            let checkpoint = sqlx::query("PRAGMA wal_checkpoint(TRUNCATE)")
                .execute(&self.writer)
                .await;
            if let Err(error) = checkpoint {
                tracing::warn!(%error, "could not checkpoint the SQLite WAL on shutdown");
            }
        }
        self.writer.close().await;
    }
}

impl PostgresEngine {
    async fn close(&self) {
        self.pool.close().await;
        if let Some(sessions) = &self.batch_sessions {
            sessions.close().await;
        }
    }
}
