//! Audit rows this daemon committed, handed to the live tail in process so that it need not
//! read them back from the database (a cost comparable to the write's own; see
//! docs/performance.md).
//!
//! The feed is a shortcut, never the source of truth: the tail publishes from it only the run
//! that continues its cursor without a gap. Group commit also says which ids its rolled-back
//! runs drew on PostgreSQL, so that the tail need not wait to prove them final. Any other id
//! the feed lacks (another daemon's row, a row recorded outside group commit, an id a failed
//! transaction drew, a row dropped because the feed was full) is read from the audit as
//! before, in order.

use crate::domain::AuditEntry;
use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, MutexGuard};
use tokio::sync::Notify;

/// Rows held for the tail at most; beyond it rows are dropped and read from the audit instead.
/// A few seconds of writes at the rates measured here, a few MiB.
pub const FEED_CAPACITY: usize = 8192;

/// Committed, durable audit rows waiting for the tail, by id; `None` for an id that no row
/// will ever have (drawn by a transaction that rolled back).
#[derive(Debug, Default)]
pub struct CommitFeed {
    rows: Mutex<BTreeMap<i64, Option<Arc<AuditEntry>>>>,
    wake: Notify,
}

/// What the tail took from the feed.
#[derive(Debug, Default)]
pub struct Taken {
    /// Rows that continue the cursor, in id order.
    pub rows: Vec<Arc<AuditEntry>>,
    /// The id up to which everything is now accounted for (published, or known never to
    /// exist); the cursor when nothing was taken.
    pub through: i64,
    /// Whether rows beyond a missing id are still held: the missing one is either on its way
    /// here or must be read from the audit.
    pub gap: bool,
}

impl CommitFeed {
    pub fn new() -> Self {
        Self::default()
    }

    /// Hands over rows that are committed and durable, and wakes the tail.
    pub fn push(&self, rows: impl IntoIterator<Item = AuditEntry>) {
        {
            let mut held = self.lock();
            for row in rows {
                if held.len() >= FEED_CAPACITY {
                    break;
                }
                held.insert(row.id, Some(Arc::new(row)));
            }
        }
        self.wake.notify_one();
    }

    /// Records ids that no row will ever have: their transaction rolled back.
    pub fn push_dead(&self, ids: impl IntoIterator<Item = i64>) {
        {
            let mut held = self.lock();
            for id in ids {
                if held.len() >= FEED_CAPACITY {
                    break;
                }
                held.insert(id, None);
            }
        }
        self.wake.notify_one();
    }

    /// Waits for a push or a nudge (one that came while nobody waited counts).
    pub async fn woken(&self) {
        self.wake.notified().await;
    }

    /// Takes the rows that follow `cursor` without a gap, and forgets those at or below it
    /// (published already, from the audit).
    pub fn take_after(&self, cursor: i64) -> Taken {
        let mut held = self.lock();
        let mut taken = Taken {
            through: cursor,
            ..Taken::default()
        };
        while let Some(entry) = held.first_entry() {
            let id = *entry.key();
            if id <= taken.through {
                entry.remove();
            } else if id == taken.through + 1 {
                taken.rows.extend(entry.remove());
                taken.through = id;
            } else {
                taken.gap = true;
                break;
            }
        }
        taken
    }

    /// Rows held now (for tests and the bound).
    pub fn len(&self) -> usize {
        self.lock().len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    fn lock(&self) -> MutexGuard<'_, BTreeMap<i64, Option<Arc<AuditEntry>>>> {
        // A panic while holding the lock leaves a consistent map: every change is one call.
        self.rows
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::Outcome;

    fn row(id: i64) -> AuditEntry {
        AuditEntry {
            id,
            at: chrono::DateTime::from_timestamp_micros(1_764_474_006_000_000 + id).unwrap(),
            resource: "r".into(),
            outcome: Outcome::Accepted,
            token: Some(1),
            highest_token: 1,
            revision: id,
            idempotency_key: None,
            expected_revision: None,
            owner: None,
            lease: None,
            body_sha256: None,
            body_len: None,
            detail: None,
            caller: None,
            source: None,
        }
    }

    fn ids(taken: &Taken) -> Vec<i64> {
        taken.rows.iter().map(|row| row.id).collect()
    }

    #[test]
    fn only_the_run_that_continues_the_cursor_is_taken() {
        let feed = CommitFeed::new();
        // Two batches answered out of order: the later one first.
        feed.push([row(14), row(15)]);
        let taken = feed.take_after(10);
        assert!(taken.rows.is_empty());
        assert!(taken.gap);

        feed.push([row(11), row(12), row(13)]);
        let taken = feed.take_after(10);
        assert_eq!(ids(&taken), [11, 12, 13, 14, 15]);
        assert!(!taken.gap);
        assert!(feed.is_empty());
    }

    #[test]
    fn rows_the_audit_already_gave_are_forgotten() {
        let feed = CommitFeed::new();
        feed.push([row(3), row(4), row(5), row(7)]);
        // The tail read up to 5 from the audit meanwhile; 6 is still missing.
        let taken = feed.take_after(5);
        assert!(taken.rows.is_empty());
        assert!(taken.gap);
        assert_eq!(feed.len(), 1);
        let taken = feed.take_after(6);
        assert_eq!(ids(&taken), [7]);
    }

    #[test]
    fn ids_that_died_with_their_transaction_are_passed_over() {
        let feed = CommitFeed::new();
        // A batch drew 11 and 12, found a resource changed and rolled back; its next run drew
        // 13 and 14.
        feed.push([row(13), row(14)]);
        assert!(feed.take_after(10).gap);
        feed.push_dead([11, 12]);
        let taken = feed.take_after(10);
        assert_eq!(ids(&taken), [13, 14]);
        assert_eq!(taken.through, 14);
        assert!(!taken.gap);
        // Nothing taken: the cursor stays.
        assert_eq!(feed.take_after(14).through, 14);
    }

    #[test]
    fn a_full_feed_drops_rows_instead_of_growing() {
        let feed = CommitFeed::new();
        feed.push((1..=FEED_CAPACITY as i64 + 100).map(row));
        assert_eq!(feed.len(), FEED_CAPACITY);
        // What was dropped leaves a gap at its end, which the audit fills.
        let taken = feed.take_after(0);
        assert_eq!(taken.rows.len(), FEED_CAPACITY);
        assert!(!taken.gap);
    }
}
