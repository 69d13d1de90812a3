//! Requests refused before the fence (no or a wrong API key, a key's scopes, a foreign web
//! origin or `Host`, a reserved lease): what is kept of them. Each used to be audited in a
//! transaction of its own, which let a caller without a key take a resource's row lock and add
//! rows at the rate it could send. Now they are counted: per source (the key's name when a key
//! was recognised, else the client's address, an IPv6 one by its /64), reason and interval, in
//! a map of bounded size (`RefusalTally`), written as one row each per interval, at most
//! `MAX_NAMED_REFUSAL_ROWS` of them naming a source (`keep_largest`); and each address has a
//! budget of refusals (`RefusalBudget`), beyond which it is answered `429` at no cost. Pure: the
//! times are given in.

use super::duration::saturating_micros;
use std::collections::{BTreeMap, HashMap};
use std::net::{IpAddr, Ipv6Addr};

/// Rows naming a source (a key's name or an address) kept per interval in `refusals`; the
/// smaller counts beyond them are folded into one `other` row per reason. A spray from ever new
/// addresses thus adds at most this many rows, plus one per reason, per interval.
pub const MAX_NAMED_REFUSAL_ROWS: usize = 100;

/// The address a refusal is counted and budgeted under: an IPv4 address as it is (an
/// IPv4-mapped IPv6 address as its IPv4 one), an IPv6 address as its /64 (its low 64 bits
/// zero). One host is commonly given a whole /64, so counting its addresses apart would let it
/// spray ever new sources, and spend a fresh budget with each.
pub fn address_block(address: IpAddr) -> IpAddr {
    match address {
        IpAddr::V4(v4) => IpAddr::V4(v4),
        IpAddr::V6(v6) => match v6.to_ipv4_mapped() {
            Some(v4) => IpAddr::V4(v4),
            None => IpAddr::V6(Ipv6Addr::from(u128::from(v6) & !u128::from(u64::MAX))),
        },
    }
}

/// Why a request was refused before the fence: the problem type it was (or would have been)
/// answered with. Bounded, so that it can label a metric.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum RefusalReason {
    /// No API key, or one that is not configured.
    Unauthorized,
    /// A valid key whose scopes do not allow the request.
    Forbidden,
    /// An `Origin` that `--allow-origin` does not name.
    CrossOrigin,
    /// A `Host` that `--allowed-host` does not name.
    MisdirectedRequest,
    /// An address over its budget of refusals.
    TooManyRequests,
    /// A write naming one of the daemon's own leases (`Fencing-Lease: fencewatch/…`).
    ReservedName,
}

impl RefusalReason {
    pub const ALL: [RefusalReason; 6] = [
        RefusalReason::Unauthorized,
        RefusalReason::Forbidden,
        RefusalReason::CrossOrigin,
        RefusalReason::MisdirectedRequest,
        RefusalReason::TooManyRequests,
        RefusalReason::ReservedName,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            RefusalReason::Unauthorized => "unauthorized",
            RefusalReason::Forbidden => "forbidden",
            RefusalReason::CrossOrigin => "cross-origin",
            RefusalReason::MisdirectedRequest => "misdirected-request",
            RefusalReason::TooManyRequests => "too-many-requests",
            RefusalReason::ReservedName => "reserved-name",
        }
    }

    pub fn parse(text: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|reason| reason.as_str() == text)
    }
}

/// Who was refused.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum RefusalSource {
    /// The name of a recognised key.
    Caller(String),
    /// The client's address (no recognised key, or one without a name); an IPv6 address stands
    /// for its /64 (`address_block`).
    Address(IpAddr),
    /// A request whose address is not known (one handed to the router directly).
    Unknown,
    /// Any source beyond the tally's bound, in one bucket.
    Other,
}

impl RefusalSource {
    /// `caller`, `address`, `unknown` or `other`: the `source_kind` column.
    pub fn kind(&self) -> &'static str {
        match self {
            RefusalSource::Caller(_) => "caller",
            RefusalSource::Address(_) => "address",
            RefusalSource::Unknown => "unknown",
            RefusalSource::Other => "other",
        }
    }

    /// The caller's name, the address (an IPv6 one as its block, `2001:db8:1:2::/64`), or `*`:
    /// the `source` column.
    pub fn name(&self) -> String {
        match self {
            RefusalSource::Caller(name) => name.clone(),
            RefusalSource::Address(address) => match address_block(*address) {
                IpAddr::V6(block) => format!("{block}/64"),
                IpAddr::V4(v4) => v4.to_string(),
            },
            RefusalSource::Unknown | RefusalSource::Other => "*".to_owned(),
        }
    }

    /// The address of an `address` row's `source` column (`name`'s output), if it is one.
    pub fn parse_address(name: &str) -> Option<IpAddr> {
        match name.strip_suffix("/64") {
            Some(block) => block.parse::<Ipv6Addr>().ok().map(IpAddr::V6),
            None => name.parse().ok(),
        }
    }

    /// The source as it is counted: an address as its block.
    fn counted(self) -> Self {
        match self {
            RefusalSource::Address(address) => RefusalSource::Address(address_block(address)),
            other => other,
        }
    }
}

/// What one refused request leaves for its bucket's sample: the first of each bucket is kept.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RefusalSample {
    /// The resource a refused `PUT` or `GET` of a resource named.
    pub resource: Option<String>,
    /// `METHOD /path`, cut to `MAX_SAMPLE_CHARS`.
    pub request: String,
    /// The problem's detail.
    pub detail: String,
}

impl RefusalSample {
    pub const MAX_SAMPLE_CHARS: usize = 256;

    pub fn new(resource: Option<String>, request: String, detail: String) -> Self {
        Self {
            resource: resource.map(|r| cut(r, Self::MAX_SAMPLE_CHARS)),
            request: cut(request, Self::MAX_SAMPLE_CHARS),
            detail: cut(detail, Self::MAX_SAMPLE_CHARS),
        }
    }
}

fn cut(mut text: String, chars: usize) -> String {
    if let Some((at, _)) = text.char_indices().nth(chars) {
        text.truncate(at);
    }
    text
}

/// One source's refusals for one reason in one interval: a row of `refusals`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RefusalCount {
    /// The interval's start (microseconds since the epoch, a multiple of the interval).
    pub interval_start_us: i64,
    pub source: RefusalSource,
    pub reason: RefusalReason,
    pub count: i64,
    pub first_at_us: i64,
    pub last_at_us: i64,
    pub sample: RefusalSample,
}

type TallyKey = (i64, RefusalSource, RefusalReason);

/// Refusals counted in memory until they are written, one entry per interval, source and
/// reason. At most `max_entries` entries name a source; refusals from further sources are
/// counted under `RefusalSource::Other`, so a flood from many addresses costs bounded memory.
#[derive(Debug)]
pub struct RefusalTally {
    interval_us: i64,
    max_entries: usize,
    counts: HashMap<TallyKey, RefusalCount>,
}

impl RefusalTally {
    pub fn new(interval: std::time::Duration, max_entries: usize) -> Self {
        Self {
            interval_us: saturating_micros(interval).max(1),
            max_entries,
            counts: HashMap::new(),
        }
    }

    /// Counts one refusal at `at_us`; `sample` is asked for only by a bucket's first refusal.
    pub fn count(
        &mut self,
        at_us: i64,
        source: RefusalSource,
        reason: RefusalReason,
        sample: impl FnOnce() -> RefusalSample,
    ) {
        let interval_start_us = at_us - at_us.rem_euclid(self.interval_us);
        let mut key = (interval_start_us, source.counted(), reason);
        if !self.counts.contains_key(&key) && self.counts.len() >= self.max_entries {
            key.1 = RefusalSource::Other;
        }
        let entry = self
            .counts
            .entry(key)
            .or_insert_with_key(|key| RefusalCount {
                interval_start_us,
                source: key.1.clone(),
                reason,
                count: 0,
                first_at_us: at_us,
                last_at_us: at_us,
                sample: sample(),
            });
        entry.count += 1;
        entry.first_at_us = entry.first_at_us.min(at_us);
        entry.last_at_us = entry.last_at_us.max(at_us);
    }

    /// Everything counted so far, which the tally forgets: per interval, the
    /// `MAX_NAMED_REFUSAL_ROWS` largest counts by source, the rest folded into `other`
    /// (`keep_largest`).
    pub fn drain(&mut self) -> Vec<RefusalCount> {
        let counts: Vec<RefusalCount> = self.counts.drain().map(|(_, count)| count).collect();
        keep_largest(counts, MAX_NAMED_REFUSAL_ROWS)
    }

    /// Puts back counts that could not be written, merged with what was counted since, within
    /// the same bound.
    pub fn restore(&mut self, counts: Vec<RefusalCount>) {
        for count in counts {
            let mut key = (count.interval_start_us, count.source.clone(), count.reason);
            if !self.counts.contains_key(&key) && self.counts.len() >= self.max_entries {
                key.1 = RefusalSource::Other;
            }
            match self.counts.entry(key) {
                std::collections::hash_map::Entry::Occupied(mut entry) => {
                    let entry = entry.get_mut();
                    entry.count += count.count;
                    entry.first_at_us = entry.first_at_us.min(count.first_at_us);
                    entry.last_at_us = entry.last_at_us.max(count.last_at_us);
                }
                std::collections::hash_map::Entry::Vacant(entry) => {
                    let source = entry.key().1.clone();
                    entry.insert(RefusalCount { source, ..count });
                }
            }
        }
    }

    pub fn is_empty(&self) -> bool {
        self.counts.is_empty()
    }
}

/// Per interval, keeps the `max_named` counts with the most refusals (ties by source and
/// reason, so that the choice does not depend on the order given) and folds every other count
/// that names a source into that interval's `other` count of the same reason: the refusals all
/// stay counted, by reason, and at most `max_named` counts plus one per reason remain per
/// interval. Answers them ordered by interval, source and reason.
pub fn keep_largest(counts: Vec<RefusalCount>, max_named: usize) -> Vec<RefusalCount> {
    let mut by_interval: BTreeMap<i64, Vec<RefusalCount>> = BTreeMap::new();
    for count in counts {
        by_interval
            .entry(count.interval_start_us)
            .or_default()
            .push(count);
    }
    let mut kept = Vec::new();
    for counts in by_interval.into_values() {
        let (mut named, others): (Vec<_>, Vec<_>) = counts
            .into_iter()
            .partition(|count| count.source != RefusalSource::Other);
        named.sort_by(|a, b| {
            b.count
                .cmp(&a.count)
                .then_with(|| (&a.source, a.reason).cmp(&(&b.source, b.reason)))
        });
        let beyond = named.split_off(named.len().min(max_named));
        let mut other: BTreeMap<RefusalReason, RefusalCount> = BTreeMap::new();
        for count in others.into_iter().chain(beyond) {
            match other.get_mut(&count.reason) {
                Some(folded) => {
                    folded.count += count.count;
                    folded.first_at_us = folded.first_at_us.min(count.first_at_us);
                    folded.last_at_us = folded.last_at_us.max(count.last_at_us);
                }
                None => {
                    other.insert(
                        count.reason,
                        RefusalCount {
                            source: RefusalSource::Other,
                            ..count
                        },
                    );
                }
            }
        }
        named.extend(other.into_values());
        named.sort_by(|a, b| (&a.source, a.reason).cmp(&(&b.source, b.reason)));
        kept.extend(named);
    }
    kept
}

/// What the budget says of one more refusal from an address.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Spend {
    /// Within the budget: answered with its own problem.
    Within,
    /// Over it: answered `429`, to come back after this many seconds.
    Exhausted { retry_after_secs: u64 },
}

#[derive(Debug, Clone, Copy)]
struct Bucket {
    tokens: f64,
    at_us: i64,
}

/// A token bucket of refusals per client address: `burst` at once, refilled at `per_second`.
/// A request with a valid key is never charged, so a legitimate caller sharing an address with
/// a flood (or a proxy) is never limited. At most `max_addresses` buckets are kept: full ones
/// (idle addresses) are forgotten first, and addresses beyond the bound share one bucket.
#[derive(Debug)]
pub struct RefusalBudget {
    burst: f64,
    per_second: f64,
    max_addresses: usize,
    buckets: HashMap<IpAddr, Bucket>,
    shared: Bucket,
    /// When full buckets were last forgotten: at most once a second, so that a flood from
    /// ever new addresses does not make every refusal walk the whole map.
    swept_at_us: i64,
}

impl RefusalBudget {
    pub fn new(burst: u32, per_second: u32, max_addresses: usize) -> Self {
        let burst = f64::from(burst.max(1));
        Self {
            burst,
            per_second: f64::from(per_second.max(1)),
            max_addresses,
            buckets: HashMap::new(),
            shared: Bucket {
                tokens: burst,
                at_us: i64::MIN,
            },
            swept_at_us: i64::MIN,
        }
    }

    /// Charges one refusal to `address`'s block (`address_block`: an IPv6 address's /64;
    /// `None`: unknown, charged to the shared bucket).
    pub fn spend(&mut self, address: Option<IpAddr>, now_us: i64) -> Spend {
        let address = address.map(address_block);
        let (burst, per_second) = (self.burst, self.per_second);
        let bucket = match address {
            Some(address) => {
                if !self.buckets.contains_key(&address) && self.buckets.len() >= self.max_addresses
                {
                    self.forget_full(now_us);
                }
                if self.buckets.contains_key(&address) || self.buckets.len() < self.max_addresses {
                    self.buckets.entry(address).or_insert(Bucket {
                        tokens: burst,
                        at_us: now_us,
                    })
                } else {
                    &mut self.shared
                }
            }
            None => &mut self.shared,
        };
        refill(bucket, burst, per_second, now_us);
        if bucket.tokens >= 1.0 {
            bucket.tokens -= 1.0;
            Spend::Within
        } else {
            let wait = (1.0 - bucket.tokens) / per_second;
            Spend::Exhausted {
                retry_after_secs: (wait.ceil() as u64).max(1),
            }
        }
    }

    /// Forgets the buckets that have refilled (an address seen again starts full anyway), at
    /// most once a second.
    fn forget_full(&mut self, now_us: i64) {
        if now_us.saturating_sub(self.swept_at_us) < 1_000_000 {
            return;
        }
        self.swept_at_us = now_us;
        let (burst, per_second) = (self.burst, self.per_second);
        self.buckets.retain(|_, bucket| {
            refill(bucket, burst, per_second, now_us);
            bucket.tokens < burst
        });
    }

    pub fn addresses(&self) -> usize {
        self.buckets.len()
    }
}

fn refill(bucket: &mut Bucket, burst: f64, per_second: f64, now_us: i64) {
    if bucket.at_us == i64::MIN {
        bucket.at_us = now_us;
    }
    let elapsed = now_us.saturating_sub(bucket.at_us).max(0) as f64 / 1e6;
    bucket.tokens = (bucket.tokens + elapsed * per_second).min(burst);
    bucket.at_us = bucket.at_us.max(now_us);
}

#[cfg(test)]
mod tests {
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
}
