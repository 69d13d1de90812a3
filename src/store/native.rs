//! The store's handles on its database in sqlx's native types: a SQLite pool, connection or
//! transaction, or a PostgreSQL one. A statement both databases share is written once and
//! compiled for each (`on_db!`), so each runs through its own driver with its own types; what
//! only one database does is a `match` on the variant, in the store, or its engine's
//! (`engine`), which owns the pools.

use super::StoreError;
use sqlx::postgres::{PgConnection, PgPool, PgRow, Postgres};
use sqlx::sqlite::{Sqlite, SqliteConnection, SqlitePool, SqliteRow};
use sqlx::{Decode, Row, Transaction, Type};

/// One of a pair of native handles, by database.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Native<S, P> {
    Sqlite(S),
    Postgres(P),
}

/// A pool of native connections, borrowed from the store's engine (`engine`), which owns it.
pub(crate) type Pool<'p> = Native<&'p SqlitePool, &'p PgPool>;
/// A connection borrowed for some statements.
pub(crate) type Conn<'c> = Native<&'c mut SqliteConnection, &'c mut PgConnection>;
/// A transaction on a connection from a pool.
pub(crate) type Tx<'c> = Native<Transaction<'c, Sqlite>, Transaction<'c, Postgres>>;

/// Runs `$body` with `$handle` bound to the native handle inside `$target` (a `Native`): the
/// body is compiled once for each database, so its statements bind and decode natively.
macro_rules! on_db {
    ($target:expr, $handle:ident => $body:expr) => {
        match $target {
            $crate::store::native::Native::Sqlite($handle) => $body,
            $crate::store::native::Native::Postgres($handle) => $body,
        }
    };
}
pub(crate) use on_db;

impl Pool<'_> {
    /// Begins a transaction on a connection of the pool.
    pub(crate) async fn begin(self) -> Result<Tx<'static>, sqlx::Error> {
        Ok(match self {
            Native::Sqlite(pool) => Native::Sqlite(pool.begin().await?),
            Native::Postgres(pool) => Native::Postgres(pool.begin().await?),
        })
    }

    /// Begins a transaction with `statement` instead of a plain `BEGIN`.
    pub(crate) async fn begin_with(
        self,
        statement: &'static str,
    ) -> Result<Tx<'static>, sqlx::Error> {
        Ok(match self {
            Native::Sqlite(pool) => Native::Sqlite(pool.begin_with(statement).await?),
            Native::Postgres(pool) => Native::Postgres(pool.begin_with(statement).await?),
        })
    }
}

impl<'c> Tx<'c> {
    /// The transaction's connection, for its statements.
    pub(crate) fn conn(&mut self) -> Conn<'_> {
        match self {
            Native::Sqlite(tx) => Native::Sqlite(&mut **tx),
            Native::Postgres(tx) => Native::Postgres(&mut **tx),
        }
    }

    pub(crate) async fn commit(self) -> Result<(), sqlx::Error> {
        on_db!(self, tx => tx.commit().await)
    }

    pub(crate) async fn rollback(self) -> Result<(), sqlx::Error> {
        on_db!(self, tx => tx.rollback().await)
    }
}

impl<'c> Conn<'c> {
    /// The same connection, borrowed again for a shorter while.
    pub(crate) fn reborrow(&mut self) -> Conn<'_> {
        match self {
            Native::Sqlite(conn) => Native::Sqlite(&mut **conn),
            Native::Postgres(conn) => Native::Postgres(&mut **conn),
        }
    }
}

/// A value both drivers decode from a column.
pub(crate) trait Column:
    for<'r> Decode<'r, Sqlite> + Type<Sqlite> + for<'r> Decode<'r, Postgres> + Type<Postgres>
{
}

impl<T> Column for T where
    T: for<'r> Decode<'r, Sqlite> + Type<Sqlite> + for<'r> Decode<'r, Postgres> + Type<Postgres>
{
}

/// A row of either database, read by column name: the one function that turns a row into a
/// domain value serves both.
pub(crate) trait NativeRow {
    fn try_get<T: Column>(&self, column: &str) -> Result<T, sqlx::Error>;
}

impl NativeRow for SqliteRow {
    fn try_get<T: Column>(&self, column: &str) -> Result<T, sqlx::Error> {
        Row::try_get(self, column)
    }
}

impl NativeRow for PgRow {
    fn try_get<T: Column>(&self, column: &str) -> Result<T, sqlx::Error> {
        Row::try_get(self, column)
    }
}

/// A function that reads a value from a row of either database, for a statement whose rows are
/// read by its caller's choice (`rows_with`).
pub(crate) struct RowReader<T> {
    pub(crate) sqlite: fn(&SqliteRow) -> Result<T, StoreError>,
    pub(crate) postgres: fn(&PgRow) -> Result<T, StoreError>,
}

/// The `RowReader` of a function generic over `NativeRow`.
macro_rules! row_reader {
    ($read:path) => {
        $crate::store::native::RowReader {
            sqlite: $read,
            postgres: $read,
        }
    };
}
pub(crate) use row_reader;

/// `RowReader::read` for the row type at hand, so that a statement written once in `on_db!`
/// reads its rows with the caller's function.
pub(crate) trait ReadsRow<R> {
    type Value;
    fn read(&self, row: &R) -> Result<Self::Value, StoreError>;
}

impl<T> ReadsRow<SqliteRow> for RowReader<T> {
    type Value = T;
    fn read(&self, row: &SqliteRow) -> Result<T, StoreError> {
        (self.sqlite)(row)
    }
}

impl<T> ReadsRow<PgRow> for RowReader<T> {
    type Value = T;
    fn read(&self, row: &PgRow) -> Result<T, StoreError> {
        (self.postgres)(row)
    }
}
