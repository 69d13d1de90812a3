//! When a worker of a lock-service demo pauses past its lock: the first soon after the start,
//! then one every `--every`, whichever worker asks first. Each worker deciding for itself paused
//! one somewhere every two or three seconds, incidents too close together to follow.

use std::sync::Mutex;
use std::time::{Duration, Instant};

pub struct Pauses {
    every: Duration,
    next: Mutex<Instant>,
}

impl Pauses {
    pub fn new(start: Instant, first_after: Duration, every: Duration) -> Self {
        Self {
            every,
            next: Mutex::new(start + first_after),
        }
    }

    /// Whether the caller pauses now: at most one caller a period.
    pub fn take(&self, now: Instant) -> bool {
        let Ok(mut next) = self.next.lock() else {
            return false;
        };
        if now < *next {
            return false;
        }
        *next = now + self.every;
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_pause_a_period_the_first_soon_after_the_start() {
        let start = Instant::now();
        let s = Duration::from_secs;
        let pauses = Pauses::new(start, Duration::from_millis(800), s(12));
        assert!(!pauses.take(start));
        assert!(pauses.take(start + s(1)), "the first, soon after the start");
        assert!(
            !pauses.take(start + s(1)),
            "another worker in the same period"
        );
        assert!(!pauses.take(start + s(12)));
        assert!(pauses.take(start + s(13)));
        assert!(!pauses.take(start + s(20)));
    }
}
