//! The fence in a user's PostgreSQL database: one schema (default `fencewatch`) holding the
//! tables, the guard `fence()`, `protect()` and the generated trigger functions, plus (when the
//! installing role may create them) the dblink extension, the loopback foreign server and a user
//! mapping through which refusals are audited autonomously. Install records what it created in
//! `settings`, so that uninstall removes that and nothing else.

mod checks;
mod ddl_guard;
mod loopback;
mod protect;
mod reset;
mod trust;
mod uninstall;

use super::migrate;
use super::quote::ident as quote_ident;
use super::{
    AutonomousAudit, DdlGuard, FenceStatus, InstallOptions, InstallOutcome, OpenOptions, OwnDbError,
};
use crate::redact::redact_url;
use crate::store::driver_url;
use checks::{check_lease_schema, check_schema_name, request_error};
use sqlx::postgres::{PgConnectOptions, PgPoolOptions};
use sqlx::{PgConnection, PgPool};
use std::collections::HashMap;
use std::str::FromStr;

/// A fence schema in a PostgreSQL database.
#[derive(Clone)]
pub struct PgFence {
    pool: PgPool,
    schema: String,
    shown_url: String,
    /// The database's name as the URL gives it (the driver's default: the user's name).
    database: String,
    /// The search path the URL's role has (or the URL sets): what a table name given to
    /// protect or unprotect is looked up in. The pool's own sessions use pg_catalog's alone.
    user_search_path: String,
}

/// The search path of every session the fence opens on a user's database. The user's database
/// may hold functions and operators of roles less trusted than the one running fencewatch
/// (often a superuser): with them on the path, one that matches a call's arguments more
/// exactly than PostgreSQL's own would be called instead, with that role's rights. Everything
/// of the fence's is named by its schema.
const SESSION_SEARCH_PATH: &str = "pg_catalog,pg_temp";

impl PgFence {
    pub(super) async fn open(
        url: &str,
        schema: &str,
        options: &OpenOptions,
    ) -> Result<PgFence, OwnDbError> {
        check_schema_name(schema)?;
        let shown_url = redact_url(url);
        // Parameters the driver does not read would be logged with their values by it.
        let driver = driver_url(url);
        for parameter in &driver.ignored {
            tracing::warn!(%parameter, "ignoring a database URL parameter PostgreSQL's driver does not read");
        }
        let unavailable = |reason: String| OwnDbError::Unavailable {
            database: shown_url.clone(),
            reason,
        };
        // The server's notices (`… does not exist, skipping`) are not the user's business.
        let connect = PgConnectOptions::from_str(&driver.url)
            .map_err(|e| unavailable(format!("not a usable PostgreSQL URL: {e}")))?
            .options([("client_min_messages", "warning")]);
        // One connection first, for the driver's own reason when it fails (a pool would only
        // say that it timed out).
        let database = connect
            .get_database()
            .unwrap_or(connect.get_username())
            .to_owned();
        let mut first = <PgConnection as sqlx::Connection>::connect_with(&connect)
            .await
            .map_err(|e| unavailable(e.to_string()))?;
        // SHOW calls no function: it is safe on any path.
        let user_search_path: String = sqlx::query_scalar("SHOW search_path")
            .fetch_one(&mut first)
            .await?;
        sqlx::Connection::close(first).await.ok();
        let pool = PgPoolOptions::new()
            .max_connections(options.max_connections.max(1))
            .acquire_timeout(options.acquire_timeout)
            .connect_lazy_with(connect.options([("search_path", SESSION_SEARCH_PATH)]));
        Ok(PgFence {
            pool,
            schema: schema.to_owned(),
            shown_url,
            database,
            user_search_path,
        })
    }

    pub fn pool(&self) -> &PgPool {
        &self.pool
    }

    pub fn schema(&self) -> &str {
        &self.schema
    }

    /// The URL with any password masked.
    pub fn shown_url(&self) -> &str {
        &self.shown_url
    }

    /// The database's name.
    pub fn database(&self) -> &str {
        &self.database
    }

    fn ident(&self) -> String {
        quote_ident(&self.schema)
    }

    /// Serializes installs, upgrades and uninstalls of this schema's fence, to the end of the
    /// caller's transaction.
    async fn lock(&self, conn: &mut PgConnection) -> Result<(), OwnDbError> {
        sqlx::query("SELECT pg_advisory_xact_lock(hashtextextended($1, 0))")
            .bind(format!("fencewatch fence {}", self.schema))
            .execute(&mut *conn)
            .await?;
        Ok(())
    }

    async fn schema_exists(&self, conn: &mut PgConnection) -> Result<bool, OwnDbError> {
        Ok(
            sqlx::query_scalar("SELECT EXISTS (SELECT 1 FROM pg_namespace WHERE nspname = $1)")
                .bind(&self.schema)
                .fetch_one(&mut *conn)
                .await?,
        )
    }

    async fn settings(
        &self,
        conn: &mut PgConnection,
    ) -> Result<HashMap<String, String>, OwnDbError> {
        let rows: Vec<(String, String)> = sqlx::query_as(&format!(
            "SELECT name, value FROM {}.settings",
            self.ident()
        ))
        .fetch_all(&mut *conn)
        .await?;
        Ok(rows.into_iter().collect())
    }

    async fn set(
        &self,
        conn: &mut PgConnection,
        name: &str,
        value: &str,
    ) -> Result<(), OwnDbError> {
        sqlx::query(&format!(
            "INSERT INTO {}.settings (name, value) VALUES ($1, $2) \
             ON CONFLICT (name) DO UPDATE SET value = excluded.value",
            self.ident()
        ))
        .bind(name)
        .bind(value)
        .execute(&mut *conn)
        .await?;
        Ok(())
    }

    pub(super) async fn install(
        &self,
        options: &InstallOptions,
        target: i64,
    ) -> Result<InstallOutcome, OwnDbError> {
        let lease_schema = options
            .lease_schema
            .as_deref()
            .map(check_lease_schema)
            .transpose()?;
        let retention = options
            .operation_retention
            .map(|retention| match retention.as_micros() {
                0 => Err(OwnDbError::Invalid(
                    "--operation-retention must be more than zero".into(),
                )),
                micros => Ok(format!("{micros} microseconds")),
            })
            .transpose()?;
        let mut tx = self.pool.begin().await?;
        self.lock(&mut tx).await?;
        let schema_existed = self.schema_exists(&mut tx).await?;
        if schema_existed {
            // Its owner, or a role that may create objects in it, could replace a function a
            // protected write calls as the fence's owner.
            trust::refuse_foreign_schema(&mut tx, &self.schema).await?;
        } else {
            sqlx::raw_sql(&format!("CREATE SCHEMA {}", self.ident()))
                .execute(&mut *tx)
                .await?;
        }
        let applied = migrate::postgres_applied(&mut tx, &self.schema).await?;
        let from = migrate::installed(&applied);
        let pending = migrate::plan(migrate::postgres(), &applied, target)?;
        // Every object the migrations create lands in the schema, and every function keeps this
        // search path (`SET search_path FROM CURRENT`): the schema, then pg_temp last, so that
        // no object of a caller's can stand in for one of the fence's.
        sqlx::raw_sql(&format!(
            "SET LOCAL search_path = {}, pg_temp",
            self.ident()
        ))
        .execute(&mut *tx)
        .await?;
        migrate::postgres_apply(&mut tx, &self.schema, &pending).await?;
        if !schema_existed {
            self.set(&mut tx, "schema_created", "true").await?;
        }
        if let Some(lease_schema) = lease_schema {
            self.set(&mut tx, "lease_schema", lease_schema).await?;
        }
        if let Some(retention) = &retention {
            self.set(&mut tx, "operation_retention", retention).await?;
        }
        let now = migrate::installed(&applied)
            .into_iter()
            .chain(pending.iter().map(|m| m.version))
            .max()
            .unwrap_or(target);
        let now_guarded = now >= 3 && self.set_up_ddl_guard(&mut tx).await?;
        if from.is_some_and(|from| from >= 2) && (!pending.is_empty() || now_guarded) {
            // A newer version may write trigger functions differently, and a new DDL guard
            // makes the tables' statement triggers unneeded: rewrite them. A table the newer
            // protect() refuses (an inheritance child since) fails the upgrade, naming it,
            // and leaves the fence as it was.
            sqlx::query(&format!(
                "SELECT {s}.protect(p.table_name, p.token_column, p.scope_column, p.scope, \
                        p.op_column, p.owner_column, p.lease, p.generation) \
                   FROM {s}.protected p \
                  WHERE EXISTS (SELECT 1 FROM pg_class c WHERE c.oid = p.table_name)",
                s = self.ident()
            ))
            .execute(&mut *tx)
            .await
            .map_err(|e| request_error(e, "a protected table"))?;
        }
        self.set_up_loopback(&mut tx).await?;
        tx.commit().await?;
        Ok(match (from, pending.is_empty()) {
            (None, _) => InstallOutcome::Installed { version: now },
            (Some(version), true) => InstallOutcome::AlreadyInstalled { version },
            (Some(from), false) => InstallOutcome::Upgraded { from, to: now },
        })
    }

    /// The installed version, which must be this build's for protect and unprotect.
    async fn require_current(&self, conn: &mut PgConnection) -> Result<i64, OwnDbError> {
        let applied = migrate::postgres_applied(conn, &self.schema).await?;
        let latest = migrate::latest(migrate::postgres());
        match migrate::installed(&applied) {
            None => Err(OwnDbError::Invalid(format!(
                "no fence in schema {} of {}: run `fencewatch fence install` first",
                self.schema, self.shown_url
            ))),
            Some(version) if version < latest => Err(OwnDbError::Invalid(format!(
                "the fence in schema {} is v{version}: run `fencewatch fence install` to upgrade \
                 it to v{latest} first",
                self.schema
            ))),
            Some(version) if version > latest => Err(OwnDbError::Newer {
                installed: version,
                known: latest,
            }),
            Some(version) => Ok(version),
        }
    }

    pub(super) async fn status(&self) -> Result<FenceStatus, OwnDbError> {
        let latest = migrate::latest(migrate::postgres());
        let mut conn = self.pool.acquire().await?;
        let applied = migrate::postgres_applied(&mut conn, &self.schema).await?;
        let mut status = FenceStatus {
            backend: "postgres",
            database: self.shown_url.clone(),
            schema: Some(self.schema.clone()),
            installed_version: migrate::installed(&applied),
            latest_version: latest,
            protected: Vec::new(),
            scopes: 0,
            audit_rows: 0,
            unsealed_rows: 0,
            operation_retention_us: None,
            lease_schema: None,
            autonomous_audit: AutonomousAudit::Unavailable {
                reason: "the fence is not installed".into(),
            },
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
        let s = self.ident();
        let settings = self.settings(&mut conn).await?;
        status.lease_schema = settings.get("lease_schema").cloned();
        status.operation_retention_us = sqlx::query_scalar(&format!(
            "SELECT (extract(epoch FROM value::interval) * 1000000)::bigint FROM {s}.settings \
              WHERE name = 'operation_retention'"
        ))
        .fetch_optional(&mut *conn)
        .await?;
        if version >= 2 {
            status.protected = self.protected_tables(&mut conn, None).await?;
        }
        (status.scopes, status.audit_rows) = sqlx::query_as(&format!(
            "SELECT (SELECT count(*) FROM {s}.scopes), (SELECT count(*) FROM {s}.audit)"
        ))
        .fetch_one(&mut *conn)
        .await?;
        let problem: Option<String> =
            sqlx::query_scalar(&format!("SELECT {s}.autonomous_audit_problem()"))
                .fetch_one(&mut *conn)
                .await?;
        status.autonomous_audit = match problem {
            None => AutonomousAudit::Works,
            Some(reason) => AutonomousAudit::Unavailable { reason },
        };
        let server = settings.get("loopback_server").map(String::as_str);
        status.problems = trust::privilege_problems(&mut conn, &self.schema, server).await?;
        if let AutonomousAudit::Unavailable { reason } = &status.autonomous_audit {
            // require_identity()'s refusal, through dblink: a restored or renamed copy whose
            // loopback would record its refusals in another database.
            if reason.contains("the loopback reaches database") {
                status.problems.push(reason.clone());
            }
        }
        if version >= 3 {
            let tables: Vec<String> = sqlx::query_scalar(&format!(
                "SELECT p FROM {s}.protected_table_problems(false) p ORDER BY 1"
            ))
            .fetch_all(&mut *conn)
            .await?;
            status.problems.extend(tables);
            status.ddl_guard = self.ddl_guard(&mut conn, &settings).await?;
        }
        Ok(status)
    }

    pub(super) async fn prune_operations(&self) -> Result<u64, OwnDbError> {
        let mut conn = self.pool.acquire().await?;
        self.require_current(&mut conn).await?;
        let pruned: i64 =
            sqlx::query_scalar(&format!("SELECT {}.prune_operations()", self.ident()))
                .fetch_one(&mut *conn)
                .await?;
        Ok(u64::try_from(pruned).unwrap_or(0))
    }
}

#[cfg(test)]
mod tests;
