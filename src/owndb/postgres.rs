//! The fence in a user's PostgreSQL database: one schema (default `fencewatch`) holding the
//! tables, the guard `fence()`, `protect()` and the generated trigger functions, plus (when the
//! installing role may create them) the dblink extension, the loopback foreign server and a user
//! mapping through which refusals are audited autonomously. Install records what it created in
//! `settings`, so that uninstall removes that and nothing else.

use super::migrate;
use super::quote::ident as quote_ident;
use super::{
    AutonomousAudit, FenceStatus, InstallOptions, InstallOutcome, OpenOptions, OwnDbError,
    ProtectSpec, ProtectedTable, ScopeSource, UninstallOutcome, UnprotectOutcome,
};
use crate::store::{driver_url, redact_url};
use sqlx::postgres::{PgConnectOptions, PgPoolOptions};
use sqlx::{PgConnection, PgPool};
use std::collections::HashMap;
use std::str::FromStr;

/// Functions the migrations create, by name: what uninstall drops (every overload of each).
const FUNCTIONS: &[&str] = &[
    "fence",
    "judge",
    "append_audit",
    "append_audit_autonomously",
    "append_autonomous",
    "row_hash",
    "autonomous_audit_problem",
    "prune_operations",
    "protect",
    "unprotect",
];

/// Tables the migrations and the runner create, dropped in this order.
const TABLES: &[&str] = &[
    "protected",
    "operations",
    "audit",
    "scopes",
    "settings",
    "migrations",
];

/// A fence schema in a PostgreSQL database.
#[derive(Clone)]
pub struct PgFence {
    pool: PgPool,
    schema: String,
    shown_url: String,
    /// The database's name as the URL gives it (the driver's default: the user's name).
    database: String,
}

/// A schema name as `--schema` takes one: lowercase letters, digits and `_`, not starting with
/// a digit, short enough that `<schema>_loopback` is still a name PostgreSQL keeps whole.
fn check_schema_name(schema: &str) -> Result<(), OwnDbError> {
    let fits = !schema.is_empty()
        && schema.len() <= 48
        && !schema.starts_with(|c: char| c.is_ascii_digit())
        && !schema.starts_with("pg_")
        && schema
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_');
    match fits {
        true => Ok(()),
        false => Err(OwnDbError::Invalid(format!(
            "--schema {schema:?}: use lowercase letters, digits and _ (at most 48, not starting \
             with a digit or pg_)"
        ))),
    }
}

/// The foreign server the autonomous appends connect through.
fn loopback_server(schema: &str) -> String {
    match schema {
        super::DEFAULT_SCHEMA => "fencewatch_loopback".to_owned(),
        other => format!("{other}_loopback"),
    }
}

/// An error of protect's or unprotect's SQL that is about what was asked (a missing table or
/// column, a refused value), as a message for the user; anything else stays a database error.
fn request_error(error: sqlx::Error, table: &str) -> OwnDbError {
    if let sqlx::Error::Database(db) = &error {
        match db.code().as_deref() {
            Some("FW400") => {
                let message = db.message();
                return OwnDbError::Invalid(
                    message
                        .strip_prefix("FW400: ")
                        .unwrap_or(message)
                        .to_owned(),
                );
            }
            Some("42P01") | Some("3F000") => {
                return OwnDbError::Invalid(format!("no table {table} in this database"))
            }
            Some("42602") | Some("42601") => {
                return OwnDbError::Invalid(format!("{table:?} is not a table name"))
            }
            Some("42501") => {
                return OwnDbError::Invalid(format!("not allowed on {table}: {}", db.message()))
            }
            _ => {}
        }
    }
    OwnDbError::Database(error)
}

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
        let first = <PgConnection as sqlx::Connection>::connect_with(&connect)
            .await
            .map_err(|e| unavailable(e.to_string()))?;
        let pool = PgPoolOptions::new()
            .max_connections(options.max_connections.max(1))
            .acquire_timeout(options.acquire_timeout)
            .connect_lazy_with(connect);
        sqlx::Connection::close(first).await.ok();
        Ok(PgFence {
            pool,
            schema: schema.to_owned(),
            shown_url,
            database,
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
        if !schema_existed {
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
        if from.is_some_and(|from| from >= 2) && !pending.is_empty() {
            // A newer version may write trigger functions differently: rewrite them.
            sqlx::query(&format!(
                "SELECT {s}.protect(p.table_name, p.token_column, p.scope_column, p.scope, \
                        p.op_column, p.owner_column, p.lease) \
                   FROM {s}.protected p \
                  WHERE EXISTS (SELECT 1 FROM pg_class c WHERE c.oid = p.table_name)",
                s = self.ident()
            ))
            .execute(&mut *tx)
            .await?;
        }
        self.set_up_loopback(&mut tx).await?;
        tx.commit().await?;
        Ok(match (from, pending.is_empty()) {
            (None, _) => InstallOutcome::Installed { version: now },
            (Some(version), true) => InstallOutcome::AlreadyInstalled { version },
            (Some(from), false) => InstallOutcome::Upgraded { from, to: now },
        })
    }

    /// The dblink extension (created in the fence's schema unless the database has it already),
    /// a foreign server to this very database (host: the server's first Unix socket directory,
    /// its port and the database's name, all read from the server) and a user mapping for the
    /// installing role. Each is recorded as created, for uninstall. Any of it failing (not a
    /// superuser, dblink not shipped) leaves the rest of the install as it is, with the reason
    /// kept for `status`.
    async fn set_up_loopback(&self, tx: &mut PgConnection) -> Result<(), OwnDbError> {
        let mut savepoint = sqlx::Connection::begin(&mut *tx).await?;
        match self.create_loopback(&mut savepoint).await {
            Ok(()) => {
                savepoint.commit().await?;
                sqlx::query(&format!(
                    "DELETE FROM {}.settings WHERE name = 'dblink_problem'",
                    self.ident()
                ))
                .execute(&mut *tx)
                .await?;
            }
            Err(error) => {
                savepoint.rollback().await?;
                let reason = match &error {
                    OwnDbError::Database(sqlx::Error::Database(db)) => db.message().to_owned(),
                    other => other.to_string(),
                };
                tracing::warn!(%reason, "refusals of the guard will not be audited autonomously");
                self.set(tx, "dblink_problem", &reason).await?;
            }
        }
        Ok(())
    }

    async fn create_loopback(&self, conn: &mut PgConnection) -> Result<(), OwnDbError> {
        let found: Option<String> = sqlx::query_scalar(
            "SELECT n.nspname::text FROM pg_extension e \
               JOIN pg_namespace n ON n.oid = e.extnamespace WHERE e.extname = 'dblink'",
        )
        .fetch_optional(&mut *conn)
        .await?;
        let dblink_schema = match found {
            Some(schema) => schema,
            None => {
                // In the fence's schema, whose USAGE callers of fence() are granted: its
                // functions are the owner's alone, like everything else there.
                sqlx::raw_sql(&format!(
                    "CREATE EXTENSION dblink SCHEMA {s}; \
                     REVOKE ALL ON ALL FUNCTIONS IN SCHEMA {s} FROM PUBLIC",
                    s = self.ident()
                ))
                .execute(&mut *conn)
                .await?;
                self.set(conn, "dblink_created", "true").await?;
                self.schema.clone()
            }
        };
        let server = loopback_server(&self.schema);
        let server_exists: bool = sqlx::query_scalar(
            "SELECT EXISTS (SELECT 1 FROM pg_foreign_server WHERE srvname = $1)",
        )
        .bind(&server)
        .fetch_one(&mut *conn)
        .await?;
        if !server_exists {
            let create: String = sqlx::query_scalar(
                "SELECT format('CREATE SERVER %I FOREIGN DATA WRAPPER dblink_fdw \
                                OPTIONS (host %L, port %L, dbname %L)', $1::text, \
                        coalesce(nullif(trim(split_part(current_setting('unix_socket_directories'), \
                                                        ',', 1)), ''), 'localhost'), \
                        current_setting('port'), current_database())",
            )
            .bind(&server)
            .fetch_one(&mut *conn)
            .await?;
            sqlx::raw_sql(&create).execute(&mut *conn).await?;
            self.set(conn, "server_created", "true").await?;
        }
        let mapped: bool = sqlx::query_scalar(
            "SELECT EXISTS (SELECT 1 FROM pg_user_mappings \
              WHERE srvname = $1 AND usename = current_user)",
        )
        .bind(&server)
        .fetch_one(&mut *conn)
        .await?;
        if !mapped {
            let create: String = sqlx::query_scalar(
                "SELECT format('CREATE USER MAPPING FOR CURRENT_USER SERVER %I \
                                OPTIONS (user %L)', $1::text, current_user)",
            )
            .bind(&server)
            .fetch_one(&mut *conn)
            .await?;
            sqlx::raw_sql(&create).execute(&mut *conn).await?;
            self.set(conn, "mapping_created", "true").await?;
        }
        self.set(conn, "dblink_schema", &dblink_schema).await?;
        self.set(conn, "loopback_server", &server).await?;
        Ok(())
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

    pub(super) async fn protect(&self, spec: &ProtectSpec) -> Result<ProtectedTable, OwnDbError> {
        let mut tx = self.pool.begin().await?;
        self.require_current(&mut tx).await?;
        let in_fence: bool = sqlx::query_scalar(
            "SELECT c.relnamespace = $2::text::regnamespace FROM pg_class c \
              WHERE c.oid = $1::text::regclass",
        )
        .bind(&spec.table)
        .bind(&self.schema)
        .fetch_one(&mut *tx)
        .await
        .map_err(|e| request_error(e, &spec.table))?;
        if in_fence {
            return Err(OwnDbError::Invalid(format!(
                "{} is one of the fence's own tables; protect your tables, not the fence",
                spec.table
            )));
        }
        if let Some(lease) = &spec.lease {
            let lease_schema = self
                .settings(&mut tx)
                .await?
                .remove("lease_schema")
                .unwrap_or_else(|| "public".into());
            let found: bool =
                sqlx::query_scalar("SELECT to_regclass(format('%I.leases', $1::text)) IS NOT NULL")
                    .bind(&lease_schema)
                    .fetch_one(&mut *tx)
                    .await?;
            if !found {
                return Err(OwnDbError::Invalid(format!(
                    "--lease {lease} needs the leases table of a fencewatch daemon whose store is \
                     this database, in schema {lease_schema}: there is none (start `fencewatch \
                     serve` on this database once, or install with --lease-schema)"
                )));
            }
        }
        let (scope_column, scope) = match &spec.scope {
            ScopeSource::Column(column) => (Some(column.as_str()), None),
            ScopeSource::Fixed(scope) => (None, Some(scope.as_str())),
        };
        sqlx::query(&format!(
            "SELECT {}.protect($1::text::regclass, $2, $3, $4, $5, $6, $7)",
            self.ident()
        ))
        .bind(&spec.table)
        .bind(&spec.token_column)
        .bind(scope_column)
        .bind(scope)
        .bind(spec.op_column.as_deref())
        .bind(spec.owner_column.as_deref())
        .bind(spec.lease.as_deref())
        .execute(&mut *tx)
        .await
        .map_err(|e| request_error(e, &spec.table))?;
        let protected = self
            .protected_tables(&mut tx, Some(&spec.table))
            .await?
            .into_iter()
            .next()
            .ok_or_else(|| OwnDbError::Invalid(format!("{} was not protected", spec.table)))?;
        tx.commit().await?;
        Ok(protected)
    }

    pub(super) async fn unprotect(&self, table: &str) -> Result<UnprotectOutcome, OwnDbError> {
        let mut tx = self.pool.begin().await?;
        self.require_current(&mut tx).await?;
        let removed: bool = sqlx::query_scalar(&format!(
            "SELECT {}.unprotect($1::text::regclass)",
            self.ident()
        ))
        .bind(table)
        .fetch_one(&mut *tx)
        .await
        .map_err(|e| request_error(e, table))?;
        tx.commit().await?;
        Ok(match removed {
            true => UnprotectOutcome::Unprotected,
            false => UnprotectOutcome::WasNotProtected,
        })
    }

    /// The protected tables, or the one `only` names.
    async fn protected_tables(
        &self,
        conn: &mut PgConnection,
        only: Option<&str>,
    ) -> Result<Vec<ProtectedTable>, OwnDbError> {
        type Row = (
            String,
            String,
            Option<String>,
            Option<String>,
            Option<String>,
            Option<String>,
            Option<String>,
        );
        let rows: Vec<Row> = sqlx::query_as(&format!(
            "SELECT CASE WHEN EXISTS (SELECT 1 FROM pg_class c WHERE c.oid = p.table_name) \
                         THEN p.table_name::text \
                         ELSE format('(dropped table, oid %s)', p.table_name::oid) END, \
                    p.token_column, p.scope_column, p.scope, p.op_column, p.owner_column, p.lease \
               FROM {}.protected p \
              WHERE $1::text IS NULL OR p.table_name = $1::text::regclass \
              ORDER BY 1",
            self.ident()
        ))
        .bind(only)
        .fetch_all(&mut *conn)
        .await?;
        Ok(rows
            .into_iter()
            .map(
                |(table, token_column, scope_column, scope, op_column, owner_column, lease)| {
                    ProtectedTable {
                        table,
                        token_column,
                        scope_column,
                        scope,
                        op_column,
                        owner_column,
                        lease,
                    }
                },
            )
            .collect())
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
        Ok(status)
    }

    pub(super) async fn uninstall(&self) -> Result<UninstallOutcome, OwnDbError> {
        let mut tx = self.pool.begin().await?;
        self.lock(&mut tx).await?;
        if !self.schema_exists(&mut tx).await? {
            return Ok(UninstallOutcome::NotInstalled);
        }
        let applied = migrate::postgres_applied(&mut tx, &self.schema).await?;
        let latest = migrate::latest(migrate::postgres());
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
        let s = self.ident();
        let settings = self.settings(&mut tx).await?;
        let created = |name: &str| settings.get(name).is_some_and(|v| v == "true");
        if version >= 2 {
            // The triggers first: a trigger function cannot go while a trigger uses it.
            let triggers: Vec<(String, String)> = sqlx::query_as(&format!(
                "SELECT format('DROP TRIGGER IF EXISTS %I ON %s', p.trigger_name, p.table_name), \
                        format('DROP FUNCTION IF EXISTS {schema}.%I()', p.function_name) \
                   FROM {s}.protected p \
                  WHERE EXISTS (SELECT 1 FROM pg_class c WHERE c.oid = p.table_name)",
                schema = s.replace('%', "%%"),
            ))
            .fetch_all(&mut *tx)
            .await?;
            for (drop_trigger, drop_function) in triggers {
                sqlx::raw_sql(&drop_trigger).execute(&mut *tx).await?;
                sqlx::raw_sql(&drop_function).execute(&mut *tx).await?;
            }
            // Functions of tables dropped meanwhile (their triggers went with them).
            let orphans: Vec<String> = sqlx::query_scalar(&format!(
                "SELECT format('DROP FUNCTION IF EXISTS {schema}.%I()', p.function_name) \
                   FROM {s}.protected p",
                schema = s.replace('%', "%%"),
            ))
            .fetch_all(&mut *tx)
            .await?;
            for drop_function in orphans {
                sqlx::raw_sql(&drop_function).execute(&mut *tx).await?;
            }
        }
        let functions: Vec<String> = sqlx::query_scalar(
            "SELECT format('DROP FUNCTION IF EXISTS %s', p.oid::regprocedure) FROM pg_proc p \
              WHERE p.pronamespace = $1::text::regnamespace AND p.proname = ANY($2)",
        )
        .bind(&self.schema)
        .bind(FUNCTIONS)
        .fetch_all(&mut *tx)
        .await?;
        for drop_function in functions {
            sqlx::raw_sql(&drop_function).execute(&mut *tx).await?;
        }
        for table in TABLES {
            sqlx::raw_sql(&format!("DROP TABLE IF EXISTS {s}.{}", quote_ident(table)))
                .execute(&mut *tx)
                .await?;
        }
        let mut left = Vec::new();
        let server = settings.get("loopback_server").cloned();
        if let Some(server) = &server {
            let drop = match (created("server_created"), created("mapping_created")) {
                (true, _) => Some(format!(
                    "DROP SERVER IF EXISTS {} CASCADE",
                    quote_ident(server)
                )),
                (false, true) => Some(format!(
                    "DROP USER MAPPING IF EXISTS FOR CURRENT_USER SERVER {}",
                    quote_ident(server)
                )),
                (false, false) => None,
            };
            if let Some(drop) = drop {
                self.drop_or_leave(&mut tx, &drop, &format!("server {server}"), &mut left)
                    .await?;
            }
        }
        if created("dblink_created") {
            self.drop_or_leave(
                &mut tx,
                "DROP EXTENSION IF EXISTS dblink",
                "extension dblink",
                &mut left,
            )
            .await?;
        }
        if created("schema_created") {
            self.drop_or_leave(
                &mut tx,
                &format!("DROP SCHEMA IF EXISTS {s}"),
                &format!("schema {}", self.schema),
                &mut left,
            )
            .await?;
        }
        tx.commit().await?;
        Ok(UninstallOutcome::Uninstalled { version, left })
    }

    /// Runs `drop` in a savepoint; when something else still depends on the object, keeps it
    /// and says so in `left`.
    async fn drop_or_leave(
        &self,
        tx: &mut PgConnection,
        drop: &str,
        what: &str,
        left: &mut Vec<String>,
    ) -> Result<(), OwnDbError> {
        let mut savepoint = sqlx::Connection::begin(&mut *tx).await?;
        match sqlx::raw_sql(drop).execute(&mut *savepoint).await {
            Ok(_) => savepoint.commit().await?,
            Err(sqlx::Error::Database(db)) => {
                savepoint.rollback().await?;
                left.push(format!("left {what}: {}", db.message()));
            }
            Err(other) => return Err(other.into()),
        }
        Ok(())
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

/// `--lease-schema`: any name PostgreSQL takes (it is quoted where used).
fn check_lease_schema(schema: &str) -> Result<&str, OwnDbError> {
    match !schema.is_empty() && schema.len() <= 63 && !schema.contains('\0') {
        true => Ok(schema),
        false => Err(OwnDbError::Invalid(format!(
            "--lease-schema {schema:?} is not a schema name"
        ))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn schema_names_are_plain() {
        for good in ["fencewatch", "fence_2", "_x"] {
            assert!(check_schema_name(good).is_ok(), "{good}");
        }
        for bad in [
            "",
            "Fence",
            "2x",
            "pg_fence",
            "a-b",
            "a\"b",
            &"x".repeat(49),
        ] {
            assert!(check_schema_name(bad).is_err(), "{bad}");
        }
        assert_eq!(loopback_server("fencewatch"), "fencewatch_loopback");
        assert_eq!(loopback_server("billing"), "billing_loopback");
    }
}
