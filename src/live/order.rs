//! Which rows of an audit, read in id order, are final: shared by the daemon's live tail and
//! the watcher of a user's fence audit.
//!
//! On PostgreSQL ids come from a sequence, so a row can commit after one with a higher id; a
//! reader that moved past a missing id would never see that row. A missing id is waited on until
//! a snapshot proves that every transaction that could own it has ended (writers take their
//! transaction id before their audit id, so the owner is older than the first snapshot taken
//! after the id was seen missing; once that snapshot's xmax is below a later xmin, the owner
//! has ended), or until a patience runs out, for when a long transaction holds every snapshot's
//! xmin back. Each missing id keeps the clock and snapshot of the read that first showed it
//! missing: gaps held open by one long transaction wait out one patience together, not one
//! each in turn. SQLite's single writer assigns ids in commit order: there nothing waits.

use crate::domain::Xids;
use std::collections::BTreeMap;
use std::ops::Range;
use std::time::{Duration, Instant};

/// How long a missing id holds the rows after it back when it cannot be proven final.
pub const GAP_PATIENCE: Duration = Duration::from_secs(30);

/// A run of missing ids, as a read first showed it.
struct Missing {
    /// The last missing id of the run.
    last: i64,
    seen: Instant,
    /// `xmax` of the first snapshot taken after the run was seen.
    xmax: Option<i64>,
}

/// What a read may publish.
#[derive(Debug, PartialEq, Eq)]
pub struct Final {
    /// How many of the ids read, from the first, are final.
    pub taken: usize,
    /// Missing ids read past unproven, after the patience.
    pub skipped: Vec<Range<i64>>,
}

/// The final-order judgement of one reader.
#[derive(Default)]
pub struct FinalOrder {
    /// Runs of missing ids by their first id.
    missing: BTreeMap<i64, Missing>,
}

impl FinalOrder {
    /// How many of `ids` (read after `cursor`, in order, after `snapshot` was taken) are final.
    /// `None` for the snapshot: ids are in commit order (SQLite).
    pub fn final_prefix(
        &mut self,
        cursor: i64,
        ids: &[i64],
        snapshot: Option<Xids>,
        now: Instant,
    ) -> Final {
        let Some(snapshot) = snapshot else {
            self.missing.clear();
            return Final {
                taken: ids.len(),
                skipped: Vec::new(),
            };
        };
        self.missing.retain(|_, run| run.last > cursor);
        for run in self.missing.values_mut() {
            // This snapshot is later than the read that first showed the run.
            run.xmax.get_or_insert(snapshot.xmax);
        }
        let mut expected = cursor + 1;
        for &id in ids {
            if id > expected && self.run_of(expected).is_none() {
                self.missing.insert(
                    expected,
                    Missing {
                        last: id - 1,
                        seen: now,
                        xmax: None,
                    },
                );
            }
            expected = id + 1;
        }
        let mut skipped = Vec::new();
        let mut expected = cursor + 1;
        for (taken, &id) in ids.iter().enumerate() {
            if id != expected {
                if let Some(run) = self.run_of(expected) {
                    let proven = run.xmax.is_some_and(|xmax| snapshot.xmin >= xmax);
                    if !proven && now.duration_since(run.seen) < GAP_PATIENCE {
                        return Final { taken, skipped };
                    }
                    if !proven {
                        skipped.push(expected..id);
                    }
                }
            }
            expected = id + 1;
        }
        Final {
            taken: ids.len(),
            skipped,
        }
    }

    /// Whether `id` is missing and waited on.
    pub fn waits_on(&self, id: i64) -> bool {
        self.run_of(id).is_some()
    }

    /// Forgets every gap (the position was moved by someone else).
    pub fn reset(&mut self) {
        self.missing.clear();
    }

    fn run_of(&self, id: i64) -> Option<&Missing> {
        self.missing
            .range(..=id)
            .next_back()
            .map(|(_, run)| run)
            .filter(|run| run.last >= id)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn snap(xmin: i64, xmax: i64) -> Option<Xids> {
        Some(Xids { xmin, xmax })
    }

    fn taken(
        order: &mut FinalOrder,
        cursor: i64,
        ids: &[i64],
        xids: Option<Xids>,
        now: Instant,
    ) -> usize {
        order.final_prefix(cursor, ids, xids, now).taken
    }

    #[test]
    fn commit_order_takes_everything() {
        let mut order = FinalOrder::default();
        let got = order.final_prefix(0, &[1, 2, 5], None, Instant::now());
        assert_eq!(
            got,
            Final {
                taken: 3,
                skipped: vec![]
            }
        );
    }

    #[test]
    fn a_gap_waits_until_a_later_snapshot_proves_it_final() {
        let start = Instant::now();
        let mut order = FinalOrder::default();
        // Id 3 is missing: rows before it are final, the rest waits.
        assert_eq!(taken(&mut order, 0, &[1, 2, 4], snap(10, 12), start), 2);
        assert!(order.waits_on(3));
        // The next snapshot's xmax (13) is what every owner of id 3 is below.
        assert_eq!(taken(&mut order, 2, &[4], snap(11, 13), start), 0);
        // Transaction 12 still runs: not proven.
        assert_eq!(taken(&mut order, 2, &[4], snap(12, 14), start), 0);
        // Id 3 committed meanwhile: it continues the cursor, no gap left.
        assert_eq!(taken(&mut order, 2, &[3, 4], snap(12, 14), start), 2);
        // Another gap, proven once everything below 16 has ended: 7 never commits.
        assert_eq!(taken(&mut order, 4, &[5, 8], snap(15, 16), start), 1);
        assert_eq!(taken(&mut order, 5, &[8], snap(15, 16), start), 0);
        let proven = order.final_prefix(5, &[8], snap(16, 17), start);
        assert_eq!(
            proven,
            Final {
                taken: 1,
                skipped: vec![]
            },
            "a proven gap is not reported skipped"
        );
    }

    #[test]
    fn an_unproven_gap_is_read_past_after_the_patience() {
        let start = Instant::now();
        let mut order = FinalOrder::default();
        assert_eq!(taken(&mut order, 0, &[3], snap(5, 9), start), 0);
        assert_eq!(taken(&mut order, 0, &[3], snap(5, 9), start), 0);
        let after = start + GAP_PATIENCE;
        let got = order.final_prefix(0, &[3], snap(5, 9), after);
        assert_eq!(got.taken, 1);
        assert_eq!(got.skipped, std::iter::once(1..3).collect::<Vec<_>>());
    }

    #[test]
    fn gaps_seen_by_one_read_wait_out_one_patience_together() {
        let start = Instant::now();
        let mut order = FinalOrder::default();
        // Ids 2, 4 and 6 are missing, held open by a transaction that never ends (xmin 5).
        let ids = [1, 3, 5, 7];
        assert_eq!(taken(&mut order, 0, &ids, snap(5, 9), start), 1);
        let halfway = start + GAP_PATIENCE / 2;
        assert_eq!(taken(&mut order, 1, &ids[1..], snap(5, 9), halfway), 0);
        // A gap first seen halfway (id 8) keeps its own clock.
        assert_eq!(taken(&mut order, 1, &[3, 5, 7, 9], snap(5, 9), halfway), 0);
        // One patience after the read that showed them, all three are read past in one read.
        let after = start + GAP_PATIENCE;
        let got = order.final_prefix(1, &[3, 5, 7, 9], snap(5, 9), after);
        assert_eq!(
            got,
            Final {
                taken: 3,
                skipped: vec![2..3, 4..5, 6..7]
            }
        );
        assert!(order.waits_on(8));
        assert_eq!(taken(&mut order, 7, &[9], snap(5, 9), after), 0);
        let later = halfway + GAP_PATIENCE;
        assert_eq!(taken(&mut order, 7, &[9], snap(5, 9), later), 1);
    }

    #[test]
    fn a_run_partly_filled_keeps_the_clock_of_its_first_sight() {
        let start = Instant::now();
        let mut order = FinalOrder::default();
        // Ids 2 to 4 are missing; then 3 commits.
        assert_eq!(taken(&mut order, 1, &[5], snap(5, 9), start), 0);
        let after = start + GAP_PATIENCE;
        let got = order.final_prefix(1, &[3, 5], snap(5, 9), after);
        assert_eq!(
            got,
            Final {
                taken: 2,
                skipped: vec![2..3, 4..5]
            }
        );
    }
}
