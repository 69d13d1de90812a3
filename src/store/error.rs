use std::sync::Arc;

/// A failure of the database, classified by what the caller can do about it. Clones share the
/// driver's error: every writer of a failed batch is answered with the same failure.
#[derive(Debug, Clone, thiserror::Error)]
pub enum StoreError {
    /// The database cannot be reached or cannot take the write now (down, full, overloaded):
    /// worth retrying later.
    #[error("database unavailable: {0}")]
    Unavailable(#[source] Arc<sqlx::Error>),
    /// The queue in front of the write path has stopped taking writes (shutting down).
    #[error("database unavailable: the write queue has stopped")]
    QueueClosed,
    /// The task committing a write's batch died (a panic) before answering it.
    #[error(
        "database unavailable: the write's batch ended without an answer, so its outcome is \
         unknown until it is retried with the same Idempotency-Key"
    )]
    BatchLost,
    /// Concurrent writers kept winning the race for the same resource.
    #[error("gave up after {attempts} attempts lost to concurrent writers")]
    Contention { attempts: u32 },
    /// Anything else the database answered: a bug or a schema that does not match.
    #[error("database error: {0}")]
    Internal(#[source] Arc<sqlx::Error>),
    /// Something the store relies on did not hold: a stored row that is not what the schema
    /// promises, or a step of the write path that found what cannot be. A bug or a damaged
    /// database.
    #[error("inconsistent data: {0}")]
    Invariant(String),
    /// The database could not be opened as asked; the message says what and why.
    #[error("{0}")]
    Open(String),
    /// The database did not answer within the bound on a request's wait (`--db-timeout`): a
    /// stalled network or a frozen server, which TCP alone would report only after minutes.
    /// Whatever the request was doing may still take effect.
    #[error("the database did not answer within {0:?}")]
    TimedOut(std::time::Duration),
}

/// Waits for `operation` at most `limit`, then gives it up as `TimedOut`. Giving up drops it,
/// it does not undo it: whatever it had sent may still take effect.
pub async fn within<T>(
    limit: std::time::Duration,
    operation: impl std::future::Future<Output = Result<T, StoreError>>,
) -> Result<T, StoreError> {
    tokio::time::timeout(limit, operation)
        .await
        .unwrap_or(Err(StoreError::TimedOut(limit)))
}

impl From<sqlx::Error> for StoreError {
    fn from(error: sqlx::Error) -> Self {
        if is_unavailable(&error) {
            StoreError::Unavailable(Arc::new(error))
        } else {
            StoreError::Internal(Arc::new(error))
        }
    }
}

impl From<sqlx::migrate::MigrateError> for StoreError {
    fn from(error: sqlx::migrate::MigrateError) -> Self {
        StoreError::Open(format!("migration failed: {error}"))
    }
}

fn database_code(error: &sqlx::Error) -> Option<String> {
    match error {
        sqlx::Error::Database(db) => db.code().map(|code| code.into_owned()),
        _ => None,
    }
}

/// A transaction that lost to a concurrent one and can simply run again.
pub(crate) fn is_retryable(error: &sqlx::Error) -> bool {
    matches!(
        database_code(error).as_deref(),
        // SQLite: BUSY, LOCKED, BUSY_RECOVERY, BUSY_SNAPSHOT (a stale read snapshot that tried
        // to write), LOCKED_SHAREDCACHE.
        Some("5" | "6" | "261" | "517" | "262")
        // PostgreSQL: serialization_failure, deadlock_detected.
        | Some("40001" | "40P01")
    )
}

pub(crate) fn is_unavailable(error: &sqlx::Error) -> bool {
    match error {
        sqlx::Error::Io(_)
        | sqlx::Error::PoolTimedOut
        | sqlx::Error::PoolClosed
        | sqlx::Error::WorkerCrashed
        | sqlx::Error::Tls(_) => true,
        sqlx::Error::Database(_) => {
            let code = database_code(error).unwrap_or_default();
            // PostgreSQL: connection exceptions (08…), shutdowns (57P…), out of resources (53…),
            // a session ended inside a transaction left idle past `--db-timeout` (25P03).
            code.starts_with("08")
                || code.starts_with("57P")
                || code.starts_with("53")
                || code == "25P03"
                // SQLite: IOERR (10 and its extended codes end in 10 mod 256), FULL, CANTOPEN,
                // and BUSY/LOCKED that outlasted the busy timeout.
                || code
                    .parse::<i32>()
                    .map(|c| matches!(c & 0xff, 5 | 6 | 10 | 13 | 14))
                    .unwrap_or(false)
        }
        _ => false,
    }
}

/// A row that does not decode into what the schema promises.
pub(crate) fn corrupt(message: impl Into<String>) -> StoreError {
    StoreError::Invariant(message.into())
}

/// A stored time (microseconds since the epoch).
pub(crate) fn time_from_us(us: i64) -> Result<chrono::DateTime<chrono::Utc>, StoreError> {
    chrono::DateTime::from_timestamp_micros(us)
        .ok_or_else(|| corrupt(format!("time {us} is out of range")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_copy_for_another_writer_reads_as_the_original() {
        let original = StoreError::from(sqlx::Error::PoolTimedOut);
        let copy = original.clone();
        assert!(matches!(copy, StoreError::Unavailable(_)));
        assert_eq!(copy.to_string(), original.to_string());
        let original = StoreError::from(sqlx::Error::RowNotFound);
        assert!(matches!(original, StoreError::Internal(_)));
        assert_eq!(original.clone().to_string(), original.to_string());
    }
}
