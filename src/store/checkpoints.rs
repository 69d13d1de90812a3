//! When the SQLite writer copies its WAL back into the database file.
//!
//! SQLite's own checkpoint runs inside the commit that pushes the WAL past a fixed number of
//! pages, so every writer of that batch waits for it; and its cost is not the WAL's size but
//! the distinct pages it copies and the database sync after them. On a large audit each batch
//! touches index leaves scattered across the file, so a checkpoint costs several times what it
//! does on a small one while the mark stays where it was. Here the writer checkpoints between
//! its transactions instead, as often as a share of its time allows: a checkpoint that took
//! long makes the next wait longer, so more of the pages it copies were written many times
//! over and are copied once. SQLite's own mark stays, far above, as a backstop
//! (`connect::SQLITE_WRITER_PRAGMAS`). Measured: docs/performance.md.

use sqlx::sqlite::SqliteConnection;
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// The share of the writer's time that checkpoints may take before they are spaced further.
const BUDGET: f64 = 0.02;
/// Transactions before the first checkpoint, and the fewest between any two.
const FEWEST: u64 = 256;
/// The most transactions between two checkpoints.
const MOST: u64 = 1 << 20;
/// The most WAL pages (about 200 MiB) a checkpoint should find: past it the wait is halved
/// whatever the checkpoint cost, so that the WAL stays well below SQLite's backstop, whose
/// checkpoint would run inside a commit.
pub(crate) const MOST_WAL_PAGES: u64 = 50_000;

/// How many transactions the writer commits between two checkpoints. Pure: the caller says
/// what happened and how long it took.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct CheckpointSchedule {
    every: u64,
    since: u64,
}

impl Default for CheckpointSchedule {
    fn default() -> Self {
        Self {
            every: FEWEST,
            since: 0,
        }
    }
}

impl CheckpointSchedule {
    /// A transaction ended; whether a checkpoint is due now.
    pub(crate) fn released(&mut self) -> bool {
        self.since += 1;
        self.since >= self.every
    }

    /// A checkpoint found `wal_pages` in the WAL and took `took`, `elapsed` after the one
    /// before it began. Over budget, the next comes after twice as many transactions (unless
    /// the WAL would then outgrow its bound); under half of it, or with the WAL past its bound,
    /// after half as many.
    pub(crate) fn checkpointed(&mut self, wal_pages: u64, took: Duration, elapsed: Duration) {
        self.since = 0;
        let share = took.as_secs_f64() / elapsed.as_secs_f64().max(f64::MIN_POSITIVE);
        if wal_pages > MOST_WAL_PAGES || share < BUDGET / 2.0 {
            self.every = (self.every / 2).max(FEWEST);
        } else if share > BUDGET && wal_pages * 2 <= MOST_WAL_PAGES {
            self.every = (self.every * 2).min(MOST);
        }
    }

    /// Transactions between checkpoints, as things stand.
    pub(crate) fn every(&self) -> u64 {
        self.every
    }
}

/// The writer connection's schedule, kept across its releases.
pub(crate) struct WriterCheckpoints {
    state: Mutex<Scheduled>,
}

struct Scheduled {
    schedule: CheckpointSchedule,
    last_began: Instant,
}

impl Default for WriterCheckpoints {
    fn default() -> Self {
        Self {
            state: Mutex::new(Scheduled {
                schedule: CheckpointSchedule::default(),
                last_began: Instant::now(),
            }),
        }
    }
}

impl WriterCheckpoints {
    /// Called as the writer goes back to its pool, outside any transaction: checkpoints when
    /// due. A failed checkpoint is not the released transaction's failure (its commit stands),
    /// and a checkpoint that is refused or cannot finish is retried at the next one due; the
    /// error is logged and the connection kept.
    pub(crate) async fn after_release(&self, conn: &mut SqliteConnection) {
        if !self.due() {
            return;
        }
        let began = Instant::now();
        let outcome = sqlx::query_as::<_, (i64, i64, i64)>("PRAGMA wal_checkpoint(PASSIVE)")
            .fetch_one(&mut *conn)
            .await;
        let took = began.elapsed();
        // A failed checkpoint counts as one that found the WAL full: the next comes sooner.
        let wal_pages = match &outcome {
            Ok((_, wal_pages, _)) => u64::try_from(*wal_pages).unwrap_or(0),
            Err(_) => MOST_WAL_PAGES + 1,
        };
        let next_after = {
            let mut state = self
                .state
                .lock()
                .unwrap_or_else(|poisoned| poisoned.into_inner());
            let elapsed = began.duration_since(state.last_began);
            state.schedule.checkpointed(wal_pages, took, elapsed);
            state.last_began = began;
            state.schedule.every()
        };
        match outcome {
            Ok((_, wal_pages, copied_pages)) => tracing::debug!(
                wal_pages,
                copied_pages,
                took_us = took.as_micros() as u64,
                next_after,
                "checkpointed the WAL"
            ),
            Err(error) => tracing::warn!(%error, "checkpointing the WAL failed; retrying later"),
        }
    }

    fn due(&self) -> bool {
        let mut state = self
            .state
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        state.schedule.released()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(n: u64) -> Duration {
        Duration::from_millis(n)
    }

    #[test]
    fn the_first_checkpoint_waits_for_the_fewest_transactions() {
        let mut schedule = CheckpointSchedule::default();
        let due: Vec<bool> = (0..FEWEST).map(|_| schedule.released()).collect();
        assert!(due[..due.len() - 1].iter().all(|d| !d));
        assert_eq!(due.last(), Some(&true));
    }

    #[test]
    fn a_checkpoint_over_budget_doubles_the_wait_up_to_the_most() {
        let mut schedule = CheckpointSchedule::default();
        schedule.checkpointed(1000, ms(50), ms(1000));
        assert_eq!(schedule.every(), FEWEST * 2);
        for _ in 0..64 {
            schedule.checkpointed(1000, ms(50), ms(1000));
        }
        assert_eq!(schedule.every(), MOST);
    }

    #[test]
    fn a_cheap_checkpoint_halves_the_wait_down_to_the_fewest() {
        let mut schedule = CheckpointSchedule::default();
        for _ in 0..4 {
            schedule.checkpointed(1000, ms(50), ms(1000));
        }
        assert_eq!(schedule.every(), FEWEST * 16);
        schedule.checkpointed(1000, ms(1), ms(1000));
        assert_eq!(schedule.every(), FEWEST * 8);
        for _ in 0..8 {
            schedule.checkpointed(0, Duration::ZERO, Duration::ZERO);
        }
        assert_eq!(schedule.every(), FEWEST);
    }

    #[test]
    fn within_budget_the_wait_holds_and_the_count_starts_over() {
        let mut schedule = CheckpointSchedule::default();
        schedule.checkpointed(1000, ms(50), ms(1000));
        for _ in 0..10 {
            schedule.released();
        }
        schedule.checkpointed(1000, ms(15), ms(1000));
        assert_eq!(schedule.every(), FEWEST * 2);
        let due = (0..FEWEST * 2 - 1).filter(|_| schedule.released()).count();
        assert_eq!(due, 0);
        assert!(schedule.released());
    }

    #[test]
    fn a_wal_near_its_bound_stops_the_wait_growing_and_past_it_shortens_it() {
        let mut schedule = CheckpointSchedule::default();
        for _ in 0..3 {
            schedule.checkpointed(1000, ms(50), ms(1000));
        }
        assert_eq!(schedule.every(), FEWEST * 8);
        schedule.checkpointed(MOST_WAL_PAGES / 2 + 1, ms(50), ms(1000));
        assert_eq!(
            schedule.every(),
            FEWEST * 8,
            "over budget, but doubling would outgrow"
        );
        schedule.checkpointed(MOST_WAL_PAGES + 1, ms(50), ms(1000));
        assert_eq!(
            schedule.every(),
            FEWEST * 4,
            "past the bound, whatever the cost"
        );
    }
}
