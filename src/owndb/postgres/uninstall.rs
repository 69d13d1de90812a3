//! Uninstall: what install and protect created, and only that (settings say what install
//! created; a schema or an extension that was there before stays).

use super::super::{migrate, OwnDbError, UninstallOutcome};
use super::{quote_ident, PgFence};
use sqlx::PgConnection;

/// Functions the migrations create, by name: what uninstall drops (every overload of each).
const FUNCTIONS: &[&str] = &[
    "fence",
    "guard",
    "refuse_autonomously",
    "refuse",
    "settle",
    "drain",
    "decide",
    "row_hash",
    "autonomous_audit_problem",
    "prune_operations",
    "protect",
    "unprotect",
    "loopback_problem",
    "lease_table_problem",
    "settle_move",
    "column_text",
    "precheck",
    "reset",
    "protected_table_problems",
    "ddl_guard",
    "ddl_guarded",
    "database_identity",
    "require_identity",
    "refuse_in",
    "unprotect_dropped",
    "record_refusals",
    "lock_scope_now",
    "drain_scopes",
    "record_noted",
    "note_refusal",
    "refuse_unstated",
    "flush_refusals",
    "mark_token_named",
    "begin",
    "refused",
    "begin_maintenance",
    "record_maintenance",
    "drain_pending",
];

/// Tables the migrations and the runner create, dropped in this order.
const TABLES: &[&str] = &[
    "protected",
    "refusals_noted",
    "maintenance",
    "operations",
    "pending",
    "audit",
    "scopes",
    "settings",
    "migrations",
];

impl PgFence {
    pub(in crate::owndb) async fn uninstall(&self) -> Result<UninstallOutcome, OwnDbError> {
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
        if created("ddl_guard_created") {
            // First: it runs on the DDL below, and its function cannot go while it is there.
            sqlx::raw_sql(&format!(
                "DROP EVENT TRIGGER IF EXISTS {}",
                quote_ident(&super::ddl_guard::event_trigger(&self.schema))
            ))
            .execute(&mut *tx)
            .await?;
        }
        if version >= 3 {
            // Each table's triggers (its partitions' too) and trigger function, as unprotect
            // removes them.
            sqlx::query(&format!(
                "SELECT {s}.unprotect(p.table_name) FROM {s}.protected p \
                  WHERE EXISTS (SELECT 1 FROM pg_class c WHERE c.oid = p.table_name)"
            ))
            .execute(&mut *tx)
            .await?;
        }
        if version == 2 {
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
        }
        if version >= 2 {
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
}
