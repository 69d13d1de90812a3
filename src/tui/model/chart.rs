//! Writes per second for the charts, bucketed by each write's own time: when an event arrives
//! (live, held by a pause, or replayed after a reconnect) changes nothing about where it counts.

use std::collections::BTreeMap;

/// Seconds of history kept: enough for the widest chart at the coarsest zoom.
pub const HISTORY: i64 = 1200;

/// Writes counted per second of their own time, accepted and rejected: what the charts draw
/// (the daemon's rates over its windows are `api::events::Rates`, a different thing).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct WritesBySecond {
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
    /// Columns per second: more than one when the window is narrower than the chart, so that
    /// zooming in draws each second wider instead of the same seconds again.
    pub widen: u64,
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

impl WritesBySecond {
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

    /// `columns` columns ending at the second `now`, spanning at least `window` seconds: a
    /// column covers enough seconds for that, or, when the window is narrower than the chart,
    /// each second takes as many whole columns as fit (any left over stay empty at the left).
    /// A column shows its busiest second, so that a one-second spike keeps its height when
    /// columns are merged.
    pub fn series(&self, now: i64, window: u64, columns: usize) -> Series {
        let columns = columns.max(1);
        let window = window.max(1);
        let (step, widen) = match columns as u64 / window {
            0 | 1 => (window.div_ceil(columns as u64).max(1), 1),
            widen => (1, widen),
        };
        let slots = columns as u64 / widen;
        let span = step * slots;
        let left_empty = columns - (slots * widen) as usize;
        let start = now - span as i64 + 1;
        let mut accepted = vec![0; columns];
        let mut rejected = vec![0; columns];
        let (mut total_accepted, mut total_rejected) = (0, 0);
        for (second, (ok, refused)) in self.seconds.range(start..=now) {
            let slot = ((second - start) as u64 / step) as usize;
            let first = left_empty + slot * widen as usize;
            for column in first..first + widen as usize {
                if let (Some(a), Some(r)) = (accepted.get_mut(column), rejected.get_mut(column)) {
                    *a = (*a).max(*ok);
                    *r = (*r).max(*refused);
                }
            }
            total_accepted += ok;
            total_rejected += refused;
        }
        Series {
            accepted,
            rejected,
            step,
            widen,
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
        let mut rates = WritesBySecond::default();
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
    fn a_window_narrower_than_the_chart_draws_each_second_wider() {
        let mut rates = WritesBySecond::default();
        rates.record(1000, false);
        rates.record(971, true);
        rates.record(970, true);
        rates.record(969, true);
        // 158 columns: 30 s at 5 columns a second (31 s drawn, 3 columns left empty), 60 s
        // at 2, 120 s at 1: each zoom draws differently.
        let close = rates.series(1000, 30, 158);
        assert_eq!((close.step, close.widen, close.span), (1, 5, 31));
        assert_eq!(close.accepted[153..], [1; 5]);
        assert_eq!(close.accepted[..153].iter().sum::<u64>(), 0);
        assert_eq!(
            close.rejected[..3],
            [0; 3],
            "the columns left over stay empty"
        );
        assert_eq!(
            close.rejected[3..13],
            [1; 10],
            "970 and 971, five columns each"
        );
        assert_eq!(
            close.total_rejected, 2,
            "969 is 32 s before 1000: off the chart"
        );
        let middle = rates.series(1000, 60, 158);
        assert_eq!((middle.step, middle.widen, middle.span), (1, 2, 79));
        let wide = rates.series(1000, 120, 158);
        assert_eq!((wide.step, wide.widen, wide.span), (1, 1, 158));
    }

    #[test]
    fn late_and_out_of_order_writes_count_at_their_own_second() {
        let mut in_order = WritesBySecond::default();
        let mut shuffled = WritesBySecond::default();
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
