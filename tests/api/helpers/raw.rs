//! A test's own connection to a daemon's database, beside the store under test: to look at its
//! tables, or to change them behind its back. Native to the database's driver; a statement
//! both take is written once in `on_raw!`.

use super::TestDb;
use sqlx::postgres::{PgConnection, PgPool, PgPoolOptions};
use sqlx::sqlite::{SqliteConnectOptions, SqliteConnection, SqlitePool, SqlitePoolOptions};
use sqlx::Connection;
use std::str::FromStr;

/// One of a pair of native handles, by database.
#[derive(Clone)]
pub enum Raw<S, P> {
    Sqlite(S),
    Postgres(P),
}

pub type RawPool = Raw<SqlitePool, PgPool>;
pub type RawConn = Raw<SqliteConnection, PgConnection>;

/// Runs `$body` with `$handle` bound to the native handle inside `$target` (a `Raw`, or a
/// reference to one), compiled once for each database.
#[macro_export]
macro_rules! on_raw {
    ($target:expr, $handle:ident => $body:expr) => {
        match $target {
            $crate::helpers::Raw::Sqlite($handle) => $body,
            $crate::helpers::Raw::Postgres($handle) => $body,
        }
    };
}

impl RawPool {
    pub async fn close(&self) {
        on_raw!(self, pool => pool.close().await)
    }
}

impl TestDb {
    /// A pool of one connection of the test's own; a SQLite file is created if missing.
    pub async fn raw_pool(&self) -> RawPool {
        if self.url.starts_with("sqlite:") {
            let options = SqliteConnectOptions::from_str(&self.url)
                .expect("a SQLite URL")
                .create_if_missing(true);
            Raw::Sqlite(
                SqlitePoolOptions::new()
                    .max_connections(1)
                    .connect_with(options)
                    .await
                    .expect("open the SQLite file"),
            )
        } else {
            Raw::Postgres(
                PgPoolOptions::new()
                    .max_connections(1)
                    .connect(&self.url)
                    .await
                    .expect("connect to PostgreSQL"),
            )
        }
    }

    /// A connection of the test's own, outside any pool.
    pub async fn raw_conn(&self) -> RawConn {
        if self.url.starts_with("sqlite:") {
            Raw::Sqlite(
                SqliteConnection::connect(&self.url)
                    .await
                    .expect("open the SQLite file"),
            )
        } else {
            Raw::Postgres(
                PgConnection::connect(&self.url)
                    .await
                    .expect("connect to PostgreSQL"),
            )
        }
    }
}
