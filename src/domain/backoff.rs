//! Retry delays that double from a first delay up to a cap: the dashboard's reconnects and the
//! alert notifier's retries each pass their own schedule.

use std::time::Duration;

/// The wait before retry `attempt` (from 1): `first`, doubling each attempt, at most `cap`.
/// Attempt 0 waits as attempt 1 does; the doubling stops growing after 16 steps, long past
/// any cap in use, so that the arithmetic cannot overflow.
pub fn doubling(attempt: u32, first: Duration, cap: Duration) -> Duration {
    let factor = 1u32 << attempt.saturating_sub(1).min(16);
    first.saturating_mul(factor).min(cap)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn doubles_from_the_first_delay_up_to_the_cap() {
        let ms = Duration::from_millis;
        let schedule: Vec<u128> = (0..=6)
            .map(|a| doubling(a, ms(100), ms(1000)).as_millis())
            .collect();
        assert_eq!(schedule, [100, 100, 200, 400, 800, 1000, 1000]);
        assert_eq!(doubling(u32::MAX, ms(100), ms(1000)), ms(1000));
    }
}
