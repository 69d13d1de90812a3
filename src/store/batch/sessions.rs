//! The PostgreSQL connections group commit applies batches on, kept by the store between
//! batches rather than by a pool.
//!
//! sqlx's pool checks a connection with a round trip to the server when it hands it out and
//! again, always, when it comes back (a ping on release), so a batch of one cost three round
//! trips where its statement is one, and woke the server's backend and the daemon twice more
//! (docs/performance.md). Here a connection goes back as it is when its last use ended in an
//! answer from the server, success or error; one whose use failed otherwise, or whose batch was
//! abandoned mid-statement (its `Session` dropped), is closed, since what it sent or left unread
//! is unknown. One idle for longer than `CHECK_AFTER_IDLE` is checked before use, as the pool
//! would, so that the first batch after the server restarted finds it broken and opens
//! another instead of failing.

use crate::store::StoreError;
use sqlx::{Connection, PgConnection, PgPool};
use std::ops::{Deref, DerefMut};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};
use tokio::sync::{OwnedSemaphorePermit, Semaphore};

/// A connection idle for longer is pinged before a batch uses it. Under load connections are
/// idle for microseconds and never pinged; after a quiet second, one round trip more is cheap.
const CHECK_AFTER_IDLE: Duration = Duration::from_secs(1);

pub(crate) struct BatchSessions {
    /// Opens connections with the batch session's settings (its `after_connect`); each is
    /// detached from it at once, so the pool neither counts nor pings it.
    opener: PgPool,
    idle: Mutex<Vec<Idle>>,
    /// Sessions open at most, as the pool's limit was.
    open: Arc<Semaphore>,
}

struct Idle {
    conn: PgConnection,
    since: Instant,
}

impl BatchSessions {
    pub(crate) fn new(opener: PgPool) -> Self {
        let limit = opener.options().get_max_connections();
        Self {
            opener,
            idle: Mutex::new(Vec::new()),
            open: Arc::new(Semaphore::new(usize::try_from(limit).unwrap_or(1).max(1))),
        }
    }

    /// A connection for one batch: the most recently used idle one, or a new one.
    pub(crate) async fn take(self: &Arc<Self>) -> Result<Session, StoreError> {
        let permit = self
            .open
            .clone()
            .acquire_owned()
            .await
            .map_err(|_| StoreError::Unavailable(Arc::new(sqlx::Error::PoolClosed)))?;
        let conn = loop {
            // Popped before any wait: the lock is not held across one.
            let idle = self.lock().pop();
            match idle {
                Some(Idle { conn, since }) if since.elapsed() < CHECK_AFTER_IDLE => break conn,
                Some(Idle { mut conn, .. }) => {
                    if conn.ping().await.is_ok() {
                        break conn;
                    }
                    // Broken while idle (a restarted server): dropped, and the next one tried.
                }
                None => break self.opener.acquire().await?.detach(),
            }
        };
        Ok(Session {
            conn,
            home: self.clone(),
            permit,
        })
    }

    /// Closes the idle connections and stops opening new ones.
    pub(crate) async fn close(&self) {
        let idle = std::mem::take(&mut *self.lock());
        self.open.close();
        for Idle { conn, .. } in idle {
            // Closing tells the server goodbye; one that fails was gone anyway.
            let _ = conn.close().await;
        }
        self.opener.close().await;
    }

    fn lock(&self) -> MutexGuard<'_, Vec<Idle>> {
        // Each change is one push or pop, whole even if a panic intervened.
        self.idle
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

/// A connection held for one batch. Dropped without `finish`, it is closed.
pub(crate) struct Session {
    conn: PgConnection,
    home: Arc<BatchSessions>,
    /// Held until the connection is idle again or closed.
    permit: OwnedSemaphorePermit,
}

impl Session {
    /// Ends the batch's use of the connection: back to the idle ones if what it did ended in
    /// the server's answer (`outcome` is a success or the server's own error) outside any
    /// transaction, closed if not.
    pub(crate) fn finish<T>(self, outcome: &Result<T, StoreError>) {
        let Session { conn, home, permit } = self;
        if answered(outcome) && !conn.is_in_transaction() {
            home.lock().push(Idle {
                conn,
                since: Instant::now(),
            });
        }
        drop(permit);
    }
}

/// Whether the connection ended its last use at a message boundary with the server, fit for
/// the next: a success, or an error the server sent and then went on (not a shutdown or a
/// lost connection, which `StoreError::Unavailable` names).
fn answered<T>(outcome: &Result<T, StoreError>) -> bool {
    match outcome {
        Ok(_) => true,
        Err(StoreError::Internal(error)) => matches!(**error, sqlx::Error::Database(_)),
        // Given up after conflicts the server reported.
        Err(StoreError::Contention { .. }) => true,
        Err(_) => false,
    }
}

impl Deref for Session {
    type Target = PgConnection;

    fn deref(&self) -> &PgConnection {
        &self.conn
    }
}

impl DerefMut for Session {
    fn deref_mut(&mut self) -> &mut PgConnection {
        &mut self.conn
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_a_use_the_server_answered_keeps_its_connection() {
        assert!(answered(&Ok::<(), _>(())));
        assert!(answered::<()>(&Err(StoreError::Contention { attempts: 3 })));
        assert!(!answered::<()>(&Err(StoreError::Unavailable(Arc::new(
            sqlx::Error::PoolTimedOut
        )))));
        assert!(!answered::<()>(&Err(StoreError::TimedOut(
            Duration::from_secs(1)
        ))));
        // Not the server's error: a protocol failure leaves the stream unknown.
        let protocol = StoreError::Internal(Arc::new(sqlx::Error::Protocol("x".into())));
        assert!(!answered::<()>(&Err(protocol)));
    }
}
