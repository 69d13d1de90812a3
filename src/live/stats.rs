//! Totals per outcome and rates over the last 10 s, 1 min and 5 min, in constant memory:
//! a ring of one-second buckets.

use crate::api::events::PerOutcome;
use crate::api::events::{RateWindow, Rates, StatsView};
use crate::domain::Outcome;
use std::collections::BTreeMap;

const SECONDS: usize = 300;

#[derive(Debug, Clone)]
pub struct StatsWindow {
    totals: PerOutcome<u64>,
    buckets: Vec<PerOutcome<u32>>,
    /// The second (since the epoch) that `buckets[second % SECONDS]` holds.
    stamps: Vec<i64>,
}

impl StatsWindow {
    pub fn new(totals: impl IntoIterator<Item = (Outcome, u64)>) -> Self {
        let mut window = Self {
            totals: PerOutcome::default(),
            buckets: vec![PerOutcome::default(); SECONDS],
            stamps: vec![i64::MIN; SECONDS],
        };
        for (outcome, count) in totals {
            *window.totals.get_mut(outcome) += count;
        }
        window
    }

    /// Counts one write seen at `second`: constant time.
    pub fn record(&mut self, outcome: Outcome, second: i64) {
        let slot = second.rem_euclid(SECONDS as i64) as usize;
        if self.stamps[slot] != second {
            self.stamps[slot] = second;
            self.buckets[slot] = PerOutcome::default();
        }
        *self.buckets[slot].get_mut(outcome) += 1;
        *self.totals.get_mut(outcome) += 1;
    }

    /// Counts one write in the totals only: one too old for any rate window.
    pub fn record_total(&mut self, outcome: Outcome) {
        *self.totals.get_mut(outcome) += 1;
    }

    /// Read by the tests only: the daemon reads the totals through `view`.
    #[cfg(test)]
    pub fn total(&self, outcome: Outcome) -> u64 {
        *self.totals.get(outcome)
    }

    /// Writes of `outcome` over the `seconds` seconds up to and including `now`.
    pub fn count_since(&self, outcome: Outcome, now: i64, seconds: usize) -> u64 {
        let seconds = seconds.min(SECONDS) as i64;
        (0..seconds)
            .map(|back| now - back)
            .map(|second| {
                let slot = second.rem_euclid(SECONDS as i64) as usize;
                if self.stamps[slot] == second {
                    u64::from(*self.buckets[slot].get(outcome))
                } else {
                    0
                }
            })
            .sum()
    }

    pub fn rates(&self, now: i64, seconds: usize) -> Rates {
        let by_outcome =
            PerOutcome::from_fn(|o| self.count_since(o, now, seconds) as f64 / seconds as f64);
        Rates {
            // Summed in the members' order, so that the total is the sum a reader of the JSON
            // gets.
            total: by_outcome.iter().map(|(_, rate)| rate).sum(),
            by_outcome,
        }
    }

    pub fn view(&self, now: i64) -> StatsView {
        StatsView {
            totals: self.totals,
            rates: RateWindow::ALL
                .into_iter()
                .map(|window| (window, self.rates(now, window.seconds())))
                .collect(),
            open_overlaps: 0,
            firing_alerts: 0,
            events_dropped: 0,
            through_audit_id: 0,
            sources: BTreeMap::new(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rates_cover_their_windows_and_old_buckets_are_forgotten() {
        let mut window = StatsWindow::new([(Outcome::Accepted, 100)]);
        for _ in 0..20 {
            window.record(Outcome::Stale, 1000);
        }
        window.record(Outcome::Accepted, 995);
        window.record(Outcome::Accepted, 900);
        assert_eq!(window.total(Outcome::Accepted), 102);
        assert_eq!(window.count_since(Outcome::Stale, 1000, 10), 20);
        assert_eq!(window.count_since(Outcome::Accepted, 1000, 10), 1);
        assert_eq!(window.count_since(Outcome::Accepted, 1000, 300), 2);
        assert_eq!(window.rates(1000, 10).by_outcome.stale, 2.0);
        assert_eq!(window.rates(1000, 10).total, 2.1);
        // 300 s later the same slots hold other seconds: nothing is counted twice.
        window.record(Outcome::Stale, 1300);
        assert_eq!(window.count_since(Outcome::Stale, 1300, 300), 1);
        assert_eq!(window.count_since(Outcome::Stale, 1300, 10), 1);
        assert_eq!(window.total(Outcome::Stale), 21);
    }
}
