//! What every transaction of the store shares: restarting one that lost a race, and the clock.

use super::error::is_retryable;
use super::native::{Conn, Native, Pool, Tx};
use super::StoreError;
use crate::domain::clock::Clock;
use sqlx::postgres::{PgConnection, Postgres};
use sqlx::Transaction;
use std::future::Future;
use std::time::Duration;

/// Transactions restarted after losing to a concurrent one before giving up.
const MAX_RUNS: u32 = 50;

/// Runs a transaction until it does not lose to a concurrent one (SQLite's busy snapshot,
/// PostgreSQL's serialization failure or deadlock), with a short growing pause between runs.
pub(crate) async fn retrying<T, F, Fut>(mut run: F) -> Result<T, StoreError>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<T, StoreError>>,
{
    let mut runs = 0;
    loop {
        runs += 1;
        match run().await {
            Err(error) if error.is_retryable() && runs < MAX_RUNS => {
                tokio::time::sleep(Duration::from_millis(u64::from(runs.min(20)))).await;
            }
            other => return other,
        }
    }
}

impl StoreError {
    fn is_retryable(&self) -> bool {
        match self {
            StoreError::Internal(error) | StoreError::Unavailable(error) => is_retryable(error),
            _ => false,
        }
    }
}

/// Begins a transaction that will insert audit rows. On PostgreSQL it takes its transaction id
/// first, before any audit id: then a gap in audit ids seen by the live tail belongs to a
/// transaction older than that snapshot's xmax, and is final once the snapshot xmin passes it
/// (see `Store::audit_horizon`).
pub(crate) async fn begin_audited(pool: Pool<'_>) -> Result<Tx<'static>, sqlx::Error> {
    match pool {
        // One round trip for both: the BEGIN is sent as a simple query, which may hold several
        // statements.
        Native::Postgres(_) => pool.begin_with("BEGIN; SELECT pg_current_xact_id()").await,
        Native::Sqlite(_) => pool.begin().await,
    }
}

/// `begin_audited` on a connection the caller holds (PostgreSQL's batch sessions).
pub(crate) async fn begin_audited_on(
    conn: &mut PgConnection,
) -> Result<Transaction<'_, Postgres>, sqlx::Error> {
    sqlx::Connection::begin_with(conn, "BEGIN; SELECT pg_current_xact_id()").await
}

/// The authority's clock in microseconds since the epoch: the database's on PostgreSQL, so that
/// daemons sharing it agree on expiry; this process's on SQLite, which has one daemon.
pub(crate) async fn clock_us(conn: Conn<'_>, clock: &dyn Clock) -> Result<i64, sqlx::Error> {
    match conn {
        Native::Postgres(conn) => {
            sqlx::query_scalar("SELECT (EXTRACT(EPOCH FROM clock_timestamp()) * 1000000)::BIGINT")
                .fetch_one(conn)
                .await
        }
        Native::Sqlite(_) => Ok(clock.now_us()),
    }
}
