//! The loopback the guard's refusals are audited through: the dblink extension, a foreign
//! server to this very database and a user mapping for the fence's owner.

use super::super::OwnDbError;
use super::PgFence;
use sqlx::PgConnection;

/// The foreign server the autonomous appends connect through.
pub(super) fn loopback_server(schema: &str) -> String {
    match schema {
        super::super::DEFAULT_SCHEMA => "fencewatch_loopback".to_owned(),
        other => format!("{other}_loopback"),
    }
}

impl PgFence {
    /// The dblink extension (created in the fence's schema unless the database has it already,
    /// which is used only if no one but its owner, the fence's owner and superusers may execute
    /// its functions), a foreign server to this very database (host: the server's first Unix socket directory,
    /// its port and the database's name, all read from the server) and a user mapping for the
    /// installing role. Each is recorded as created, for uninstall. Any of it failing (not a
    /// superuser, dblink not shipped) leaves the rest of the install as it is, with the reason
    /// kept for `status`.
    pub(super) async fn set_up_loopback(&self, tx: &mut PgConnection) -> Result<(), OwnDbError> {
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
        // A dblink others may execute could carry their connections under the name the
        // loopback uses, in the very session a refusal is recorded from.
        let problem: Option<String> =
            sqlx::query_scalar(&format!("SELECT {}.loopback_problem($1)", self.ident()))
                .bind(&dblink_schema)
                .fetch_one(&mut *conn)
                .await?;
        if let Some(problem) = problem {
            return Err(OwnDbError::Invalid(problem));
        }
        let server = loopback_server(&self.schema);
        let server_exists: bool = sqlx::query_scalar(
            "SELECT EXISTS (SELECT 1 FROM pg_foreign_server WHERE srvname = $1)",
        )
        .bind(&server)
        .fetch_one(&mut *conn)
        .await?;
        // What the server must say: this server's first socket directory, its port and this
        // database (a restored or renamed copy still has the original's name in it).
        let (host, port, dbname): (String, String, String) = sqlx::query_as(
            "SELECT coalesce(nullif(trim(split_part(current_setting('unix_socket_directories'), \
                                                    ',', 1)), ''), 'localhost'), \
                    current_setting('port'), current_database()::text",
        )
        .fetch_one(&mut *conn)
        .await?;
        if !server_exists {
            let create: String = sqlx::query_scalar(
                "SELECT format('CREATE SERVER %I FOREIGN DATA WRAPPER dblink_fdw \
                                OPTIONS (host %L, port %L, dbname %L)', $1::text, $2::text, \
                               $3::text, $4::text)",
            )
            .bind(&server)
            .bind(&host)
            .bind(&port)
            .bind(&dbname)
            .fetch_one(&mut *conn)
            .await?;
            sqlx::raw_sql(&create).execute(&mut *conn).await?;
            self.set(conn, "server_created", "true").await?;
        } else if self
            .settings(conn)
            .await?
            .get("server_created")
            .map(String::as_str)
            == Some("true")
        {
            let reached: Option<String> = sqlx::query_scalar(
                "SELECT split_part(o, '=', 2) FROM pg_foreign_server s, unnest(s.srvoptions) o \
                  WHERE s.srvname = $1 AND split_part(o, '=', 1) = 'dbname'",
            )
            .bind(&server)
            .fetch_optional(&mut *conn)
            .await?;
            if reached.as_deref() != Some(dbname.as_str()) {
                tracing::warn!(
                    reached = reached.as_deref().unwrap_or("none"),
                    database = %dbname,
                    "repairing the loopback: it named another database (a restored or renamed copy)"
                );
            }
            let alter: String = sqlx::query_scalar(
                "SELECT format('ALTER SERVER %I OPTIONS (SET host %L, SET port %L, \
                                SET dbname %L)', $1::text, $2::text, $3::text, $4::text)",
            )
            .bind(&server)
            .bind(&host)
            .bind(&port)
            .bind(&dbname)
            .fetch_one(&mut *conn)
            .await?;
            sqlx::raw_sql(&alter).execute(&mut *conn).await?;
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
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_schema_has_its_own_server() {
        assert_eq!(loopback_server("fencewatch"), "fencewatch_loopback");
        assert_eq!(loopback_server("billing"), "billing_loopback");
    }
}
