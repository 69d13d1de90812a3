//! Where "now" comes from. The daemon reads its wall clock through one `Clock`, set when the
//! store opens and shared by the write path (audit times, SQLite's lease clock) and the live
//! side (rate buckets, alert and overlap windows, retention), so that a test can move time
//! instead of sleeping through it. PostgreSQL's lease clock stays the server's: daemons sharing
//! a database must agree on when a grant expires.

use chrono::{DateTime, TimeDelta, Utc};
use std::sync::{Arc, Mutex};

pub trait Clock: std::fmt::Debug + Send + Sync {
    fn now(&self) -> DateTime<Utc>;

    fn now_us(&self) -> i64 {
        self.now().timestamp_micros()
    }
}

/// The shared clock of a daemon.
pub type SharedClock = Arc<dyn Clock>;

/// The system's wall clock.
#[derive(Debug, Clone, Copy, Default)]
pub struct SystemClock;

impl Clock for SystemClock {
    fn now(&self) -> DateTime<Utc> {
        Utc::now()
    }
}

/// A clock that moves only when told to: for tests of windows and expiry.
#[derive(Debug)]
pub struct ManualClock(Mutex<DateTime<Utc>>);

impl ManualClock {
    pub fn starting_at(at: DateTime<Utc>) -> Self {
        Self(Mutex::new(at))
    }

    pub fn advance(&self, by: std::time::Duration) {
        let by = TimeDelta::from_std(by).unwrap_or(TimeDelta::MAX);
        let mut now = self
            .0
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        *now = now.checked_add_signed(by).unwrap_or(*now);
    }
}

impl Clock for ManualClock {
    fn now(&self) -> DateTime<Utc> {
        *self
            .0
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_manual_clock_moves_only_when_advanced() {
        let start = DateTime::from_timestamp(1_900_000_000, 0).unwrap();
        let clock = ManualClock::starting_at(start);
        assert_eq!(clock.now(), start);
        assert_eq!(clock.now(), start);
        clock.advance(std::time::Duration::from_millis(1500));
        assert_eq!(clock.now_us(), start.timestamp_micros() + 1_500_000);
    }
}
