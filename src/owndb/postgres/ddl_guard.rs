//! The event trigger that refuses DDL which would let a write past the fence (a trigger of a
//! protected table's own that fires after the fence's, an inheritance child): created by
//! install where its role may (a superuser), so that writes pay nothing for the check. Where it
//! cannot be, protect() gives each table a statement trigger that checks the same before every
//! statement instead.

use super::super::{DdlGuard, OwnDbError};
use super::PgFence;
use sqlx::PgConnection;

/// The event trigger's name (event triggers are the database's, not a schema's).
pub(super) fn event_trigger(schema: &str) -> String {
    format!("{schema}_ddl_guard")
}

impl PgFence {
    /// Creates the event trigger unless it is there; records that it did (for uninstall), or
    /// why it could not (for status). True when it was created now.
    pub(super) async fn set_up_ddl_guard(&self, tx: &mut PgConnection) -> Result<bool, OwnDbError> {
        let name = event_trigger(&self.schema);
        let exists: bool =
            sqlx::query_scalar("SELECT EXISTS (SELECT 1 FROM pg_event_trigger WHERE evtname = $1)")
                .bind(&name)
                .fetch_one(&mut *tx)
                .await?;
        if exists {
            return Ok(false);
        }
        let mut savepoint = sqlx::Connection::begin(&mut *tx).await?;
        let created = sqlx::raw_sql(&format!(
            "CREATE EVENT TRIGGER {} ON ddl_command_end \
               WHEN TAG IN ('CREATE TABLE', 'ALTER TABLE', 'CREATE TRIGGER', 'ALTER TRIGGER') \
               EXECUTE FUNCTION {}.ddl_guard()",
            super::quote_ident(&name),
            self.ident()
        ))
        .execute(&mut *savepoint)
        .await;
        match created {
            Ok(_) => {
                savepoint.commit().await?;
                self.set(tx, "ddl_guard_created", "true").await?;
                sqlx::query(&format!(
                    "DELETE FROM {}.settings WHERE name = 'ddl_guard_problem'",
                    self.ident()
                ))
                .execute(&mut *tx)
                .await?;
                Ok(true)
            }
            Err(sqlx::Error::Database(db)) => {
                savepoint.rollback().await?;
                self.set(tx, "ddl_guard_problem", db.message()).await?;
                Ok(false)
            }
            Err(other) => Err(other.into()),
        }
    }

    /// Whether DDL is guarded, for status.
    pub(super) async fn ddl_guard(
        &self,
        conn: &mut PgConnection,
        settings: &std::collections::HashMap<String, String>,
    ) -> Result<DdlGuard, OwnDbError> {
        let guarded: bool = sqlx::query_scalar(&format!("SELECT {}.ddl_guarded()", self.ident()))
            .fetch_one(&mut *conn)
            .await?;
        Ok(match guarded {
            true => DdlGuard::EventTrigger {
                name: event_trigger(&self.schema),
            },
            false => DdlGuard::StatementTriggers {
                reason: settings
                    .get("ddl_guard_problem")
                    .cloned()
                    .unwrap_or_else(|| "the event trigger is missing or disabled".into()),
            },
        })
    }
}
