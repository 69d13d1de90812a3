//! The lease authority's rules, pure: who may take a lease, renew it or release it, and what a
//! write carrying one of its tokens is worth. Times are microseconds since the epoch on the
//! authority's one clock (the database's).

use super::label::parse_printable;
use super::prefix;
use super::{FencingToken, LeaseName, ParseError, ResourceKey};
use serde::Serialize;

/// Who holds a lease: 1 to 128 printable ASCII.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize)]
#[serde(transparent)]
pub struct Holder(String);

impl Holder {
    pub const MAX_LEN: usize = 128;

    pub fn parse(text: &str) -> Result<Self, ParseError> {
        parse_printable(text, Self::MAX_LEN, "holder").map(Self)
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

/// How long a grant lasts: 1 ms to 24 h.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(transparent)]
pub struct Ttl(i64);

impl Ttl {
    pub const MAX_MS: i64 = 86_400_000;

    pub fn from_millis(ms: i64) -> Result<Self, ParseError> {
        if !(1..=Self::MAX_MS).contains(&ms) {
            return Err(ParseError::new(format!(
                "ttl_ms must be an integer from 1 to {}",
                Self::MAX_MS
            )));
        }
        Ok(Self(ms))
    }

    pub fn millis(self) -> i64 {
        self.0
    }

    pub fn micros(self) -> i64 {
        self.0 * 1000
    }
}

/// A lease as the authority stores it. `token` is both the current generation and the highest
/// ever issued: every grant takes the next one and nothing else changes it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LeaseRecord {
    pub name: LeaseName,
    pub holder: Holder,
    pub token: FencingToken,
    pub ttl: Ttl,
    pub expires_at_us: i64,
    pub released: bool,
}

impl LeaseRecord {
    /// Whether the current grant no longer confers authority at `now_us`.
    pub fn lapsed(&self, now_us: i64) -> bool {
        self.released || self.expires_at_us <= now_us
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AcquireDecision {
    /// Grant generation `token`; `lapsed` is the previous grant if it ran out unreleased
    /// (recorded as observed expiry).
    Grant {
        token: FencingToken,
        lapsed: Option<LeaseRecord>,
    },
    /// Someone else holds it until `current.expires_at_us`.
    Held { current: LeaseRecord },
}

/// A lease is free when never granted, released or expired; its holder may also take it again,
/// which issues a new generation and supersedes its own older one.
pub fn decide_acquire(
    current: Option<&LeaseRecord>,
    holder: &Holder,
    now_us: i64,
) -> Result<AcquireDecision, ParseError> {
    let Some(current) = current else {
        return Ok(AcquireDecision::Grant {
            token: FencingToken::new(1)?,
            lapsed: None,
        });
    };
    if !current.lapsed(now_us) && &current.holder != holder {
        return Ok(AcquireDecision::Held {
            current: current.clone(),
        });
    }
    let next = current
        .token
        .get()
        .checked_add(1)
        .ok_or_else(|| ParseError::new("this lease has issued every generation there is"))?;
    Ok(AcquireDecision::Grant {
        token: FencingToken::new(next)?,
        lapsed: (!current.released && current.expires_at_us <= now_us).then(|| current.clone()),
    })
}

/// Renewing or releasing needs the current grant: same holder, same generation, and (for a
/// renewal) not lapsed.
pub fn holds(
    current: Option<&LeaseRecord>,
    holder: &Holder,
    token: FencingToken,
    now_us: i64,
    allow_lapsed: bool,
) -> bool {
    current.is_some_and(|current| {
        &current.holder == holder
            && current.token == token
            && (allow_lapsed || !current.lapsed(now_us))
    })
}

/// What a release of `holder`'s generation `token` does to the grant as it stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReleaseDecision {
    /// The current grant, held or lapsed by expiry: end it now.
    Release,
    /// The current grant, already released: nothing to do, and nothing wrong.
    AlreadyReleased,
    /// Not the current grant (superseded, someone else's, or never acquired).
    Lost,
}

/// Releasing needs the current grant; releasing it after it expired, or twice, is fine.
pub fn decide_release(
    current: Option<&LeaseRecord>,
    holder: &Holder,
    token: FencingToken,
) -> ReleaseDecision {
    match current {
        Some(current) if &current.holder == holder && current.token == token => {
            if current.released {
                ReleaseDecision::AlreadyReleased
            } else {
                ReleaseDecision::Release
            }
        }
        _ => ReleaseDecision::Lost,
    }
}

/// Which resources a lease's tokens may fence.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum LeaseScope {
    /// Any resource.
    #[default]
    Any,
    /// Lease `L` fences `L` and `L/…` only (`prefix::covers`).
    Prefix,
}

impl LeaseScope {
    pub fn allows(self, lease: &LeaseName, key: &ResourceKey) -> bool {
        self.allows_under(lease.as_str(), key)
    }

    /// The rule for any name that scopes a write (a lease of the daemon's own, an external
    /// lock's prefix): the daemon's one prefix rule (`prefix::covers`), so `name` and
    /// `name/…`, never `name…` (`jobs` does not cover `jobs2`), as an API key's scopes match.
    pub fn allows_under(self, name: &str, key: &ResourceKey) -> bool {
        match self {
            LeaseScope::Any => true,
            LeaseScope::Prefix => prefix::covers_str(name, key.as_str()),
        }
    }
}

/// What the authority knows about the lease a write names, for the fence decision.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LeaseCheck {
    /// The highest generation the lease has issued; 0 when it was never acquired.
    pub issued: i64,
    /// The current grant has expired or was released.
    pub lapsed: bool,
    pub in_scope: bool,
    /// Refuse the current generation once lapsed (`serve --strict-leases`).
    pub strict: bool,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record(holder: &str, token: i64, expires_at_us: i64) -> LeaseRecord {
        LeaseRecord {
            name: LeaseName::parse("jobs").unwrap(),
            holder: Holder::parse(holder).unwrap(),
            token: FencingToken::new(token).unwrap(),
            ttl: Ttl::from_millis(1000).unwrap(),
            expires_at_us,
            released: false,
        }
    }

    #[test]
    fn generations_only_grow() {
        let w1 = Holder::parse("w1").unwrap();
        let w2 = Holder::parse("w2").unwrap();
        let first = decide_acquire(None, &w1, 0).unwrap();
        assert_eq!(
            first,
            AcquireDecision::Grant {
                token: FencingToken::new(1).unwrap(),
                lapsed: None
            }
        );
        let held = record("w1", 1, 100);
        assert!(matches!(
            decide_acquire(Some(&held), &w2, 50).unwrap(),
            AcquireDecision::Held { .. }
        ));
        // Expired: the next holder gets 2, and the lapse is reported.
        match decide_acquire(Some(&held), &w2, 100).unwrap() {
            AcquireDecision::Grant { token, lapsed } => {
                assert_eq!(token.get(), 2);
                assert_eq!(lapsed, Some(held.clone()));
            }
            other => panic!("{other:?}"),
        }
        // The holder itself may take it again, with a new generation.
        assert!(matches!(
            decide_acquire(Some(&held), &w1, 50).unwrap(),
            AcquireDecision::Grant { token, lapsed: None } if token.get() == 2
        ));
    }

    #[test]
    fn only_the_current_grant_renews() {
        let w1 = Holder::parse("w1").unwrap();
        let current = record("w1", 3, 100);
        let token = |t| FencingToken::new(t).unwrap();
        assert!(holds(Some(&current), &w1, token(3), 50, false));
        assert!(!holds(Some(&current), &w1, token(2), 50, false));
        assert!(!holds(
            Some(&current),
            &Holder::parse("w2").unwrap(),
            token(3),
            50,
            false
        ));
        assert!(!holds(Some(&current), &w1, token(3), 100, false), "expired");
        assert!(
            holds(Some(&current), &w1, token(3), 100, true),
            "release after expiry"
        );
        assert!(!holds(None, &w1, token(3), 0, true));
    }

    #[test]
    fn only_the_current_grant_releases() {
        let w1 = Holder::parse("w1").unwrap();
        let token = |t| FencingToken::new(t).unwrap();
        let current = record("w1", 3, 100);
        assert_eq!(
            decide_release(Some(&current), &w1, token(3)),
            ReleaseDecision::Release
        );
        let released = LeaseRecord {
            released: true,
            ..current.clone()
        };
        assert_eq!(
            decide_release(Some(&released), &w1, token(3)),
            ReleaseDecision::AlreadyReleased
        );
        let superseded = record("w2", 4, 200);
        assert_eq!(
            decide_release(Some(&superseded), &w1, token(3)),
            ReleaseDecision::Lost
        );
        assert_eq!(
            decide_release(Some(&current), &Holder::parse("w2").unwrap(), token(3)),
            ReleaseDecision::Lost
        );
        assert_eq!(decide_release(None, &w1, token(3)), ReleaseDecision::Lost);
    }

    #[test]
    fn prefix_scope() {
        let lease = LeaseName::parse("accounts").unwrap();
        let key = |k| ResourceKey::parse(k).unwrap();
        assert!(LeaseScope::Prefix.allows(&lease, &key("accounts")));
        assert!(LeaseScope::Prefix.allows(&lease, &key("accounts/totals")));
        assert!(!LeaseScope::Prefix.allows(&lease, &key("accountsx")));
        assert!(!LeaseScope::Prefix.allows(&lease, &key("billing/accounts")));
        assert!(LeaseScope::Any.allows(&lease, &key("billing")));
        // A lease named with a trailing '/' fences what is under it, as a key's scope would.
        let parent = LeaseName::parse("jobs/").unwrap();
        assert!(LeaseScope::Prefix.allows(&parent, &key("jobs/7")));
        assert!(!LeaseScope::Prefix.allows(&parent, &key("jobs2/7")));
        assert!(!LeaseScope::Prefix.allows(&parent, &key("jobs")));
    }

    #[test]
    fn ttl_bounds() {
        assert!(Ttl::from_millis(0).is_err());
        assert!(Ttl::from_millis(1).is_ok());
        assert!(Ttl::from_millis(86_400_000).is_ok());
        assert!(Ttl::from_millis(86_400_001).is_err());
    }
}
