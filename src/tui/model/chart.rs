//! Writes per second for the charts, bucketed by each write's own time: when an event arrives
//! (live, held by a pause, or replayed after a reconnect) changes nothing about where it counts.

use std::collections::BTreeMap;

/// Seconds of history kept: enough for the widest chart at the coarsest zoom.
pub const HISTORY: i64 = 1200;

#[derive(Debug, Clone, Default, PartialEq)]
pub struct Rates {
    /// Second since the epoch to (accepted, rejected) counts.
    seconds: BTreeMap<i64, (u64, u64)>,
}

/// A chart's columns, oldest first, the newest at the right edge.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Series {
    pub accepted: Vec<u64>,
    pub rejected: Vec<u64>,
    /// Seconds per column.
    pub step: u64,
    /// Seconds the chart spans (`step` × columns).
    pub span: u64,
    /// Writes in the span, accepted and rejected.
    pub total_accepted: u64,
    pub total_rejected: u64,
}

impl Series {
    /// Rejected writes as a share of all writes in the span, in percent.
    pub fn rejection_percent(&self) -> Option<f64> {
        let all = self.total_accepted + self.total_rejected;
        (all > 0).then(|| 100.0 * self.total_rejected as f64 / all as f64)
    }
}

impl Rates {
    /// Counts one write at `second`; history older than `HISTORY` before the newest is dropped.
    pub fn record(&mut self, second: i64, rejected: bool) {
        let newest = self.seconds.keys().next_back().copied().unwrap_or(second);
        if second < newest - HISTORY {
            return;
        }
        let bucket = self.seconds.entry(second).or_default();
        if rejected {
            bucket.1 += 1;
        } else {
            bucket.0 += 1;
        }
        if second > newest {
            let keep = self.seconds.split_off(&(second - HISTORY));
            self.seconds = keep;
        }
    }

    /// The oldest second with a write still held.
    pub fn oldest_second(&self) -> Option<i64> {
        self.seconds.keys().next().copied()
    }

    /// `columns` columns ending at the second `now`, each covering enough seconds for the
    /// whole chart to span at least `window` seconds. A column shows its busiest second, so
    /// that a one-second spike keeps its height when columns are merged.
    pub fn series(&self, now: i64, window: u64, columns: usize) -> Series {
        let columns = columns.max(1);
        let step = window.div_ceil(columns as u64).max(1);
        let span = step * columns as u64;
        let start = now - span as i64 + 1;
        let mut accepted = vec![0; columns];
        let mut rejected = vec![0; columns];
        let (mut total_accepted, mut total_rejected) = (0, 0);
        for (second, (ok, refused)) in self.seconds.range(start..=now) {
            let column = ((second - start) as u64 / step) as usize;
            if let (Some(a), Some(r)) = (accepted.get_mut(column), rejected.get_mut(column)) {
                *a = (*a).max(*ok);
                *r = (*r).max(*refused);
            }
            total_accepted += ok;
            total_rejected += refused;
        }
        Series {
            accepted,
            rejected,
            step,
            span,
            total_accepted,
            total_rejected,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_newest_second_is_the_last_column_whatever_the_width() {
        let mut rates = Rates::default();
        rates.record(1000, false);
        rates.record(1000, true);
        rates.record(957, true);
        for columns in [20, 78, 156] {
            let series = rates.series(1000, 60, columns);
            assert_eq!(series.accepted.len(), columns);
            assert_eq!(series.accepted.last(), Some(&1));
            assert_eq!(series.rejected.last(), Some(&1));
            // The spike 43 s ago is on the chart at every width.
            assert_eq!(series.total_rejected, 2, "at {columns} columns");
            assert!(series.span >= 60);
        }
        let narrow = rates.series(1000, 60, 20);
        assert_eq!((narrow.step, narrow.span), (3, 60));
        assert_eq!(narrow.rejection_percent(), Some(200.0 / 3.0));
    }

    #[test]
    fn late_and_out_of_order_writes_count_at_their_own_second() {
        let mut in_order = Rates::default();
        let mut shuffled = Rates::default();
        let seconds = [10, 11, 11, 12, 15, 15, 15];
        for s in seconds {
            in_order.record(s, s == 15);
        }
        for s in seconds.iter().rev() {
            shuffled.record(*s, *s == 15);
        }
        assert_eq!(in_order, shuffled);
        in_order.record(15 + HISTORY + 10, false);
        assert_eq!(
            in_order.series(15, 10, 10).total_accepted,
            0,
            "old history is gone"
        );
    }
}
