use super::*;
use proptest::prelude::*;
use std::time::Duration;

const SECOND: i64 = 1_000_000;

fn sample() -> RefusalSample {
    RefusalSample::new(Some("r".into()), "PUT /v1/resources/r".into(), "no".into())
}

fn address(n: u8) -> RefusalSource {
    RefusalSource::Address(IpAddr::from([10, 0, 0, n]))
}

#[test]
fn refusals_are_counted_per_interval_source_and_reason() {
    let mut tally = RefusalTally::new(Duration::from_secs(10), 100);
    let start = 1_700_000_000 * SECOND;
    tally.count(start, address(1), RefusalReason::Unauthorized, sample);
    for n in 1..7 {
        tally.count(
            start + n * SECOND,
            address(1),
            RefusalReason::Unauthorized,
            || panic!("a bucket's sample is taken once, by its first refusal"),
        );
    }
    tally.count(
        start + 3 * SECOND,
        address(1),
        RefusalReason::CrossOrigin,
        sample,
    );
    tally.count(
        start + 4 * SECOND,
        RefusalSource::Caller("reader".into()),
        RefusalReason::Forbidden,
        || RefusalSample::new(None, "GET /v1/audit".into(), "scopes".into()),
    );
    // The next interval.
    tally.count(
        start + 12 * SECOND,
        address(1),
        RefusalReason::Unauthorized,
        sample,
    );
    let counts = tally.drain();
    assert!(tally.is_empty());
    let rows: Vec<(i64, String, &str, i64, i64, i64)> = counts
        .iter()
        .map(|c| {
            (
                (c.interval_start_us - start) / SECOND,
                c.source.name(),
                c.reason.as_str(),
                c.count,
                (c.first_at_us - start) / SECOND,
                (c.last_at_us - start) / SECOND,
            )
        })
        .collect();
    assert_eq!(
        rows,
        [
            (0, "reader".into(), "forbidden", 1, 4, 4),
            (0, "10.0.0.1".into(), "unauthorized", 7, 0, 6),
            (0, "10.0.0.1".into(), "cross-origin", 1, 3, 3),
            (10, "10.0.0.1".into(), "unauthorized", 1, 12, 12),
        ]
    );
}

#[test]
fn sources_beyond_the_bound_share_one_bucket() {
    let mut tally = RefusalTally::new(Duration::from_secs(10), 3);
    for n in 0..10u8 {
        tally.count(SECOND, address(n), RefusalReason::Unauthorized, sample);
        tally.count(SECOND, address(n), RefusalReason::Unauthorized, sample);
    }
    let counts = tally.drain();
    assert_eq!(counts.len(), 4, "{counts:?}");
    let other = counts
        .iter()
        .find(|c| c.source == RefusalSource::Other)
        .unwrap();
    assert_eq!(other.count, 14);
    assert_eq!(counts.iter().map(|c| c.count).sum::<i64>(), 20);
}

#[test]
fn restored_counts_merge_with_new_ones() {
    let mut tally = RefusalTally::new(Duration::from_secs(10), 10);
    tally.count(SECOND, address(1), RefusalReason::Unauthorized, sample);
    let unwritten = tally.drain();
    tally.count(2 * SECOND, address(1), RefusalReason::Unauthorized, sample);
    tally.restore(unwritten);
    let counts = tally.drain();
    assert_eq!(counts.len(), 1);
    assert_eq!(
        (counts[0].count, counts[0].first_at_us, counts[0].last_at_us),
        (2, SECOND, 2 * SECOND)
    );
}

proptest! {
    /// Whatever the times, sources and bound, the counts drained add up to the refusals
    /// counted, per reason, and no more entries name a source than the bound allows.
    #[test]
    fn counts_add_up_to_the_refusals(
        refusals in proptest::collection::vec((0i64..60 * SECOND, 0u8..20, 0usize..RefusalReason::ALL.len()), 0..300),
        bound in 1usize..12,
    ) {
        let mut tally = RefusalTally::new(Duration::from_secs(10), bound);
        let mut sent = [0i64; RefusalReason::ALL.len()];
        for (at, source, reason) in &refusals {
            tally.count(*at, address(*source), RefusalReason::ALL[*reason], sample);
            sent[*reason] += 1;
        }
        let counts = tally.drain();
        let named = counts.iter().filter(|c| c.source != RefusalSource::Other).count();
        prop_assert!(named <= bound);
        for (reason, sent) in RefusalReason::ALL.iter().zip(sent) {
            let counted: i64 = counts.iter().filter(|c| c.reason == *reason).map(|c| c.count).sum();
            prop_assert_eq!(counted, sent);
        }
        for count in &counts {
            prop_assert!(count.first_at_us >= count.interval_start_us);
            prop_assert!(count.last_at_us < count.interval_start_us + 10 * SECOND);
        }
    }
}

#[test]
fn ipv6_addresses_are_counted_by_their_64_and_mapped_ones_as_ipv4() {
    let mut tally = RefusalTally::new(Duration::from_secs(60), 100);
    for n in 0..50u16 {
        let address: IpAddr = format!("2001:db8:1:2:{n:x}::{n:x}").parse().unwrap();
        tally.count(
            SECOND,
            RefusalSource::Address(address),
            RefusalReason::Unauthorized,
            sample,
        );
    }
    let other_block: IpAddr = "2001:db8:1:3::1".parse().unwrap();
    let mapped: IpAddr = "::ffff:192.0.2.9".parse().unwrap();
    for address in [other_block, mapped, "192.0.2.9".parse().unwrap()] {
        tally.count(
            SECOND,
            RefusalSource::Address(address),
            RefusalReason::Unauthorized,
            sample,
        );
    }
    let rows: Vec<(String, i64)> = tally
        .drain()
        .iter()
        .map(|c| (c.source.name(), c.count))
        .collect();
    assert_eq!(
        rows,
        [
            ("192.0.2.9".to_owned(), 2),
            ("2001:db8:1:2::/64".to_owned(), 50),
            ("2001:db8:1:3::/64".to_owned(), 1),
        ]
    );
    for (name, _) in &rows {
        let parsed = RefusalSource::parse_address(name).unwrap();
        assert_eq!(RefusalSource::Address(parsed).name(), *name);
    }
    assert_eq!(RefusalSource::parse_address("not an address"), None);
    assert_eq!(RefusalSource::parse_address("2001:db8::/48"), None);
}

#[test]
fn an_ipv6_64_shares_one_budget() {
    let mut budget = RefusalBudget::new(3, 1, 100);
    for n in 0..3u16 {
        let address: IpAddr = format!("2001:db8::{n:x}").parse().unwrap();
        assert_eq!(budget.spend(Some(address), 0), Spend::Within);
    }
    let fourth: IpAddr = "2001:db8::ffff:1".parse().unwrap();
    assert!(matches!(
        budget.spend(Some(fourth), 0),
        Spend::Exhausted { .. }
    ));
    let next_block: IpAddr = "2001:db8:0:1::1".parse().unwrap();
    assert_eq!(budget.spend(Some(next_block), 0), Spend::Within);
}

#[test]
fn only_the_largest_counts_of_an_interval_keep_their_source() {
    let count = |interval: i64, n: u8, reason: RefusalReason, count: i64| RefusalCount {
        interval_start_us: interval,
        source: address(n),
        reason,
        count,
        first_at_us: interval + i64::from(n),
        last_at_us: interval + i64::from(n) + 1,
        sample: sample(),
    };
    let minute = 60 * SECOND;
    let counts = vec![
        count(0, 1, RefusalReason::Unauthorized, 9),
        count(0, 2, RefusalReason::Unauthorized, 1),
        count(0, 3, RefusalReason::CrossOrigin, 5),
        count(0, 4, RefusalReason::Unauthorized, 2),
        count(0, 5, RefusalReason::CrossOrigin, 1),
        count(minute, 6, RefusalReason::Unauthorized, 1),
    ];
    let kept: Vec<(i64, String, &str, i64, i64, i64)> = keep_largest(counts, 2)
        .iter()
        .map(|c| {
            (
                c.interval_start_us / minute,
                c.source.name(),
                c.reason.as_str(),
                c.count,
                c.first_at_us % minute,
                c.last_at_us % minute,
            )
        })
        .collect();
    assert_eq!(
        kept,
        [
            (0, "10.0.0.1".into(), "unauthorized", 9, 1, 2),
            (0, "10.0.0.3".into(), "cross-origin", 5, 3, 4),
            (0, "*".into(), "unauthorized", 3, 2, 5),
            (0, "*".into(), "cross-origin", 1, 5, 6),
            (1, "10.0.0.6".into(), "unauthorized", 1, 6, 7),
        ]
    );
}

proptest! {
    /// Whatever the counts and bound, `keep_largest` keeps every refusal counted per
    /// interval and reason, names at most the bound's sources per interval (plus one
    /// `other` per reason), and keeps by name no count smaller than one it folded.
    #[test]
    fn keeping_the_largest_loses_no_refusal(
        counts in proptest::collection::vec(
            (0i64..3, 0u8..40, 0usize..RefusalReason::ALL.len(), 1i64..50),
            0..200,
        ),
        bound in 0usize..10,
    ) {
        let mut given: HashMap<(i64, RefusalSource, RefusalReason), RefusalCount> =
            HashMap::new();
        for (interval, source, reason, count) in counts {
            let reason = RefusalReason::ALL[reason];
            let key = (interval * 60 * SECOND, address(source), reason);
            let entry = given.entry(key.clone()).or_insert_with(|| RefusalCount {
                interval_start_us: key.0,
                source: key.1.clone(),
                reason,
                count: 0,
                first_at_us: key.0,
                last_at_us: key.0,
                sample: sample(),
            });
            entry.count += count;
        }
        let given: Vec<RefusalCount> = given.into_values().collect();
        let kept = keep_largest(given.clone(), bound);
        let sum = |counts: &[RefusalCount], interval: i64, reason: RefusalReason| -> i64 {
            counts
                .iter()
                .filter(|c| c.interval_start_us == interval && c.reason == reason)
                .map(|c| c.count)
                .sum()
        };
        for interval in 0..3 {
            let interval = interval * 60 * SECOND;
            for reason in RefusalReason::ALL {
                prop_assert_eq!(sum(&kept, interval, reason), sum(&given, interval, reason));
                let others = kept
                    .iter()
                    .filter(|c| c.interval_start_us == interval && c.reason == reason)
                    .filter(|c| c.source == RefusalSource::Other)
                    .count();
                prop_assert!(others <= 1);
            }
            let named: Vec<&RefusalCount> = kept
                .iter()
                .filter(|c| c.interval_start_us == interval && c.source != RefusalSource::Other)
                .collect();
            prop_assert!(named.len() <= bound);
            let smallest_named = named.iter().map(|c| c.count).min();
            let folded = given.iter().filter(|g| {
                g.interval_start_us == interval
                    && !named.iter().any(|n| n.source == g.source && n.reason == g.reason)
            });
            if let Some(smallest) = smallest_named {
                for g in folded {
                    prop_assert!(g.count <= smallest);
                }
            }
        }
    }
}

#[test]
fn an_address_gets_its_burst_then_its_rate() {
    let mut budget = RefusalBudget::new(5, 2, 100);
    let one = Some(IpAddr::from([10, 0, 0, 1]));
    let two = Some(IpAddr::from([10, 0, 0, 2]));
    for _ in 0..5 {
        assert_eq!(budget.spend(one, 0), Spend::Within);
    }
    assert_eq!(
        budget.spend(one, 0),
        Spend::Exhausted {
            retry_after_secs: 1
        }
    );
    assert_eq!(budget.spend(two, 0), Spend::Within, "another address");
    // Half a second later, one more (two a second).
    assert_eq!(budget.spend(one, SECOND / 2), Spend::Within);
    assert!(matches!(
        budget.spend(one, SECOND / 2),
        Spend::Exhausted { .. }
    ));
    // Long idle: the burst again, and no more.
    for _ in 0..5 {
        assert_eq!(budget.spend(one, 100 * SECOND), Spend::Within);
    }
    assert!(matches!(
        budget.spend(one, 100 * SECOND),
        Spend::Exhausted { .. }
    ));
}

#[test]
fn the_budget_keeps_a_bounded_number_of_addresses() {
    let mut budget = RefusalBudget::new(2, 1, 4);
    for n in 0..4u8 {
        assert_eq!(
            budget.spend(Some(IpAddr::from([10, 0, 0, n])), 0),
            Spend::Within
        );
    }
    // Beyond the bound, while every bucket is in use: one shared bucket.
    let stranger = |n: u8| Some(IpAddr::from([10, 0, 1, n]));
    assert_eq!(budget.spend(stranger(1), 0), Spend::Within);
    assert_eq!(budget.spend(stranger(2), 0), Spend::Within);
    assert!(matches!(
        budget.spend(stranger(3), 0),
        Spend::Exhausted { .. }
    ));
    assert_eq!(budget.addresses(), 4);
    // Once the first ones have refilled, they are forgotten to make room.
    assert_eq!(budget.spend(stranger(4), 10 * SECOND), Spend::Within);
    assert_eq!(budget.addresses(), 1);
}
