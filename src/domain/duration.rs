//! Durations as stored times count them: whole microseconds in an `i64`.

use std::time::Duration;

/// `duration` in whole microseconds; `i64::MAX` for one longer than an `i64` can count (about
/// 292,000 years), which every window and retention takes as "forever": never a wrapped,
/// negative number.
pub fn saturating_micros(duration: Duration) -> i64 {
    i64::try_from(duration.as_micros()).unwrap_or(i64::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_duration_counts_its_whole_microseconds() {
        assert_eq!(saturating_micros(Duration::ZERO), 0);
        assert_eq!(saturating_micros(Duration::from_nanos(1_999)), 1);
        assert_eq!(saturating_micros(Duration::from_secs(90)), 90_000_000);
    }

    #[test]
    fn a_duration_beyond_an_i64_of_microseconds_saturates() {
        let longest = Duration::from_micros(i64::MAX as u64);
        assert_eq!(saturating_micros(longest), i64::MAX);
        assert_eq!(
            saturating_micros(longest + Duration::from_micros(1)),
            i64::MAX
        );
        assert_eq!(saturating_micros(Duration::MAX), i64::MAX);
    }
}
