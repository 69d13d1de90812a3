//! Ids of a watched fence's audit read past without proof that they will never commit (see
//! `live/order.rs`), looked for again for a while, so that a long transaction of the user's
//! delays its row rather than losing it.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

/// How long an id read past is looked for again.
pub const LATE_PATIENCE: Duration = Duration::from_secs(600);
/// Ids looked for again at most; past it the oldest are given up.
const LATE_MAX: usize = 10_000;

/// Ids read past without proof that they will never commit, with when that was.
#[derive(Default)]
pub struct Late {
    since: BTreeMap<i64, Instant>,
}

impl Late {
    pub fn add(&mut self, ids: std::ops::Range<i64>, now: Instant) {
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

    #[test]
    fn ids_read_past_are_looked_for_until_found_or_the_patience_ends() {
        let start = Instant::now();
        let mut late = Late::default();
        late.add(1..3, start);
        assert_eq!(late.due(start), [1, 2]);
        late.found(1);
        assert_eq!(late.due(start), [2]);
        assert!(late.due(start + LATE_PATIENCE).is_empty());
        assert!(late.is_empty());
    }
}
