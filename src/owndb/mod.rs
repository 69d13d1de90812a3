//! The fence installed in the user's own database (`fencewatch fence …`): a PostgreSQL schema
//! (default `fencewatch`) or `fencewatch_*` objects in a SQLite file, with versioned migrations
//! of its own (`migrations/fence/`, applied by [`migrate`]), apart from the daemon's.
//!
//! Native pools only (`PgPool`, `SqlitePool`): the objects differ per backend and the user's
//! database is not the daemon's store. Nothing here creates a user's SQLite file, and URLs are
//! shown only through `redact::redact_url`.

mod audit;
pub mod migrate;
mod outcomes;
mod postgres;
mod quote;
mod sqlite;
mod sqlite_triggers;

pub use outcomes::{
    AutonomousAudit, DdlGuard, FenceStatus, Generation, InstallOptions, InstallOutcome,
    ProtectSpec, ProtectedTable, ResetDone, ScopeSource, SealReport, UninstallOutcome,
    UnprotectOutcome,
};
pub use postgres::PgFence;
pub use sqlite::SqliteFence;

use crate::domain::fence_audit::{ChainCheck, FenceAuditRow};
use crate::domain::Xids;
use crate::redact::redact_url;
use std::time::Duration;

/// The schema a PostgreSQL fence lives in unless `--schema` says otherwise.
pub const DEFAULT_SCHEMA: &str = "fencewatch";

/// Why a fence command could not do what it was asked.
#[derive(Debug, thiserror::Error)]
pub enum OwnDbError {
    /// The database could not be reached or opened. `database` is the redacted URL.
    #[error("cannot open {database}: {reason}")]
    Unavailable { database: String, reason: String },
    /// The request cannot be done on this database: a table or column it does not have, a flag
    /// that does not apply, a fence that is not installed.
    #[error("{0}")]
    Invalid(String),
    /// The installed fence is newer than this build knows.
    #[error(
        "the installed fence is v{installed}, newer than this fencewatch's v{known}; \
         use the fencewatch that installed it"
    )]
    Newer { installed: i64, known: i64 },
    /// An installed migration is not the one this build has under its version.
    #[error(
        "migration v{version} of the installed fence is not this fencewatch's v{version}: \
         it was changed after it was installed"
    )]
    Altered { version: i64 },
    /// An existing schema that a role other than the installer (or a superuser) owns, holds
    /// objects of, or may create objects in: such a role could replace what a protected write
    /// calls as the fence's owner.
    #[error(
        "cannot install the fence in schema {schema}: {}. The fence's schema and everything in \
         it must belong to the installing role (or a superuser), and no one else may create \
         objects in it: drop the schema or put it right, then install again",
        found.join("; ")
    )]
    Untrusted { schema: String, found: Vec<String> },
    /// The chain cannot be sealed: a row the unsealed ones follow is missing or unsealed.
    #[error("cannot seal scope {scope:?}: {reason}")]
    Unsealable { scope: String, reason: String },
    #[error("database error: {0}")]
    Database(#[from] sqlx::Error),
}

impl OwnDbError {
    /// The process's exit code: 2 for a request that cannot be done here, 1 for a database
    /// that failed or a fence in a state this build cannot work on.
    pub fn exit_code(&self) -> u8 {
        match self {
            OwnDbError::Invalid(_) => 2,
            _ => 1,
        }
    }
}

/// How to open the user's database.
#[derive(Debug, Clone)]
pub struct OpenOptions {
    /// PostgreSQL: the fence's schema. Giving one for SQLite is an error.
    pub schema: Option<String>,
    /// Connections in the pool (SQLite: at most this many readers and writers in all).
    pub max_connections: u32,
    pub acquire_timeout: Duration,
}

impl Default for OpenOptions {
    fn default() -> Self {
        Self {
            schema: None,
            max_connections: 2,
            acquire_timeout: Duration::from_secs(10),
        }
    }
}

/// The name [`OwnDb::source_name`] gives the database at `url`, read from the URL alone (no
/// connection): the PostgreSQL database's name (the user's, when the URL names none) or the
/// SQLite file's stem. `None` for a URL that names neither.
pub fn source_name_of(url: &str) -> Option<String> {
    if let Some(path) = url
        .strip_prefix("sqlite://")
        .or_else(|| url.strip_prefix("sqlite:"))
    {
        let path = path.split('?').next().unwrap_or_default();
        return std::path::Path::new(path)
            .file_stem()
            .map(|stem| stem.to_string_lossy().into_owned())
            .or_else(|| Some(path.to_owned()).filter(|path| !path.is_empty()));
    }
    if url.starts_with("postgres://") || url.starts_with("postgresql://") {
        let options = <sqlx::postgres::PgConnectOptions as std::str::FromStr>::from_str(
            &crate::store::driver_url(url).url,
        )
        .ok()?;
        return Some(
            options
                .get_database()
                .unwrap_or(options.get_username())
                .to_owned(),
        );
    }
    None
}

/// A fence database: the user's PostgreSQL database or SQLite file.
#[derive(Clone)]
pub enum OwnDb {
    Postgres(PgFence),
    Sqlite(SqliteFence),
}

impl OwnDb {
    /// Opens `postgres://…` (the search path as the URL sets it) or `sqlite://PATH` (an
    /// existing file: a missing one is an error naming it, never created).
    pub async fn open(url: &str, options: &OpenOptions) -> Result<OwnDb, OwnDbError> {
        if let Some(path) = url
            .strip_prefix("sqlite://")
            .or_else(|| url.strip_prefix("sqlite:"))
        {
            if options.schema.is_some() {
                return Err(OwnDbError::Invalid(
                    "--schema is for PostgreSQL; in SQLite the fence's objects are named \
                     fencewatch_*"
                        .into(),
                ));
            }
            return SqliteFence::open(path, options).await.map(OwnDb::Sqlite);
        }
        if url.starts_with("postgres://") || url.starts_with("postgresql://") {
            let schema = options.schema.as_deref().unwrap_or(DEFAULT_SCHEMA);
            return PgFence::open(url, schema, options)
                .await
                .map(OwnDb::Postgres);
        }
        Err(OwnDbError::Invalid(format!(
            "unsupported database URL {}: use postgres://… or sqlite://PATH",
            redact_url(url)
        )))
    }

    pub fn backend(&self) -> &'static str {
        match self {
            OwnDb::Postgres(_) => "postgres",
            OwnDb::Sqlite(_) => "sqlite",
        }
    }

    /// Where the fence is, for messages: `schema fencewatch` or the redacted SQLite URL.
    pub fn place(&self) -> String {
        match self {
            OwnDb::Postgres(pg) => format!("schema {}", pg.schema()),
            OwnDb::Sqlite(sqlite) => sqlite.shown_url().to_owned(),
        }
    }

    /// A name for this database that shows no secret: the PostgreSQL database's name or the
    /// SQLite file's stem (what a watcher calls its `source` unless told otherwise).
    pub fn source_name(&self) -> &str {
        match self {
            OwnDb::Postgres(pg) => pg.database(),
            OwnDb::Sqlite(sqlite) => sqlite.stem(),
        }
    }

    /// The redacted URL.
    pub fn shown_url(&self) -> &str {
        match self {
            OwnDb::Postgres(pg) => pg.shown_url(),
            OwnDb::Sqlite(sqlite) => sqlite.shown_url(),
        }
    }

    /// The newest version this build installs.
    pub fn latest_version(&self) -> i64 {
        match self {
            OwnDb::Postgres(_) => migrate::latest(migrate::postgres()),
            OwnDb::Sqlite(_) => migrate::latest(migrate::sqlite()),
        }
    }

    /// Installs the fence, or upgrades it to this build's version. Idempotent.
    pub async fn install(&self, options: &InstallOptions) -> Result<InstallOutcome, OwnDbError> {
        self.install_version(options, self.latest_version()).await
    }

    /// Installs or upgrades up to `version` only: what an older fencewatch would have
    /// installed (the tests of upgrades use it). Refuses a version this build does not have.
    pub async fn install_version(
        &self,
        options: &InstallOptions,
        version: i64,
    ) -> Result<InstallOutcome, OwnDbError> {
        match self {
            OwnDb::Postgres(pg) => pg.install(options, version).await,
            OwnDb::Sqlite(sqlite) => sqlite.install(options, version).await,
        }
    }

    pub async fn protect(&self, spec: &ProtectSpec) -> Result<ProtectedTable, OwnDbError> {
        match self {
            OwnDb::Postgres(pg) => pg.protect(spec).await,
            OwnDb::Sqlite(sqlite) => sqlite.protect(spec).await,
        }
    }

    pub async fn unprotect(&self, table: &str) -> Result<UnprotectOutcome, OwnDbError> {
        match self {
            OwnDb::Postgres(pg) => pg.unprotect(table).await,
            OwnDb::Sqlite(sqlite) => sqlite.unprotect(table).await,
        }
    }

    pub async fn status(&self) -> Result<FenceStatus, OwnDbError> {
        match self {
            OwnDb::Postgres(pg) => pg.status().await,
            OwnDb::Sqlite(sqlite) => sqlite.status().await,
        }
    }

    /// Sets `scope`'s highest accepted generation to `to`, audited in its chain (outcome
    /// `reset`, the reason as detail): the way back from a runaway token. `to` must be at least
    /// 1 and `reason` given (the caller parses both); the scope must exist.
    pub async fn reset(&self, scope: &str, to: i64, reason: &str) -> Result<ResetDone, OwnDbError> {
        match self {
            OwnDb::Postgres(pg) => pg.reset(scope, to, reason).await,
            OwnDb::Sqlite(sqlite) => sqlite.reset(scope, to, reason).await,
        }
    }

    pub async fn uninstall(&self) -> Result<UninstallOutcome, OwnDbError> {
        match self {
            OwnDb::Postgres(pg) => pg.uninstall().await,
            OwnDb::Sqlite(sqlite) => sqlite.uninstall().await,
        }
    }

    /// Up to `limit` audit rows with ids above `after_id`, in id order.
    pub async fn audit_after(
        &self,
        after_id: i64,
        limit: u32,
    ) -> Result<Vec<FenceAuditRow>, OwnDbError> {
        self.audit_page(audit::Page::After(after_id), limit).await
    }

    /// Up to `limit` audit rows with ids below `before_id`, newest first.
    pub async fn audit_before(
        &self,
        before_id: i64,
        limit: u32,
    ) -> Result<Vec<FenceAuditRow>, OwnDbError> {
        self.audit_page(audit::Page::Before(before_id), limit).await
    }

    async fn audit_page(
        &self,
        page: audit::Page,
        limit: u32,
    ) -> Result<Vec<FenceAuditRow>, OwnDbError> {
        self.page_of(page, limit, audit::Fields::Whole).await
    }

    async fn page_of(
        &self,
        page: audit::Page,
        limit: u32,
        fields: audit::Fields,
    ) -> Result<Vec<FenceAuditRow>, OwnDbError> {
        match self {
            OwnDb::Postgres(pg) => {
                audit::postgres_page(pg.pool(), pg.schema(), page, limit, fields).await
            }
            OwnDb::Sqlite(sqlite) => audit::sqlite_page(sqlite.pool(), page, limit, fields).await,
        }
    }

    /// What a watcher takes in: up to `limit` rows after `after_id`, in id order, each text
    /// cut to [`audit::LIVE_CHARS`] characters by the database (the audit stays as it is).
    pub async fn live_rows_after(
        &self,
        after_id: i64,
        limit: u32,
    ) -> Result<Vec<FenceAuditRow>, OwnDbError> {
        self.page_of(audit::Page::After(after_id), limit, audit::Fields::Clipped)
            .await
    }

    /// The rows among `ids` that are there now, in id order, cut as [`Self::live_rows_after`]
    /// cuts them (a watcher looking again for ids that were missing when it read past them).
    pub async fn live_rows_by_id(&self, ids: &[i64]) -> Result<Vec<FenceAuditRow>, OwnDbError> {
        match self {
            OwnDb::Postgres(pg) => audit::postgres_rows(pg, ids, audit::Fields::Clipped).await,
            // Its single writer leaves no id missing behind a committed one.
            OwnDb::Sqlite(_) => Ok(Vec::new()),
        }
    }

    /// PostgreSQL: the ids among the `window` up to `through` that no row has, and a snapshot
    /// taken before they were looked for (its `xmax` bounds the transactions that may still
    /// commit one of them). `None` on SQLite, whose single writer leaves no such id.
    pub async fn missing_ids_before(
        &self,
        through: i64,
        window: usize,
    ) -> Result<Option<(Vec<i64>, Xids)>, OwnDbError> {
        match self {
            OwnDb::Postgres(pg) => {
                let snapshot = audit::postgres_snapshot(pg).await?;
                let ids = audit::postgres_missing_ids(pg, through, window).await?;
                Ok(Some((ids, snapshot)))
            }
            OwnDb::Sqlite(_) => Ok(None),
        }
    }

    /// Every audit row, in id order.
    pub async fn audit_rows(&self) -> Result<Vec<FenceAuditRow>, OwnDbError> {
        let mut rows = Vec::new();
        let mut after = 0;
        loop {
            let page = self.audit_after(after, 5_000).await?;
            let Some(last) = page.last() else {
                return Ok(rows);
            };
            after = last.id;
            rows.extend(page);
        }
    }

    /// Checks every scope's chain as stored (SQLite: the sealed part, with the unsealed tail
    /// counted), and holds each scope's row (its highest generation and chain head) to its
    /// chain: a hand edit of the scopes is a breach too. Rows and scopes are read in one
    /// snapshot.
    pub async fn verify(&self) -> Result<ChainCheck, OwnDbError> {
        let (rows, heads) = match self {
            OwnDb::Postgres(pg) => audit::postgres_snapshot_of_chains(pg).await?,
            OwnDb::Sqlite(sqlite) => audit::sqlite_snapshot_of_chains(sqlite).await?,
        };
        Ok(crate::domain::fence_audit::check_fence(&rows, &heads))
    }

    /// SQLite: fills in the hashes of unsealed rows, in seq order per scope, in one
    /// transaction. PostgreSQL hashes each row as it writes it: nothing to do.
    pub async fn seal(&self) -> Result<SealReport, OwnDbError> {
        match self {
            OwnDb::Postgres(_) => Ok(SealReport::default()),
            OwnDb::Sqlite(sqlite) => audit::seal(sqlite).await,
        }
    }

    /// PostgreSQL: chains into the audit the refusals recorded in `pending` on scopes no
    /// transaction holds now (refusals of writers that rolled back wait there for their scope's
    /// next decision otherwise). How many rows were chained; SQLite has none.
    pub async fn drain_pending(&self) -> Result<i64, OwnDbError> {
        match self {
            OwnDb::Postgres(pg) => Ok(sqlx::query_scalar(&format!(
                "SELECT {}.drain_pending()",
                quote::ident(pg.schema())
            ))
            .fetch_one(pg.pool())
            .await?),
            OwnDb::Sqlite(_) => Ok(0),
        }
    }

    /// Deletes operation-id records past their retention (they are ignored already).
    pub async fn prune_operations(&self) -> Result<u64, OwnDbError> {
        match self {
            OwnDb::Postgres(pg) => pg.prune_operations().await,
            OwnDb::Sqlite(sqlite) => sqlite.prune_operations().await,
        }
    }

    /// The installed fence's version; `None` when this database has no fence. Reads only.
    pub async fn installed_version(&self) -> Result<Option<i64>, OwnDbError> {
        let applied = match self {
            OwnDb::Postgres(pg) => {
                let mut conn = pg.pool().acquire().await?;
                migrate::postgres_applied(&mut conn, pg.schema()).await?
            }
            OwnDb::Sqlite(sqlite) => {
                let mut conn = sqlite.pool().acquire().await?;
                migrate::sqlite_applied(&mut conn).await?
            }
        };
        Ok(migrate::installed(&applied))
    }

    /// PostgreSQL: the bounds of a snapshot taken now, so that a reader of the audit by id can
    /// tell a missing id still in flight from one that will never commit (ids come from a
    /// sequence, drawn after the deciding transaction took its transaction id: it locked the
    /// scope's row first). SQLite: `None`, its single writer assigns ids in commit order.
    pub async fn snapshot(&self) -> Result<Option<Xids>, OwnDbError> {
        match self {
            OwnDb::Postgres(pg) => audit::postgres_snapshot(pg).await.map(Some),
            OwnDb::Sqlite(_) => Ok(None),
        }
    }

    /// Closes the pool.
    pub async fn close(&self) {
        match self {
            OwnDb::Postgres(pg) => pg.pool().close().await,
            OwnDb::Sqlite(sqlite) => sqlite.pool().close().await,
        }
    }
}
