//! Ids of a watched fence's audit read past without proof that they will never commit (see
//! `live/order.rs`), looked for again until they are found or a snapshot proves they never will
//! be: so that a long transaction of the user's delays its row, however long, rather than
//! losing it.
//!
//! Each id keeps the `xmax` of a snapshot taken after it was seen missing: the transaction that
//! drew it (if any is still running) is below it. Once a later snapshot's `xmin` reaches that
//! `xmax`, every such transaction has ended, and a row not found by a read after that snapshot
//! will never appear.

use crate::domain::Xids;
use std::collections::BTreeMap;

/// Ids looked for again at most; past it the oldest are given up (and logged).
pub const LATE_MAX: usize = 10_000;

/// Ids read past without proof that they will never commit, each with its `xmax`.
#[derive(Default)]
pub struct Late {
    xmax: BTreeMap<i64, i64>,
}

impl Late {
    /// Ids read past by a read whose snapshot (or a later one) had `xmax`. Returns how many of
    /// the oldest were given up to stay within [`LATE_MAX`].
    pub fn add(&mut self, ids: impl IntoIterator<Item = i64>, xmax: i64) -> usize {
        for id in ids.into_iter().take(LATE_MAX) {
            self.xmax.entry(id).or_insert(xmax);
        }
        let mut given_up = 0;
        while self.xmax.len() > LATE_MAX {
            self.xmax.pop_first();
            given_up += 1;
        }
        given_up
    }

    /// The ids to look for.
    pub fn due(&self) -> Vec<i64> {
        self.xmax.keys().copied().collect()
    }

    /// After a look for [`Self::due`] that followed `snapshot` and found `found`: forgets the
    /// ids not found that the snapshot proves final (their row never will be). Found ids stay
    /// until [`Self::found`] (their rows are not taken in yet).
    pub fn settle(&mut self, snapshot: Xids, found: &[i64]) {
        self.xmax
            .retain(|id, xmax| snapshot.xmin < *xmax || found.contains(id));
    }

    /// An id found.
    pub fn found(&mut self, id: i64) {
        self.xmax.remove(&id);
    }

    pub fn is_empty(&self) -> bool {
        self.xmax.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_are_looked_for_until_found_or_proven_never_to_come() {
        let mut late = Late::default();
        late.add([1, 2, 3], 20);
        assert_eq!(late.due(), [1, 2, 3]);
        late.found(1);
        // Transactions below 20 may still run: 2 and 3 may still come, however long it takes.
        late.settle(Xids { xmin: 19, xmax: 40 }, &[]);
        assert_eq!(late.due(), [2, 3]);
        // Everything below 20 has ended: 3, not found after this snapshot, never will be; 2,
        // found, stays until it is taken in.
        late.settle(Xids { xmin: 20, xmax: 41 }, &[2]);
        assert_eq!(late.due(), [2]);
        late.found(2);
        assert!(late.is_empty());
    }

    #[test]
    fn an_id_keeps_the_first_xmax_it_was_given() {
        let mut late = Late::default();
        late.add([7], 10);
        late.add([7], 99);
        late.settle(
            Xids {
                xmin: 10,
                xmax: 100,
            },
            &[],
        );
        assert!(late.is_empty());
    }

    #[test]
    fn the_oldest_are_given_up_past_the_bound() {
        let mut late = Late::default();
        assert_eq!(late.add(0..LATE_MAX as i64, 5), 0);
        assert_eq!(late.add([LATE_MAX as i64 + 1], 5), 1);
        assert_eq!(late.due().first(), Some(&1));
    }
}
