//! Which rows of a watched fence's audit are final in id order. The ids come from a PostgreSQL
//! sequence, so a row can commit after one with a higher id; a reader that moved past a missing
//! id would never see that row. As in the daemon's own tail (`live/tail.rs`): a missing id is
//! waited on until a snapshot proves that every transaction that could own it has ended (the
//! fence locks the scope's row, taking a transaction id, before it draws an audit id), or until
//! a patience runs out; an id given up on that way is looked for again for a while (`Late`),
//! so that a long transaction of the user's delays its row rather than losing it.
//! SQLite's single writer assigns ids in commit order: there nothing waits.

use crate::owndb::AuditSnapshot;
use std::collections::BTreeMap;
use std::time::{Duration, Instant};

/// How long a missing id holds the rows after it back when it cannot be proven final (a long
/// transaction of the user's keeps the snapshot's xmin low).
pub const GAP_PATIENCE: Duration = Duration::from_secs(30);
/// How long an id read past is looked for again.
pub const LATE_PATIENCE: Duration = Duration::from_secs(600);
/// Ids looked for again at most; past it the oldest are given up.
const LATE_MAX: usize = 10_000;

struct Gap {
    /// The first missing id.
    id: i64,
    seen: Instant,
    /// `xmax` of the first snapshot taken after the gap was seen.
    xmax: Option<i64>,
}

/// The final-order judgement of one watcher.
#[derive(Default)]
pub struct FinalOrder {
    gap: Option<Gap>,
}

impl FinalOrder {
    /// How many of `ids` (read after `cursor`, in order, after `snapshot` was taken) are final.
    /// `None` for the snapshot: ids are in commit order (SQLite). Ids skipped over, unproven,
    /// are added to `late`.
    pub fn final_prefix(
        &mut self,
        cursor: i64,
        ids: &[i64],
        snapshot: Option<AuditSnapshot>,
        now: Instant,
        late: &mut Late,
    ) -> usize {
        let Some(snapshot) = snapshot else {
            self.gap = None;
            return ids.len();
        };
        if let Some(pending) = self.gap.as_mut() {
            // This snapshot is later than the read that first saw the gap.
            pending.xmax.get_or_insert(snapshot.xmax);
        }
        let mut expected = cursor + 1;
        for (taken, &id) in ids.iter().enumerate() {
            if id != expected {
                match &self.gap {
                    Some(pending) if pending.id == expected => {
                        let proven = pending.xmax.is_some_and(|xmax| snapshot.xmin >= xmax);
                        if !proven && now.duration_since(pending.seen) < GAP_PATIENCE {
                            return taken;
                        }
                        if !proven {
                            late.add(expected..id, now);
                        }
                        self.gap = None;
                    }
                    _ => {
                        self.gap = Some(Gap {
                            id: expected,
                            seen: now,
                            xmax: None,
                        });
                        return taken;
                    }
                }
            }
            expected = id + 1;
        }
        ids.len()
    }

    /// Forgets a gap (the position was moved by someone else).
    pub fn reset(&mut self) {
        self.gap = None;
    }
}

/// Ids read past without proof that they will never commit, with when that was.
#[derive(Default)]
pub struct Late {
    since: BTreeMap<i64, Instant>,
}

impl Late {
    fn add(&mut self, ids: std::ops::Range<i64>, now: Instant) {
        for id in ids.take(LATE_MAX) {
            self.since.insert(id, now);
        }
        while self.since.len() > LATE_MAX {
            self.since.pop_first();
        }
    }

    /// The ids to look for now, after forgetting those looked for long enough.
    pub fn due(&mut self, now: Instant) -> Vec<i64> {
        self.since
            .retain(|_, since| now.duration_since(*since) < LATE_PATIENCE);
        self.since.keys().copied().collect()
    }

    /// An id found.
    pub fn found(&mut self, id: i64) {
        self.since.remove(&id);
    }

    pub fn is_empty(&self) -> bool {
        self.since.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn snap(xmin: i64, xmax: i64) -> Option<AuditSnapshot> {
        Some(AuditSnapshot { xmin, xmax })
    }

    #[test]
    fn commit_order_takes_everything() {
        let mut order = FinalOrder::default();
        let mut late = Late::default();
        assert_eq!(
            order.final_prefix(0, &[1, 2, 5], None, Instant::now(), &mut late),
            3
        );
        assert!(late.is_empty());
    }

    #[test]
    fn a_gap_waits_until_a_later_snapshot_proves_it_final() {
        let start = Instant::now();
        let mut order = FinalOrder::default();
        let mut late = Late::default();
        // Id 3 is missing: rows before it are final, the rest waits.
        assert_eq!(
            order.final_prefix(0, &[1, 2, 4], snap(10, 12), start, &mut late),
            2
        );
        // The next snapshot's xmax (13) is what every owner of id 3 is below.
        assert_eq!(
            order.final_prefix(2, &[4], snap(11, 13), start, &mut late),
            0
        );
        // Transaction 12 still runs: not proven.
        assert_eq!(
            order.final_prefix(2, &[4], snap(12, 14), start, &mut late),
            0
        );
        // Id 3 committed meanwhile: it continues the cursor, no gap left.
        assert_eq!(
            order.final_prefix(2, &[3, 4], snap(12, 14), start, &mut late),
            2
        );
        // Another gap, proven once everything below 16 has ended: 7 never commits.
        assert_eq!(
            order.final_prefix(4, &[5, 8], snap(15, 16), start, &mut late),
            1
        );
        assert_eq!(
            order.final_prefix(5, &[8], snap(15, 16), start, &mut late),
            0
        );
        assert_eq!(
            order.final_prefix(5, &[8], snap(16, 17), start, &mut late),
            1
        );
        assert!(late.is_empty(), "proven gaps are not looked for again");
    }

    #[test]
    fn an_unproven_gap_is_read_past_after_the_patience_and_looked_for_again() {
        let start = Instant::now();
        let mut order = FinalOrder::default();
        let mut late = Late::default();
        assert_eq!(order.final_prefix(0, &[3], snap(5, 9), start, &mut late), 0);
        assert_eq!(order.final_prefix(0, &[3], snap(5, 9), start, &mut late), 0);
        let after = start + GAP_PATIENCE;
        assert_eq!(order.final_prefix(0, &[3], snap(5, 9), after, &mut late), 1);
        assert_eq!(late.due(after), [1, 2]);
        late.found(1);
        assert_eq!(late.due(after), [2]);
        assert!(late.due(after + LATE_PATIENCE).is_empty());
    }
}
