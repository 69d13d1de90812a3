/// A failure of the database, classified by what the caller can do about it.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// The database cannot be reached or cannot take the write now (down, full, overloaded):
    /// worth retrying later.
    #[error("database unavailable: {0}")]
    Unavailable(#[source] sqlx::Error),
    /// Concurrent writers kept winning the race for the same resource.
    #[error("gave up after {attempts} attempts lost to concurrent writers")]
    Contention { attempts: u32 },
    /// Anything else: a bug or a schema that does not match.
    #[error("database error: {0}")]
    Internal(#[source] sqlx::Error),
    /// The database could not be opened as asked; the message says what and why.
    #[error("{0}")]
    Open(String),
    /// A visitor of the caller's (an export's writer, say) failed; the message says how.
    #[error("{0}")]
    Visitor(String),
    /// The database did not answer within the bound on a request's wait (`--db-timeout`): a
    /// stalled network or a frozen server, which TCP alone would report only after minutes.
    /// Whatever the request was doing may still take effect.
    #[error("the database did not answer within {0:?}")]
    TimedOut(std::time::Duration),
}

impl StoreError {
    /// The same failure, for another of the writers of a batch it failed (a `sqlx::Error`
    /// cannot be cloned, so the copy keeps its class and message; `InvalidArgument` is the one
    /// variant that displays its message and nothing else).
    pub fn for_each_writer(&self) -> StoreError {
        match self {
            StoreError::Unavailable(error) => {
                StoreError::Unavailable(sqlx::Error::InvalidArgument(error.to_string()))
            }
            StoreError::Contention { attempts } => StoreError::Contention {
                attempts: *attempts,
            },
            StoreError::Internal(error) => {
                StoreError::Internal(sqlx::Error::InvalidArgument(error.to_string()))
            }
            StoreError::Open(message) => StoreError::Open(message.clone()),
            StoreError::Visitor(message) => StoreError::Visitor(message.clone()),
            StoreError::TimedOut(limit) => StoreError::TimedOut(*limit),
        }
    }
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
            StoreError::Unavailable(error)
        } else {
            StoreError::Internal(error)
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
pub(crate) fn corrupt(message: String) -> StoreError {
    StoreError::Internal(sqlx::Error::Decode(message.into()))
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
        let original = StoreError::Unavailable(sqlx::Error::PoolTimedOut);
        let copy = original.for_each_writer();
        assert!(matches!(copy, StoreError::Unavailable(_)));
        assert_eq!(copy.to_string(), original.to_string());
        let original = StoreError::Internal(sqlx::Error::RowNotFound);
        assert_eq!(original.for_each_writer().to_string(), original.to_string());
    }
}
