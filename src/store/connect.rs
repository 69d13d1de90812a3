use super::batch::sessions::BatchSessions;
use super::batch::sqlite::CREATE_BATCH_CHECK;
use super::checkpoints::WriterCheckpoints;
use super::db_url::driver_url;
use super::engine::{Engine, PostgresEngine, SqliteEngine};
use super::native::{on_db, Native, Pool};
use super::wal_sync::WalSync;
use super::{PgSchema, Store, StoreError};
use crate::domain::clock::{SharedClock, SystemClock};
use crate::redact::redact_url;
use sqlx::postgres::{PgConnection, PgPoolOptions};
use sqlx::sqlite::{SqliteConnection, SqlitePoolOptions};
use sqlx::{Connection, Executor};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Backend {
    Sqlite,
    Postgres,
}

impl Backend {
    pub fn name(self) -> &'static str {
        match self {
            Backend::Sqlite => "sqlite",
            Backend::Postgres => "postgres",
        }
    }
}

/// `--db-timeout`'s default: far above any healthy wait, far below TCP giving up.
pub const DEFAULT_DB_TIMEOUT: Duration = Duration::from_secs(10);

/// What `Store::open` may do to the database.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum OpenMode {
    /// The daemon's: a missing SQLite file is created, and the schema brought up to date.
    #[default]
    CreateAndMigrate,
    /// Read and write a database that exists with a current schema; nothing is created or
    /// migrated (`audit prune`).
    Existing,
    /// Read only: SQLite opened `mode=ro`, every PostgreSQL transaction read-only; nothing is
    /// created, migrated or written (the audit tools).
    ReadOnly,
}

#[derive(Debug, Clone)]
pub struct StoreOptions {
    /// Connections to PostgreSQL (SQLite always uses one writer and a few readers).
    pub max_connections: u32,
    /// How long a request waits for a connection before the database counts as unavailable.
    pub acquire_timeout: Duration,
    /// How long the daemon waits for the database before it gives a request up
    /// (`--db-timeout`). On PostgreSQL a session that sits inside a transaction this long
    /// without a statement is ended by the server: its daemon gave up on it, or vanished, and
    /// its row locks would otherwise block every daemon sharing the database until the server
    /// noticed the client gone (TCP keepalive: hours by default).
    pub db_timeout: Duration,
    pub mode: OpenMode,
    /// Where "now" comes from (see `domain::clock`).
    pub clock: SharedClock,
    /// PostgreSQL: the schema of the daemon's tables (`serve --schema`); `None` keeps to the
    /// connection's search path. SQLite refuses one.
    pub schema: Option<PgSchema>,
}

impl Default for StoreOptions {
    fn default() -> Self {
        Self {
            max_connections: 16,
            acquire_timeout: Duration::from_secs(5),
            db_timeout: DEFAULT_DB_TIMEOUT,
            mode: OpenMode::CreateAndMigrate,
            clock: Arc::new(SystemClock),
            schema: None,
        }
    }
}

/// WAL lets readers run beside the writer; `synchronous = FULL` makes every commit durable
/// before it is acknowledged (WAL's default, NORMAL, may lose the last commits on power loss).
/// The writer's page cache is 32 MiB instead of 2: a batch touches index pages all over the
/// audit, and with the small cache they were read back from the OS on every batch.
/// Temporary storage in memory: a batch statement's statement journal spilled past 64 KiB into a
/// temporary file, written many times a second under load, and stays a batch's size.
///
/// The writer checkpoints the WAL between its transactions, on a schedule that spaces
/// checkpoints by what they cost (`checkpoints`). SQLite's own checkpoint, which would run
/// inside the commit that crosses its mark, stays only as a backstop at 100,000 pages (about
/// 400 MiB beside the file) should a checkpoint keep failing. The WAL is written again from its
/// start only once a checkpoint has copied all of it and no reader still reads from it; it
/// never shrinks by itself, so `journal_size_limit` cuts it back to the backstop's size
/// whenever it starts over. Not lower: a WAL cut shorter than the schedule lets it grow grows
/// again, and appending to a file costs each commit's sync its metadata too.
///
/// What each of these was measured to gain: docs/performance.md, "Tried, kept or not".
const SQLITE_WRITER_PRAGMAS: &str = "PRAGMA journal_mode = WAL; PRAGMA synchronous = FULL; \
     PRAGMA busy_timeout = 5000; PRAGMA foreign_keys = ON; PRAGMA cache_size = -32768; \
     PRAGMA temp_store = MEMORY; PRAGMA wal_autocheckpoint = 100000; \
     PRAGMA journal_size_limit = 419430400;";
/// Run whenever the writer goes back to the pool: every other transaction commits with FULL.
const SQLITE_WRITER_RELEASE: &str = "PRAGMA synchronous = FULL; BEGIN; ROLLBACK";
const SQLITE_READER_PRAGMAS: &str = "PRAGMA busy_timeout = 5000;";
const SQLITE_READERS: u32 = 4;

impl Store {
    /// Opens `sqlite://PATH` (created with its schema if missing) or `postgres://…`, and brings
    /// the schema up to date. The URL chooses the store's engine, here and only here.
    pub async fn open(url: &str, options: &StoreOptions) -> Result<Store, StoreError> {
        let engine = if let Some(path) = sqlite_path(url) {
            if let Some(schema) = &options.schema {
                return Err(StoreError::Open(format!(
                    "--schema {schema} is for PostgreSQL; a SQLite file holds one daemon's tables"
                )));
            }
            Engine::Sqlite(open_sqlite(path, options).await?)
        } else if url.starts_with("postgres://") || url.starts_with("postgresql://") {
            Engine::Postgres(open_postgres(url, options).await?)
        } else {
            return Err(StoreError::Open(format!(
                "unsupported database URL {:?}: use sqlite://PATH or postgres://…",
                redact_url(url)
            )));
        };
        let store = Store {
            engine,
            observe_hook: None,
            clock: options.clock.clone(),
            audit_signer: None,
        };
        if options.mode == OpenMode::CreateAndMigrate {
            // A day without a partition only sends its rows to the default one: a failure here
            // is the retention task's to retry, not a reason to refuse to start.
            if let Err(error) = store.ensure_audit_partitions().await {
                tracing::warn!(%error, "could not make the audit's partitions for the coming days");
            }
        }
        Ok(store)
    }
}

/// Whether `url` names a SQLite database, as `Store::open` reads it.
pub fn is_sqlite_url(url: &str) -> bool {
    sqlite_path(url).is_some()
}

/// The file path of a `sqlite:` URL (with any query string), or `None` for other schemes.
fn sqlite_path(url: &str) -> Option<&str> {
    url.strip_prefix("sqlite://")
        .or_else(|| url.strip_prefix("sqlite:"))
}

async fn open_sqlite(
    path_and_query: &str,
    options: &StoreOptions,
) -> Result<SqliteEngine, StoreError> {
    let (path, query) = match path_and_query.split_once('?') {
        Some((path, query)) => (path, Some(query)),
        None => (path_and_query, None),
    };
    if path.is_empty() || path == ":memory:" || query.is_some_and(|q| q.contains("memory")) {
        return Err(StoreError::Open(
            "an in-memory SQLite database cannot be shared by the writer and readers; use a file"
                .into(),
        ));
    }
    let extra = query.map(|q| format!("&{q}")).unwrap_or_default();
    if options.mode != OpenMode::CreateAndMigrate {
        // Checked here because SQLite would create the file, and an empty database then
        // "verifies" as if it were the one the user meant.
        match std::fs::metadata(path) {
            Ok(meta) if meta.is_file() => {}
            Ok(_) => return Err(StoreError::Open(format!("{path} is not a file"))),
            Err(error) => {
                return Err(StoreError::Open(format!(
                    "cannot open the SQLite file {path}: {error}"
                )))
            }
        }
    }
    let reader = SqlitePoolOptions::new()
        .max_connections(SQLITE_READERS)
        .acquire_timeout(options.acquire_timeout)
        // A connection to a local file does not go stale like a socket; a ping before every
        // read would be one more round trip to its thread on every read.
        .test_before_acquire(false)
        .after_connect(|conn, _| {
            Box::pin(async move {
                conn.execute(SQLITE_READER_PRAGMAS).await?;
                Ok(())
            })
        });
    if options.mode == OpenMode::ReadOnly {
        let reader = reader
            .connect(&format!("sqlite://{path}?mode=ro{extra}"))
            .await
            .map_err(|e| StoreError::Open(format!("cannot open the SQLite file {path}: {e}")))?;
        require_current_schema(
            Native::Sqlite(&reader),
            &sqlx::migrate!("migrations/sqlite"),
        )
        .await?;
        return Ok(SqliteEngine {
            writer: reader.clone(),
            readers: reader,
            wal: None,
            writer_clean: Arc::new(AtomicBool::new(false)),
        });
    }
    let writer_mode = match options.mode {
        OpenMode::CreateAndMigrate => "rwc",
        _ => "rw",
    };
    let writer_clean = Arc::new(AtomicBool::new(false));
    let released_clean = writer_clean.clone();
    let checkpoints = Arc::new(WriterCheckpoints::default());
    let writer = SqlitePoolOptions::new()
        .max_connections(1)
        .acquire_timeout(options.acquire_timeout)
        // The last batch's own statements or the release check below already proved the
        // connection alive; a ping on every acquire would add a round trip to every batch.
        .test_before_acquire(false)
        .after_connect(|conn, _| {
            Box::pin(async move {
                conn.execute(SQLITE_WRITER_PRAGMAS).await?;
                conn.execute(CREATE_BATCH_CHECK).await?;
                Ok(())
            })
        })
        .after_release(move |conn, _| {
            let known_clean = released_clean.swap(false, Ordering::SeqCst);
            let checkpoints = checkpoints.clone();
            Box::pin(async move {
                if !(known_clean || outside_transaction(conn).await) {
                    return Ok(false);
                }
                checkpoints.after_release(conn).await;
                Ok(true)
            })
        })
        .connect(&format!("sqlite://{path}?mode={writer_mode}{extra}"))
        .await
        .map_err(|e| StoreError::Open(format!("cannot open the SQLite file {path}: {e}")))?;
    let migrator = sqlx::migrate!("migrations/sqlite");
    match options.mode {
        OpenMode::CreateAndMigrate => migrator.run(&writer).await?,
        _ => require_current_schema(Native::Sqlite(&writer), &migrator).await?,
    }
    let reader = reader
        .connect(&format!("sqlite://{path}?mode=ro{extra}"))
        .await
        .map_err(|e| StoreError::Open(format!("cannot open the SQLite file {path}: {e}")))?;
    Ok(SqliteEngine {
        writer,
        readers: reader,
        wal: Some(Arc::new(WalSync::new(path))),
        writer_clean,
    })
}

/// Whether a SQLite connection is outside any transaction, so that it may be used again, and
/// back to syncing every commit.
///
/// SQLite rolls a transaction back by itself on some errors (`SQLITE_FULL`, `SQLITE_IOERR`);
/// sqlx's count of open transactions then no longer matches. Either way round it is unsafe: a
/// later transaction can be left open while its "commit" only releases a savepoint (writes
/// acknowledged but never committed, found by the full-disk fault test), or a later BEGIN is
/// refused. A connection that cannot begin a transaction of its own, or that sqlx still counts
/// inside one, is closed instead of going back to the pool, and any open transaction dies with
/// it.
async fn outside_transaction(conn: &mut SqliteConnection) -> bool {
    // One execution, so the check costs one round trip to the connection's thread; it stops at
    // the first statement that fails (both fail inside a transaction). The connection's thread
    // runs commands in order, so sqlx's count is read after any rollback queued on release.
    if conn.execute(SQLITE_WRITER_RELEASE).await.is_err() || conn.is_in_transaction() {
        tracing::warn!("closing a database connection left inside a transaction");
        return false;
    }
    true
}

/// PostgreSQL sessions that apply group commit's batches, whose statements read their rows from
/// arrays (`UNNEST`, `batch::pg_columns`). Every one of them is a lookup of a few keys, but the
/// planner, which guesses a hundred rows from a set-returning function and sees a table of a
/// few pages,
/// prefers hashing the whole table; and a custom plan for each execution costs more than the
/// execution. So: one generic plan per statement, of index lookups. Session settings, since a
/// batch's statement may run outside any transaction.
const BATCH_SESSION: &str = "SET enable_seqscan = off; SET enable_hashjoin = off; \
    SET enable_mergejoin = off; SET plan_cache_mode = force_generic_plan";

async fn open_postgres(
    shown_url: &str,
    options: &StoreOptions,
) -> Result<PostgresEngine, StoreError> {
    // The driver logs a parameter it does not read with its value, which may be a password
    // (`sslpassword`): those are dropped here, named without their values.
    let driver = driver_url(shown_url);
    for parameter in &driver.ignored {
        tracing::warn!(%parameter, "ignoring a database URL parameter PostgreSQL's driver does not read");
    }
    let url = driver.url.as_str();
    let read_only = options.mode == OpenMode::ReadOnly;
    if let (Some(schema), OpenMode::CreateAndMigrate) = (&options.schema, options.mode) {
        create_schema(url, shown_url, schema).await?;
    }
    // Read-only: every transaction of the session, implicit ones included, is read-only, so the
    // server itself refuses any write.
    let pool = postgres_pool(
        options,
        read_only.then_some("SET default_transaction_read_only = on"),
    );
    let pool = pool.connect(url).await.map_err(|e| {
        StoreError::Open(format!("cannot connect to {}: {e}", redact_url(shown_url)))
    })?;
    // Connected on first use: a daemon that applies no batch never opens one.
    let batch_sessions = match read_only {
        true => None,
        false => Some(Arc::new(BatchSessions::new(
            postgres_pool(options, Some(BATCH_SESSION))
                .connect_lazy(url)
                .map_err(|e| {
                    StoreError::Open(format!("cannot connect to {}: {e}", redact_url(shown_url)))
                })?,
        ))),
    };
    let migrator = sqlx::migrate!("migrations/postgres");
    match options.mode {
        // The migrator holds an advisory lock, so daemons starting together migrate once.
        OpenMode::CreateAndMigrate => migrator.run(&pool).await?,
        _ => require_current_schema(Native::Postgres(&pool), &migrator).await?,
    }
    Ok(PostgresEngine {
        pool,
        batch_sessions,
        known: Default::default(),
    })
}

/// `--schema`'s schema, made before anything connects with it as its search path (the
/// migrations would otherwise find no schema to create their tables in).
async fn create_schema(url: &str, shown_url: &str, schema: &PgSchema) -> Result<(), StoreError> {
    let mut conn = PgConnection::connect(url).await.map_err(|e| {
        StoreError::Open(format!("cannot connect to {}: {e}", redact_url(shown_url)))
    })?;
    conn.execute(QUIET_SESSION).await?;
    conn.execute(schema.create().as_str()).await?;
    conn.close().await?;
    Ok(())
}

/// Notices (`relation "_sqlx_migrations" already exists, skipping` on every start) are not the
/// daemon's to log: warnings and errors still arrive.
const QUIET_SESSION: &str = "SET client_min_messages = warning";

/// A PostgreSQL pool whose sessions end a transaction left idle past `--db-timeout`, keep to
/// `--schema`, and run `session` first.
fn postgres_pool(options: &StoreOptions, session: Option<&'static str>) -> PgPoolOptions {
    let orphaned_after_ms = options.db_timeout.as_millis().max(1);
    let search_path = options.schema.as_ref().map(PgSchema::search_path);
    PgPoolOptions::new()
        .max_connections(options.max_connections)
        .acquire_timeout(options.acquire_timeout)
        .after_connect(move |conn, _| {
            let search_path = search_path.clone();
            Box::pin(async move {
                conn.execute(QUIET_SESSION).await?;
                if let Some(search_path) = search_path {
                    conn.execute(search_path.as_str()).await?;
                }
                let orphaned_after =
                    format!("SET idle_in_transaction_session_timeout = {orphaned_after_ms}");
                conn.execute(orphaned_after.as_str()).await?;
                if let Some(session) = session {
                    conn.execute(session).await?;
                }
                Ok(())
            })
        })
}

/// Refuses a database that is not fencewatch's, or whose schema is older or newer than this
/// build's: a tool that may not migrate must not misread it either.
async fn require_current_schema(
    pool: Pool<'_>,
    migrator: &sqlx::migrate::Migrator,
) -> Result<(), StoreError> {
    let expected = migrator.iter().map(|m| m.version).max().unwrap_or_default();
    let applied: Result<Option<i64>, sqlx::Error> = on_db!(pool, pool => {
        sqlx::query_scalar("SELECT MAX(version) FROM _sqlx_migrations WHERE success")
            .fetch_one(pool)
            .await
    });
    match applied {
        Ok(Some(version)) if version == expected => Ok(()),
        Ok(Some(version)) if version < expected => Err(StoreError::Open(format!(
            "the database's schema is older than this fencewatch's ({version} < {expected}); \
             start `fencewatch serve` on it once to migrate"
        ))),
        Ok(Some(version)) => Err(StoreError::Open(format!(
            "the database's schema is newer than this fencewatch's ({version} > {expected}); \
             use the fencewatch that wrote it"
        ))),
        Ok(None) => Err(StoreError::Open(
            "not a fencewatch database: no schema".into(),
        )),
        Err(error) if super::error::is_unavailable(&error) => Err(error.into()),
        Err(_) => Err(StoreError::Open(
            "not a fencewatch database: it has no fencewatch schema".into(),
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn recognises_sqlite_urls() {
        assert_eq!(sqlite_path("sqlite://fencewatch.db"), Some("fencewatch.db"));
        assert_eq!(sqlite_path("sqlite:///var/x.db"), Some("/var/x.db"));
        assert_eq!(sqlite_path("sqlite:x.db"), Some("x.db"));
        assert_eq!(sqlite_path("postgres://h/db"), None);
    }
}
