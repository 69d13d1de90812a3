//! The user's own database, as the fence tests need it: a fresh PostgreSQL database per test
//! (the fence lives in schemas of its own, so a schema per test would not keep tests apart) or
//! a SQLite file the test creates, and connections that talk to it as the user's code would.
//!
//! PostgreSQL as production has it: the database and its tables belong to an application role
//! of the test's own, without superuser; the fence is installed by the server's superuser (the
//! role `FENCEWATCH_TEST_PG` names), as a database administrator installs it.

use super::Backend;
use fencewatch::domain::fence_audit::FenceAuditRow;
use fencewatch::owndb::{InstallOptions, OpenOptions, OwnDb, ProtectSpec, ScopeSource};
use sqlx::{Connection, Executor, PgConnection, Row, SqliteConnection};
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

static DATABASE_COUNTER: AtomicU32 = AtomicU32::new(0);

/// A fresh database of the user's.
pub struct UserDb {
    pub backend: Backend,
    /// The installer's URL: the superuser of `FENCEWATCH_TEST_PG` on this database (SQLite: the
    /// file). What `fencewatch fence …` and the audit tools are given.
    pub url: String,
    /// The application role's URL (SQLite: the file): what the user's code connects with.
    pub app_url: String,
    /// PostgreSQL: the application role, which owns the database and its tables.
    pub app_role: Option<String>,
    /// Holds the SQLite file.
    _dir: tempfile::TempDir,
    /// PostgreSQL: the server's URL (another database on it) and this database's name.
    pg: Option<(String, String)>,
}

/// The URL of database `name` on the server `base` points at.
fn with_database(base: &str, name: &str) -> String {
    let (before_query, query) = match base.split_once('?') {
        Some((before, query)) => (before, format!("?{query}")),
        None => (base, String::new()),
    };
    let authority_end = before_query
        .find("://")
        .map(|scheme| scheme + 3)
        .and_then(|start| before_query[start..].find('/').map(|slash| start + slash))
        .unwrap_or(before_query.len());
    format!("{}/{name}{query}", &before_query[..authority_end])
}

/// `url` with its user replaced by `role` (no password: the test server trusts local roles).
pub fn with_user(url: &str, role: &str) -> String {
    let (scheme, rest) = url.split_once("://").expect("a URL with a scheme");
    let host = rest.split_once('@').map_or(rest, |(_, host)| host);
    format!("{scheme}://{role}@{host}")
}

impl UserDb {
    pub async fn new(backend: Backend) -> UserDb {
        let dir = tempfile::tempdir().expect("create a temporary folder");
        match backend {
            Backend::Sqlite => {
                let path = dir.path().join("users-own.db");
                // The user's file exists before the fence is installed: fencewatch never
                // creates it.
                let options = sqlx::sqlite::SqliteConnectOptions::new()
                    .filename(&path)
                    .create_if_missing(true);
                let conn = SqliteConnection::connect_with(&options).await.unwrap();
                conn.close().await.unwrap();
                let url = format!("sqlite://{}", path.display());
                UserDb {
                    backend,
                    app_url: url.clone(),
                    url,
                    app_role: None,
                    _dir: dir,
                    pg: None,
                }
            }
            Backend::Postgres => {
                let base = std::env::var("FENCEWATCH_TEST_PG").expect(
                    "FENCEWATCH_TEST_PG is not set: build and run the PostgreSQL tests with it",
                );
                let number = DATABASE_COUNTER.fetch_add(1, Ordering::Relaxed);
                let name = format!("fwown_{}_{number}", std::process::id());
                let role = format!("fwapp_{}_{number}", std::process::id());
                let mut conn = PgConnection::connect(&base).await.unwrap_or_else(|e| {
                    panic!("PostgreSQL at FENCEWATCH_TEST_PG is unreachable: {e}")
                });
                sweep_leftover_databases(&mut conn).await;
                for statement in [
                    format!("DROP DATABASE IF EXISTS {name} WITH (FORCE)"),
                    format!("DROP ROLE IF EXISTS {role}"),
                    format!("CREATE ROLE {role} LOGIN NOSUPERUSER NOCREATEROLE NOCREATEDB"),
                    format!("CREATE DATABASE {name} OWNER {role}"),
                ] {
                    conn.execute(statement.as_str()).await.unwrap();
                }
                conn.close().await.ok();
                let url = with_database(&base, &name);
                UserDb {
                    backend,
                    app_url: with_user(&url, &role),
                    url,
                    app_role: Some(role),
                    _dir: dir,
                    pg: Some((base, name)),
                }
            }
        }
    }

    /// The fence's handle on this database (default schema).
    pub async fn fence(&self) -> OwnDb {
        OwnDb::open(
            &self.url,
            &OpenOptions {
                max_connections: 4,
                ..OpenOptions::default()
            },
        )
        .await
        .expect("open the user's database")
    }

    /// A connection of the user's own code, as the application role.
    pub async fn connect(&self) -> UserConn {
        self.connect_to(&self.app_url).await
    }

    /// A connection of the installer's (PostgreSQL's superuser; SQLite: the same file).
    pub async fn connect_admin(&self) -> UserConn {
        self.connect_to(&self.url).await
    }

    async fn connect_to(&self, url: &str) -> UserConn {
        match self.backend {
            Backend::Postgres => UserConn::Pg(PgConnection::connect(url).await.unwrap()),
            Backend::Sqlite => {
                let options = url
                    .parse::<sqlx::sqlite::SqliteConnectOptions>()
                    .unwrap()
                    .create_if_missing(false)
                    .busy_timeout(Duration::from_secs(30));
                UserConn::Sqlite(SqliteConnection::connect_with(&options).await.unwrap())
            }
        }
    }

    /// Runs `sql` (one or more statements) on a connection of its own, as the application role.
    pub async fn run(&self, sql: &str) {
        let mut conn = self.connect().await;
        conn.run(sql).await.unwrap();
        conn.close().await;
    }

    /// Runs `sql` as the installer (PostgreSQL's superuser).
    pub async fn run_admin(&self, sql: &str) {
        let mut conn = self.connect_admin().await;
        conn.run(sql).await.unwrap();
        conn.close().await;
    }

    /// PostgreSQL: lets the application role call the guard and state its generation, as
    /// docs/own-database.md tells administrators to (USAGE on the schema, EXECUTE on fence(),
    /// begin() and refused()). SQLite has no privileges.
    pub async fn grant_guard(&self) {
        if let Some(role) = &self.app_role {
            self.run_admin(&format!(
                "GRANT USAGE ON SCHEMA fencewatch TO {role}; \
                 GRANT EXECUTE ON FUNCTION fencewatch.fence(text, bigint, text, text, text), \
                     fencewatch.begin(bigint, text, text, text), fencewatch.refused() \
                 TO {role}"
            ))
            .await;
        }
    }

    /// PostgreSQL: lets the application role read the fence's audit and scopes (an auditor's
    /// grant), for tests that look at them through the user's connection.
    pub async fn grant_audit_reads(&self) {
        if let Some(role) = &self.app_role {
            self.run_admin(&format!(
                "GRANT USAGE ON SCHEMA fencewatch TO {role}; \
                 GRANT SELECT ON ALL TABLES IN SCHEMA fencewatch TO {role}"
            ))
            .await;
        }
    }

    /// A fresh database holding the user's `orders` table (one row per order, its scope in
    /// `region`), the fence installed and `orders` protected with its op and owner columns.
    pub async fn with_protected_orders(backend: Backend) -> (UserDb, OwnDb) {
        let db = UserDb::new(backend).await;
        db.run(ORDERS).await;
        let fence = db.fence().await;
        fence.install(&InstallOptions::default()).await.unwrap();
        fence
            .protect(&ProtectSpec {
                table: "orders".into(),
                token_column: "tok".into(),
                scope: ScopeSource::Column("region".into()),
                op_column: Some("op".into()),
                owner_column: Some("who".into()),
                lease: None,
                generation: None,
            })
            .await
            .unwrap();
        db.grant_guard().await;
        (db, fence)
    }

    /// The `fencewatch.audit` or `fencewatch_audit` table.
    pub fn audit_table(&self) -> &'static str {
        match self.backend {
            Backend::Postgres => "fencewatch.audit",
            Backend::Sqlite => "fencewatch_audit",
        }
    }

    /// The `scopes` table of the fence.
    pub fn scopes_table(&self) -> &'static str {
        match self.backend {
            Backend::Postgres => "fencewatch.scopes",
            Backend::Sqlite => "fencewatch_scopes",
        }
    }

    /// The `operations` table of the fence.
    pub fn operations_table(&self) -> &'static str {
        match self.backend {
            Backend::Postgres => "fencewatch.operations",
            Backend::Sqlite => "fencewatch_operations",
        }
    }
}

impl Drop for UserDb {
    fn drop(&mut self) {
        let Some((base, name)) = self.pg.take() else {
            return;
        };
        let role = self.app_role.take();
        // Off the test's runtime, which may be shutting down; a database left behind is swept
        // by the next run.
        let _ = std::thread::spawn(move || {
            let Ok(runtime) = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
            else {
                return;
            };
            runtime.block_on(async {
                if let Ok(mut conn) = PgConnection::connect(&base).await {
                    let _ = conn
                        .execute(format!("DROP DATABASE IF EXISTS {name} WITH (FORCE)").as_str())
                        .await;
                    if let Some(role) = role {
                        let _ = conn
                            .execute(format!("DROP ROLE IF EXISTS {role}").as_str())
                            .await;
                    }
                    let _ = conn.close().await;
                }
            });
        })
        .join();
    }
}

/// The user's table the tests protect.
pub const ORDERS: &str = "CREATE TABLE orders (id integer PRIMARY KEY, tok bigint, \
     region text NOT NULL, val text, op text, who text)";

/// The audit rows of `scope`, in id order.
pub async fn audit_of_scope(fence: &OwnDb, scope: &str) -> Vec<FenceAuditRow> {
    let rows = fence.audit_rows().await.unwrap();
    rows.into_iter()
        .filter(|row| row.resource == scope)
        .collect()
}

/// Drops the databases of test processes that no longer run (once per process).
async fn sweep_leftover_databases(conn: &mut PgConnection) {
    static SWEPT: std::sync::Once = std::sync::Once::new();
    let mut first = false;
    SWEPT.call_once(|| first = true);
    if !first {
        return;
    }
    let names: Vec<String> =
        sqlx::query_scalar("SELECT datname::text FROM pg_database WHERE datname LIKE 'fwown\\_%'")
            .fetch_all(&mut *conn)
            .await
            .unwrap_or_default();
    let roles: Vec<String> =
        sqlx::query_scalar("SELECT rolname::text FROM pg_roles WHERE rolname LIKE 'fwapp\\_%'")
            .fetch_all(&mut *conn)
            .await
            .unwrap_or_default();
    let dead = |name: &str| {
        let pid = name.split('_').nth(1).and_then(|p| p.parse::<u32>().ok());
        pid.is_some_and(|pid| {
            pid != std::process::id() && !std::path::Path::new(&format!("/proc/{pid}")).exists()
        })
    };
    for name in names.iter().filter(|name| dead(name)) {
        let _ = conn
            .execute(format!("DROP DATABASE IF EXISTS {name} WITH (FORCE)").as_str())
            .await;
    }
    for role in roles.iter().filter(|role| dead(role)) {
        let _ = conn
            .execute(format!("DROP ROLE IF EXISTS {role}").as_str())
            .await;
    }
}

/// What a guard call answered.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Guard {
    Accepted,
    Replayed,
    /// `code` is the SQLSTATE on PostgreSQL (checked to start the message too) and the
    /// message's prefix on SQLite.
    Refused {
        code: String,
        message: String,
    },
}

/// A connection of the user's code to its own database.
pub enum UserConn {
    Pg(PgConnection),
    Sqlite(SqliteConnection),
}

impl UserConn {
    /// Runs one or more statements; the rows the last one affected.
    pub async fn run(&mut self, sql: &str) -> Result<u64, sqlx::Error> {
        Ok(match self {
            UserConn::Pg(conn) => conn.execute(sqlx::raw_sql(sql)).await?.rows_affected(),
            UserConn::Sqlite(conn) => conn.execute(sqlx::raw_sql(sql)).await?.rows_affected(),
        })
    }

    /// One integer (or NULL) from a query.
    pub async fn int(&mut self, sql: &str) -> Option<i64> {
        match self {
            UserConn::Pg(conn) => sqlx::query(sql)
                .fetch_one(conn)
                .await
                .unwrap()
                .try_get::<Option<i64>, _>(0)
                .unwrap(),
            UserConn::Sqlite(conn) => sqlx::query(sql)
                .fetch_one(conn)
                .await
                .unwrap()
                .try_get::<Option<i64>, _>(0)
                .unwrap(),
        }
    }

    /// One text (or NULL) from a query.
    pub async fn text(&mut self, sql: &str) -> Option<String> {
        match self {
            UserConn::Pg(conn) => sqlx::query(sql)
                .fetch_one(conn)
                .await
                .unwrap()
                .try_get::<Option<String>, _>(0)
                .unwrap(),
            UserConn::Sqlite(conn) => sqlx::query(sql)
                .fetch_one(conn)
                .await
                .unwrap()
                .try_get::<Option<String>, _>(0)
                .unwrap(),
        }
    }

    /// The guard call as the contract spells it on each backend: `SELECT fencewatch.fence(…)`
    /// or `INSERT INTO fencewatch_guard (scope, token, op_id, owner)`.
    pub async fn guard(
        &mut self,
        scope: &str,
        token: Option<i64>,
        op_id: Option<&str>,
        owner: Option<&str>,
        lease: Option<&str>,
    ) -> Guard {
        let answer = match self {
            UserConn::Pg(conn) => sqlx::query_scalar::<_, String>(
                "SELECT fencewatch.fence($1, $2, $3, $4, lease => $5)",
            )
            .bind(scope)
            .bind(token)
            .bind(op_id)
            .bind(owner)
            .bind(lease)
            .fetch_one(conn)
            .await
            .map(|outcome| match outcome.as_str() {
                "accepted" => Guard::Accepted,
                "replayed" => Guard::Replayed,
                other => panic!("fence() returned {other:?}"),
            }),
            UserConn::Sqlite(conn) => {
                assert!(lease.is_none(), "SQLite's guard takes no lease");
                sqlx::query(
                    "INSERT INTO fencewatch_guard (scope, token, op_id, owner) VALUES ($1, $2, $3, $4)",
                )
                .bind(scope)
                .bind(token)
                .bind(op_id)
                .bind(owner)
                .execute(conn)
                .await
                .map(|done| match done.rows_affected() {
                    1 => Guard::Accepted,
                    0 => Guard::Replayed,
                    n => panic!("the guard's INSERT affected {n} rows"),
                })
            }
        };
        match answer {
            Ok(guard) => guard,
            Err(sqlx::Error::Database(db)) => {
                let message = db.message().to_owned();
                let code = match self {
                    UserConn::Pg(_) => {
                        let code = db.code().map(|c| c.into_owned()).unwrap_or_default();
                        assert!(
                            message.starts_with(&format!("{code}: ")),
                            "the message starts with the SQLSTATE: {message}"
                        );
                        code
                    }
                    UserConn::Sqlite(_) => message.chars().take(5).collect(),
                };
                Guard::Refused { code, message }
            }
            Err(other) => panic!("the guard call failed: {other}"),
        }
    }

    pub async fn close(self) {
        match self {
            UserConn::Pg(conn) => conn.close().await.ok(),
            UserConn::Sqlite(conn) => conn.close().await.ok(),
        };
    }
}
