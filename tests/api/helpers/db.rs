//! A fresh database per test, on either backend.

use fencewatch::store::{Store, StoreOptions};
use sqlx::Connection;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Backend {
    Sqlite,
    Postgres,
}

/// A fresh database: a SQLite file in a temporary folder, or a PostgreSQL schema of its own.
pub struct TestDb {
    pub url: String,
    /// Holds the SQLite file; removed when the test ends.
    _dir: tempfile::TempDir,
    pg: Option<(String, String)>,
}

static SCHEMA_COUNTER: AtomicU32 = AtomicU32::new(0);

impl TestDb {
    /// A fresh database. PostgreSQL tests are compiled as ignored unless `FENCEWATCH_TEST_PG`
    /// was set when they were built (see `build.rs`), so one that runs and finds it unset has
    /// nothing to run against: it fails rather than pass having run nothing.
    pub async fn new(backend: Backend) -> TestDb {
        let dir = tempfile::tempdir().expect("create a temporary folder");
        match backend {
            Backend::Sqlite => {
                let url = format!("sqlite://{}", dir.path().join("fencewatch.db").display());
                TestDb {
                    url,
                    _dir: dir,
                    pg: None,
                }
            }
            Backend::Postgres => {
                let base = std::env::var("FENCEWATCH_TEST_PG").expect(
                    "FENCEWATCH_TEST_PG is not set: build and run the PostgreSQL tests with it",
                );
                let schema = format!(
                    "fwtest_{}_{}_{}",
                    std::process::id(),
                    SCHEMA_COUNTER.fetch_add(1, Ordering::Relaxed),
                    chrono::Utc::now().timestamp_micros() % 1_000_000
                );
                let mut conn = sqlx::PgConnection::connect(&base)
                    .await
                    .unwrap_or_else(|e| {
                        panic!("PostgreSQL at FENCEWATCH_TEST_PG is unreachable: {e}")
                    });
                sweep_leftover_schemas(&mut conn).await;
                sqlx::query(&format!("CREATE SCHEMA {schema}"))
                    .execute(&mut conn)
                    .await
                    .expect("create a schema");
                conn.close().await.ok();
                let separator = if base.contains('?') { '&' } else { '?' };
                let url = format!("{base}{separator}options=-c%20search_path%3D{schema}");
                TestDb {
                    url,
                    _dir: dir,
                    pg: Some((base, schema)),
                }
            }
        }
    }

    pub async fn store(&self) -> Store {
        Store::open(
            &self.url,
            &StoreOptions {
                max_connections: 8,
                ..StoreOptions::default()
            },
        )
        .await
        .expect("open the store")
    }
}

impl Drop for TestDb {
    fn drop(&mut self) {
        let Some((base, schema)) = self.pg.take() else {
            return;
        };
        // Never block here: the test's runtime may still owe a background task the progress it
        // needs to end a transaction in this schema. A detached thread drops the schema once
        // its locks are free; a schema it could not drop is swept by the next run.
        std::thread::spawn(move || drop_schemas(&base, &[schema]));
    }
}

/// Drops schemas, waiting at most a few seconds for locks each time.
fn drop_schemas(base: &str, schemas: &[String]) {
    let Ok(runtime) = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    else {
        return;
    };
    runtime.block_on(async {
        let Ok(mut conn) = sqlx::PgConnection::connect(base).await else {
            return;
        };
        let _ = sqlx::query("SET lock_timeout = '5s'")
            .execute(&mut conn)
            .await;
        for schema in schemas {
            for _ in 0..3 {
                let dropped = sqlx::query(&format!("DROP SCHEMA IF EXISTS {schema} CASCADE"))
                    .execute(&mut conn)
                    .await;
                if dropped.is_ok() {
                    break;
                }
                tokio::time::sleep(Duration::from_secs(1)).await;
            }
        }
        let _ = conn.close().await;
    });
}

/// Drops the schemas left by test processes that no longer run (once per process).
async fn sweep_leftover_schemas(conn: &mut sqlx::PgConnection) {
    static SWEPT: std::sync::Once = std::sync::Once::new();
    let mut first = false;
    SWEPT.call_once(|| first = true);
    if !first {
        return;
    }
    let names: Result<Vec<String>, _> = sqlx::query_scalar(
        "SELECT nspname::text FROM pg_namespace WHERE nspname LIKE 'fwtest\\_%'",
    )
    .fetch_all(&mut *conn)
    .await;
    let names = names.unwrap_or_default();
    let dead: Vec<String> = names
        .into_iter()
        .filter(|name| {
            let pid = name.split('_').nth(1).and_then(|p| p.parse::<u32>().ok());
            pid.is_some_and(|pid| {
                pid != std::process::id() && !std::path::Path::new(&format!("/proc/{pid}")).exists()
            })
        })
        .collect();
    let _ = sqlx::query("SET lock_timeout = '2s'")
        .execute(&mut *conn)
        .await;
    for schema in dead {
        let _ = sqlx::query(&format!("DROP SCHEMA IF EXISTS {schema} CASCADE"))
            .execute(&mut *conn)
            .await;
    }
    let _ = sqlx::query("SET lock_timeout = 0")
        .execute(&mut *conn)
        .await;
}

/// A fresh database of `backend` for this test.
#[macro_export]
macro_rules! test_db {
    ($backend:expr) => {
        $crate::helpers::TestDb::new($backend).await
    };
}
