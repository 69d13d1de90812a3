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
mod tests;
