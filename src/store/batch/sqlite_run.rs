//! A batch's run on SQLite: on the one writer connection, its first observation beginning the
//! transaction and its last application committing it.

use super::dialect::{Closing, Opening};
use super::sqlite::Sqlite;
use super::{plan, Attempt, Decider, Segment, Wait};
use crate::domain::{FencedWrite, LeasePolicy};
use crate::store::engine::SqliteEngine;
use crate::store::wal_sync::CommitTicket;
use crate::store::StoreError;
use sqlx::{Executor, SqliteConnection};
use std::sync::atomic::Ordering;

impl SqliteEngine {
    /// SQLite: the batch's first observation begins the transaction and its last application
    /// commits it (`sqlite`), so the writer connection makes two round trips per batch. A stale
    /// snapshot cannot write (`SQLITE_BUSY_SNAPSHOT`): the error ends this run, and `retrying`
    /// runs the batch again.
    pub(super) async fn try_apply_batch(
        &self,
        decider: &Decider<'_>,
        writes: &[FencedWrite],
        policy: LeasePolicy,
        wait: Wait,
    ) -> Result<Attempt, StoreError> {
        let mut conn = self.writer.acquire().await?;
        let conn = &mut *conn;
        // Synced after the commit only where the caller waits for the commit alone.
        let unsynced = match wait {
            Wait::Committed => self.wal.as_ref(),
            Wait::Durable => None,
        };
        let segments = plan::segments(writes);
        let Some(last) = segments.len().checked_sub(1) else {
            return Ok(Attempt {
                results: Vec::new(),
                durability: None,
                dead_ids: Vec::new(),
            });
        };
        let mut results = Vec::with_capacity(writes.len());
        let mut ticket = None;
        for (index, segment) in segments.into_iter().enumerate() {
            let opening = match index {
                0 => Opening::Begin {
                    unsynced: unsynced.is_some(),
                },
                _ => Opening::Within,
            };
            let closing = match index == last {
                true => Closing::Commit { unsynced },
                false => Closing::Within,
            };
            let applied = decider
                .apply_segment(&Sqlite, conn, segment, policy, opening, closing)
                .await;
            match applied {
                Ok(Segment::Applied {
                    results: mut applied,
                    ticket: committed,
                }) => {
                    results.append(&mut applied);
                    ticket = committed;
                }
                Ok(Segment::Changed { .. }) => {
                    roll_back(conn).await;
                    return Err(crate::store::error::corrupt(
                        "a SQLite batch found a resource changed",
                    ));
                }
                Err(error) => {
                    roll_back(conn).await;
                    return Err(error);
                }
            }
        }
        // Committed and back to FULL by the last statement: no check needed on release.
        self.writer_clean.store(true, Ordering::SeqCst);
        Ok(Attempt {
            results,
            durability: ticket.as_ref().map(CommitTicket::durability),
            dead_ids: Vec::new(),
        })
    }
}

/// Ends a SQLite batch that failed with its transaction perhaps still open. Best effort: should
/// this fail too, the writer's check on release closes the connection.
async fn roll_back(conn: &mut SqliteConnection) {
    if let Err(error) = conn.execute("ROLLBACK").await {
        tracing::debug!(%error, "rolling back a failed batch");
    }
}
