//! The fence in a user's SQLite file: tables, a view and triggers named `fencewatch_*`, and per
//! protected table two triggers written by `protect` (see `sqlite_triggers`). The file must
//! exist: fencewatch never creates a user's database. Its journal mode is the user's and is left
//! alone. Changes run in `BEGIN IMMEDIATE` transactions: the write lock is taken first, so two
//! installs at once wait for each other instead of failing to upgrade a read lock.

mod protected;

use super::migrate;
use super::sqlite_triggers;
use super::{
    AutonomousAudit, DdlGuard, FenceStatus, Generation, InstallOptions, InstallOutcome,
    OpenOptions, OwnDbError, ProtectSpec, ProtectedTable, ResetDone, ScopeSource, UninstallOutcome,
    UnprotectOutcome,
};
use crate::redact::redact_url;
use sqlx::sqlite::{SqliteConnectOptions, SqlitePoolOptions};
use sqlx::{Connection, SqliteConnection, SqlitePool};
use std::str::FromStr;
use std::time::Duration;

use protected::{protected_tables, trigger_problem, write_triggers};

/// What uninstall drops besides the protected tables' triggers (the guard's triggers and the
/// indexes go with their tables).
const DROP_FENCE: &str = "DROP VIEW IF EXISTS fencewatch_clock; \
     DROP TABLE IF EXISTS fencewatch_guard; DROP TABLE IF EXISTS fencewatch_protected; \
     DROP TABLE IF EXISTS fencewatch_operations; DROP TABLE IF EXISTS fencewatch_audit; \
     DROP TABLE IF EXISTS fencewatch_scopes; DROP TABLE IF EXISTS fencewatch_settings; \
     DROP TABLE IF EXISTS fencewatch_migrations;";

/// A fence in a SQLite file.
#[derive(Clone)]
pub struct SqliteFence {
    pool: SqlitePool,
    shown_url: String,
    /// The file's name without its extension.
    stem: String,
}

impl SqliteFence {
    pub(super) async fn open(
        path_and_query: &str,
        options: &OpenOptions,
    ) -> Result<SqliteFence, OwnDbError> {
        let shown_url = redact_url(&format!("sqlite://{path_and_query}"));
        let path = path_and_query.split('?').next().unwrap_or_default();
        if path.is_empty() || path == ":memory:" || path_and_query.contains("mode=memory") {
            return Err(OwnDbError::Invalid(
                "the fence goes in a SQLite file: give sqlite://PATH of an existing one".into(),
            ));
        }
        // Checked here because SQLite would create a missing file.
        match std::fs::metadata(path) {
            Ok(meta) if meta.is_file() => {}
            Ok(_) => return Err(OwnDbError::Invalid(format!("{path} is not a file"))),
            Err(error) => {
                return Err(OwnDbError::Invalid(format!(
                    "no SQLite database at {path} ({error}); fencewatch installs its fence in an \
                     existing file and never creates one"
                )))
            }
        }
        let connect = SqliteConnectOptions::from_str(&format!("sqlite://{path_and_query}"))
            .map_err(|e| OwnDbError::Invalid(format!("{shown_url} is not a SQLite URL: {e}")))?
            .create_if_missing(false)
            .busy_timeout(Duration::from_secs(5));
        let pool = SqlitePoolOptions::new()
            .max_connections(options.max_connections.max(1))
            .acquire_timeout(options.acquire_timeout)
            .connect_with(connect)
            .await
            .map_err(|e| OwnDbError::Unavailable {
                database: shown_url.clone(),
                reason: e.to_string(),
            })?;
        let stem = std::path::Path::new(path)
            .file_stem()
            .map(|stem| stem.to_string_lossy().into_owned())
            .unwrap_or_else(|| path.to_owned());
        Ok(SqliteFence {
            pool,
            shown_url,
            stem,
        })
    }

    pub fn pool(&self) -> &SqlitePool {
        &self.pool
    }

    /// The URL as it may be shown.
    pub fn shown_url(&self) -> &str {
        &self.shown_url
    }

    /// The file's name without its extension.
    pub fn stem(&self) -> &str {
        &self.stem
    }

    pub(super) async fn install(
        &self,
        options: &InstallOptions,
        target: i64,
    ) -> Result<InstallOutcome, OwnDbError> {
        if options.lease_schema.is_some() {
            return Err(OwnDbError::Invalid(
                "--lease-schema is for PostgreSQL; in SQLite the daemon's leases table is the \
                 file's own `leases`"
                    .into(),
            ));
        }
        let retention = options
            .operation_retention
            .map(|retention| match i64::try_from(retention.as_micros()) {
                Ok(micros) if micros > 0 => Ok(micros),
                _ => Err(OwnDbError::Invalid(
                    "--operation-retention must be more than zero and less than 290,000 years"
                        .into(),
                )),
            })
            .transpose()?;
        let mut conn = self.pool.acquire().await?;
        let mut tx = conn.begin_with("BEGIN IMMEDIATE").await?;
        let applied = migrate::sqlite_applied(&mut tx).await?;
        let from = migrate::installed(&applied);
        let pending = migrate::plan(migrate::sqlite(), &applied, target)?;
        migrate::sqlite_apply(&mut tx, &pending).await?;
        if let Some(micros) = retention {
            sqlx::query(
                "INSERT INTO fencewatch_settings (name, value) \
                 VALUES ('operation_retention_us', $1) \
                 ON CONFLICT (name) DO UPDATE SET value = excluded.value",
            )
            .bind(micros.to_string())
            .execute(&mut *tx)
            .await?;
        }
        let now = from
            .into_iter()
            .chain(pending.iter().map(|m| m.version))
            .max()
            .unwrap_or(target);
        if now >= 2 {
            // This build may write the triggers differently from the one that wrote them (or
            // they were edited by hand): whatever the versions, rewrite those that differ.
            for protected in protected_tables(&mut tx).await? {
                if trigger_problem(&mut tx, &protected)
                    .await?
                    .is_some_and(|p| !p.gone)
                {
                    write_triggers(&mut tx, &protected).await?;
                }
            }
        }
        tx.commit().await?;
        Ok(match (from, pending.is_empty()) {
            (None, _) => InstallOutcome::Installed { version: now },
            (Some(version), true) => InstallOutcome::AlreadyInstalled { version },
            (Some(from), false) => InstallOutcome::Upgraded { from, to: now },
        })
    }

    async fn require_current(&self, conn: &mut SqliteConnection) -> Result<i64, OwnDbError> {
        let applied = migrate::sqlite_applied(conn).await?;
        let latest = migrate::latest(migrate::sqlite());
        match migrate::installed(&applied) {
            None => Err(OwnDbError::Invalid(format!(
                "no fence in {}: run `fencewatch fence install` first",
                self.shown_url
            ))),
            Some(version) if version < latest => Err(OwnDbError::Invalid(format!(
                "the fence in {} is v{version}: run `fencewatch fence install` to upgrade it to \
                 v{latest} first",
                self.shown_url
            ))),
            Some(version) if version > latest => Err(OwnDbError::Newer {
                installed: version,
                known: latest,
            }),
            Some(version) => Ok(version),
        }
    }

    pub(super) async fn protect(&self, spec: &ProtectSpec) -> Result<ProtectedTable, OwnDbError> {
        if spec.table.to_ascii_lowercase().starts_with("fencewatch_") {
            return Err(OwnDbError::Invalid(format!(
                "{} is one of the fence's own tables; protect your tables, not the fence",
                spec.table
            )));
        }
        let mut conn = self.pool.acquire().await?;
        let mut tx = conn.begin_with("BEGIN IMMEDIATE").await?;
        self.require_current(&mut tx).await?;
        let table: String = sqlx::query_scalar(
            "SELECT name FROM sqlite_master WHERE type = 'table' AND name = $1 COLLATE NOCASE",
        )
        .bind(&spec.table)
        .fetch_optional(&mut *tx)
        .await?
        .ok_or_else(|| {
            OwnDbError::Invalid(format!("no table {} in {}", spec.table, self.shown_url))
        })?;
        let columns: Vec<String> = sqlx::query_scalar("SELECT name FROM pragma_table_info($1)")
            .bind(&table)
            .fetch_all(&mut *tx)
            .await?;
        let column = |name: &str| -> Result<String, OwnDbError> {
            columns
                .iter()
                .find(|c| c.eq_ignore_ascii_case(name))
                .cloned()
                .ok_or_else(|| OwnDbError::Invalid(format!("table {table} has no column {name}")))
        };
        let scope = match &spec.scope {
            ScopeSource::Column(name) => ScopeSource::Column(column(name)?),
            ScopeSource::Fixed(scope) if scope.is_empty() => {
                return Err(OwnDbError::Invalid("--scope must not be empty".into()))
            }
            fixed => fixed.clone(),
        };
        if spec.generation == Some(Generation::Stated) {
            return Err(OwnDbError::Invalid(
                "--generation stated is PostgreSQL's: SQLite's triggers cannot read a \
                 transaction's generation, and judge the row's token column (--generation row)"
                    .into(),
            ));
        }
        let protected = ProtectedTable {
            generation: Generation::Row,
            table: table.clone(),
            token_column: column(&spec.token_column)?,
            scope_column: match &scope {
                ScopeSource::Column(name) => Some(name.clone()),
                ScopeSource::Fixed(_) => None,
            },
            scope: match &scope {
                ScopeSource::Fixed(scope) => Some(scope.clone()),
                ScopeSource::Column(_) => None,
            },
            op_column: spec.op_column.as_deref().map(column).transpose()?,
            owner_column: spec.owner_column.as_deref().map(column).transpose()?,
            lease: spec.lease.clone(),
        };
        if let Some(lease) = &spec.lease {
            let lease_columns: Vec<String> =
                sqlx::query_scalar("SELECT name FROM pragma_table_info('leases')")
                    .fetch_all(&mut *tx)
                    .await?;
            let daemons = ["name", "token", "expires_at_us", "released_at_us"]
                .iter()
                .all(|needed| lease_columns.iter().any(|c| c == needed));
            if !daemons {
                return Err(OwnDbError::Invalid(format!(
                    "--lease {lease} needs the leases table of a fencewatch daemon whose store is \
                     this file: {} has none (start `fencewatch serve --database {}` once)",
                    self.shown_url, self.shown_url
                )));
            }
        }
        write_triggers(&mut tx, &protected).await?;
        tx.commit().await?;
        Ok(protected)
    }

    pub(super) async fn unprotect(&self, table: &str) -> Result<UnprotectOutcome, OwnDbError> {
        let mut conn = self.pool.acquire().await?;
        let mut tx = conn.begin_with("BEGIN IMMEDIATE").await?;
        self.require_current(&mut tx).await?;
        let triggers: Option<(String, String)> = sqlx::query_as(
            "SELECT insert_trigger, update_trigger FROM fencewatch_protected \
              WHERE table_name = $1 COLLATE NOCASE",
        )
        .bind(table)
        .fetch_optional(&mut *tx)
        .await?;
        let Some((insert, update)) = triggers else {
            return Ok(UnprotectOutcome::WasNotProtected);
        };
        sqlx::raw_sql(&sqlite_triggers::drop_triggers(&insert, &update))
            .execute(&mut *tx)
            .await?;
        sqlx::query("DELETE FROM fencewatch_protected WHERE table_name = $1 COLLATE NOCASE")
            .bind(table)
            .execute(&mut *tx)
            .await?;
        tx.commit().await?;
        Ok(UnprotectOutcome::Unprotected)
    }

    pub(super) async fn status(&self) -> Result<FenceStatus, OwnDbError> {
        let latest = migrate::latest(migrate::sqlite());
        let mut conn = self.pool.acquire().await?;
        let applied = migrate::sqlite_applied(&mut conn).await?;
        let mut status = FenceStatus {
            backend: "sqlite",
            database: self.shown_url.clone(),
            schema: None,
            installed_version: migrate::installed(&applied),
            latest_version: latest,
            protected: Vec::new(),
            scopes: 0,
            audit_rows: 0,
            unsealed_rows: 0,
            operation_retention_us: None,
            lease_schema: None,
            autonomous_audit: AutonomousAudit::NotApplicable,
            problems: Vec::new(),
            ddl_guard: DdlGuard::NotApplicable,
        };
        let Some(version) = status.installed_version else {
            return Ok(status);
        };
        if version > latest {
            return Err(OwnDbError::Newer {
                installed: version,
                known: latest,
            });
        }
        if version >= 2 {
            status.protected = protected_tables(&mut conn).await?;
            for protected in &status.protected {
                if let Some(problem) = trigger_problem(&mut conn, protected).await? {
                    status.problems.push(problem.text);
                }
            }
        }
        (status.scopes, status.audit_rows, status.unsealed_rows) = sqlx::query_as(
            "SELECT (SELECT count(*) FROM fencewatch_scopes), \
                    (SELECT count(*) FROM fencewatch_audit), \
                    (SELECT count(*) FROM fencewatch_audit WHERE hash IS NULL)",
        )
        .fetch_one(&mut *conn)
        .await?;
        let retention_us: Option<String> = sqlx::query_scalar(
            "SELECT value FROM fencewatch_settings WHERE name = 'operation_retention_us'",
        )
        .fetch_optional(&mut *conn)
        .await?;
        status.operation_retention_us = retention_us.and_then(|us| us.parse::<i64>().ok());
        Ok(status)
    }

    pub(super) async fn uninstall(&self) -> Result<UninstallOutcome, OwnDbError> {
        let mut conn = self.pool.acquire().await?;
        let mut tx = conn.begin_with("BEGIN IMMEDIATE").await?;
        let applied = migrate::sqlite_applied(&mut tx).await?;
        let latest = migrate::latest(migrate::sqlite());
        let version = match migrate::installed(&applied) {
            None => return Ok(UninstallOutcome::NotInstalled),
            Some(version) if version > latest => {
                return Err(OwnDbError::Newer {
                    installed: version,
                    known: latest,
                })
            }
            Some(version) => version,
        };
        if version >= 2 {
            let triggers: Vec<(String, String)> =
                sqlx::query_as("SELECT insert_trigger, update_trigger FROM fencewatch_protected")
                    .fetch_all(&mut *tx)
                    .await?;
            for (insert, update) in triggers {
                sqlx::raw_sql(&sqlite_triggers::drop_triggers(&insert, &update))
                    .execute(&mut *tx)
                    .await?;
            }
        }
        sqlx::raw_sql(DROP_FENCE).execute(&mut *tx).await?;
        tx.commit().await?;
        Ok(UninstallOutcome::Uninstalled {
            version,
            left: Vec::new(),
        })
    }

    pub(super) async fn reset(
        &self,
        scope: &str,
        to: i64,
        reason: &str,
    ) -> Result<ResetDone, OwnDbError> {
        let mut conn = self.pool.acquire().await?;
        let mut tx = conn.begin_with("BEGIN IMMEDIATE").await?;
        self.require_current(&mut tx).await?;
        let previous: i64 =
            sqlx::query_scalar("SELECT highest_token FROM fencewatch_scopes WHERE scope = $1")
                .bind(scope)
                .fetch_optional(&mut *tx)
                .await?
                .ok_or_else(|| OwnDbError::Invalid(format!("no scope {scope} in this fence")))?;
        // The audit row's trigger moves the scope's head; the highest is set here.
        let row_id: i64 = sqlx::query_scalar(
            "INSERT INTO fencewatch_audit (at, resource, outcome, token, highest_token, detail, \
                                           seq) \
             SELECT c.at, $1, 'reset', $2, $2, $3, \
                    (SELECT h.head_seq FROM fencewatch_scopes h WHERE h.scope = $1) + 1 \
               FROM fencewatch_clock c RETURNING id",
        )
        .bind(scope)
        .bind(to)
        .bind(reason)
        .fetch_one(&mut *tx)
        .await?;
        sqlx::query(
            "UPDATE fencewatch_scopes SET highest_token = $2, \
                    updated_at = (SELECT at FROM fencewatch_clock) WHERE scope = $1",
        )
        .bind(scope)
        .bind(to)
        .execute(&mut *tx)
        .await?;
        tx.commit().await?;
        Ok(ResetDone { previous, row_id })
    }

    pub(super) async fn prune_operations(&self) -> Result<u64, OwnDbError> {
        let mut conn = self.pool.acquire().await?;
        self.require_current(&mut conn).await?;
        let pruned = sqlx::query(
            "DELETE FROM fencewatch_operations WHERE applied_at_us <= \
                 (SELECT now_us FROM fencewatch_clock) - (SELECT CAST(value AS INTEGER) \
                  FROM fencewatch_settings WHERE name = 'operation_retention_us')",
        )
        .execute(&mut *conn)
        .await?;
        Ok(pruned.rows_affected())
    }
}
