//! External lock services as the authority of a write (`Fencing-Lease: etcd:PREFIX`), pure:
//! what an observation of the lock, together with the highest holder generation this daemon
//! has recorded, makes of a token.
//!
//! Every such service numbers its grants from one counter that only grows: etcd's create
//! revision of the lock key, ZooKeeper's czxid of the lock's sequential node, a Kubernetes
//! Lease's `leaseTransitions`. The rules below only need that number, so each service is an
//! `AuthorityKind` and the same rules judge all of them.

use super::lease::{LeaseCheck, LeaseScope};
use super::{LeaseName, ParseError, ResourceKey};

/// Which lock service issued a generation.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum AuthorityKind {
    /// etcd's `concurrency.Mutex` / `etcdctl lock`: the holder is the key under `PREFIX/`
    /// with the lowest create revision, and that revision is its generation.
    Etcd,
    /// ZooKeeper's lock recipe (kazoo `Lock`, Curator `InterProcessMutex`): the holder is the
    /// ephemeral sequential child of `/PATH` with the lowest sequence number, and its czxid is
    /// its generation.
    ZooKeeper,
}

impl AuthorityKind {
    pub const ALL: [AuthorityKind; 2] = [AuthorityKind::Etcd, AuthorityKind::ZooKeeper];

    /// The service a name as `Fencing-Lease` gives it belongs to, with the lock's name in it
    /// (`etcd:/locks/jobs` → etcd, `/locks/jobs`); `None` for a lease of the daemon's own.
    /// On bytes: the key scopes match names decoded from a path, which need not be UTF-8.
    pub fn of_name(name: &[u8]) -> Option<(AuthorityKind, &[u8])> {
        let colon = name.iter().position(|&b| b == b':')?;
        let (scheme, rest) = (&name[..colon], &name[colon + 1..]);
        Self::ALL
            .into_iter()
            .find(|kind| kind.scheme().as_bytes() == scheme)
            .map(|kind| (kind, rest))
    }

    /// The scheme a `Fencing-Lease` names it by.
    pub fn scheme(self) -> &'static str {
        match self {
            AuthorityKind::Etcd => "etcd",
            AuthorityKind::ZooKeeper => "zk",
        }
    }

    /// The `serve` flag that configures it.
    pub fn flag(self) -> &'static str {
        match self {
            AuthorityKind::Etcd => "etcd",
            AuthorityKind::ZooKeeper => "zookeeper",
        }
    }

    /// What its counter is called, for the audit's notes.
    pub fn counter(self) -> &'static str {
        match self {
            AuthorityKind::Etcd => "etcd revision",
            AuthorityKind::ZooKeeper => "ZooKeeper zxid",
        }
    }
}

/// A lock of an external service, as a write names it.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct ExternalLock {
    pub kind: AuthorityKind,
    /// The lock's name in its service (etcd: the key prefix).
    name: String,
}

impl ExternalLock {
    /// `None` when `lease` names a lease of the daemon's own; otherwise the lock, or why its
    /// name is no valid one.
    pub fn from_lease(lease: &LeaseName) -> Option<Result<Self, ParseError>> {
        let text = lease.as_str();
        let (kind, name) = AuthorityKind::of_name(text.as_bytes())?;
        // The scheme and its ':' are ASCII: the rest begins on a character boundary.
        Some(Self::parse(kind, &text[text.len() - name.len()..]))
    }

    pub fn parse(kind: AuthorityKind, name: &str) -> Result<Self, ParseError> {
        let scheme = kind.scheme();
        if name.is_empty() {
            return Err(ParseError::new(format!(
                "Fencing-Lease {scheme}: names no lock: the key prefix is empty"
            )));
        }
        // A LeaseName is printable ASCII already; checked again because a lock is also made
        // from configuration and tests, and a control character in a key prefix is never meant.
        if name.bytes().any(|b| !(0x20..=0x7e).contains(&b)) {
            return Err(ParseError::new(format!(
                "Fencing-Lease {scheme}: the key prefix must be printable ASCII"
            )));
        }
        if name.ends_with('/') {
            return Err(ParseError::new(format!(
                "Fencing-Lease {scheme}: give the lock's name without a trailing '/' (as to etcdctl lock, or kazoo's Lock)"
            )));
        }
        if kind == AuthorityKind::ZooKeeper
            && (!name.starts_with('/')
                || name.contains("//")
                || name.split('/').any(|p| p == "." || p == ".."))
        {
            return Err(ParseError::new(format!(
                "Fencing-Lease {scheme}: the lock's znode must be an absolute path such as zk:/locks/jobs"
            )));
        }
        Ok(Self {
            kind,
            name: name.to_owned(),
        })
    }

    pub fn name(&self) -> &str {
        &self.name
    }

    /// How the audit and the `Fencing-Lease` header name it: `etcd:PREFIX`.
    pub fn lease_name(&self) -> String {
        format!("{}:{}", self.kind.scheme(), self.name)
    }

    /// The etcd keys of the lock's contenders are `PREFIX/<lease id>`.
    pub fn key_prefix(&self) -> String {
        format!("{}/", self.name)
    }

    /// Under `serve --lease-scope prefix`, whether the lock's holder may fence `key`: the
    /// lock's name and the resources under it (`name` and `name/…`), the rule of the daemon's
    /// own leases. etcd keys are by custom rooted at `/` (`/locks/jobs`) and resource keys
    /// are not, so one leading `/` of the prefix is not part of the resource's name:
    /// `etcd:/locks/jobs` fences `locks/jobs` and `locks/jobs/…`, as `etcd:locks/jobs` does.
    /// Those are two locks in etcd, but one cluster numbers both with one revision counter,
    /// so the resource's own fence still orders their holders' writes.
    pub fn in_scope(&self, scope: LeaseScope, key: &ResourceKey) -> bool {
        let name = self.name.strip_prefix('/').unwrap_or(&self.name);
        scope.allows_under(name, key)
    }
}

/// The lock's holder when it was observed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LockHolder {
    /// The holder's key in the service (etcd: `PREFIX/<lease id>`; ZooKeeper: its node's path).
    pub key: String,
    /// Its generation (etcd: the key's create revision; ZooKeeper: the node's czxid).
    pub generation: i64,
    /// The name the lock client gave it, where it gave one (ZooKeeper: the node's data, such
    /// as kazoo's identifier or Curator's address).
    pub name: Option<String>,
}

impl LockHolder {
    /// How the audit and the lock's history name it: its key, with its name where it has one.
    pub fn label(&self) -> String {
        match &self.name {
            Some(name) => format!("{} ({name})", self.key),
            None => self.key.clone(),
        }
    }
}

/// One read of the lock from its service.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LockObservation {
    /// `None` when nobody held the lock.
    pub holder: Option<LockHolder>,
    /// The service's own counter when it answered (etcd: the response header's revision;
    /// ZooKeeper: the lock node's pzxid, the zxid of the last change to its children).
    pub revision: i64,
}

/// A lock of an external authority as read just before the write (`Fencing-Lease: etcd:…`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AuthorityView {
    pub lock: ExternalLock,
    pub observation: LockObservation,
    /// When the service answered (microseconds, the store's clock): the holder is recorded as
    /// seen then, which is before the write's audit row, however late its batch commits.
    pub observed_at_us: i64,
}

/// Whether an observation can be from the same service that issued what this daemon recorded.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Progress {
    Consistent,
    /// The service answered with a counter, or a holder generation, below a generation this
    /// daemon had recorded holding the lock before it asked: a restore or another cluster.
    /// Nothing it says can be obeyed.
    Regressed {
        recorded: i64,
        observed: i64,
    },
}

/// `recorded` must have been committed before the observation was made: then a healthy
/// service's counter is at least `recorded` (it issued it), and its holder generation too
/// (a holder has the lowest generation of its lock, and contenders only get higher ones).
pub fn progress(recorded: i64, observation: &LockObservation) -> Progress {
    let observed = observation
        .holder
        .as_ref()
        .map_or(observation.revision, |holder| {
            holder.generation.min(observation.revision)
        });
    if observed < recorded {
        Progress::Regressed { recorded, observed }
    } else {
        Progress::Consistent
    }
}

/// What the write's token is worth, for the fence decision (`fence::decide`).
///
/// `highest_seen` is the highest holder generation recorded for the lock when the write is
/// decided (it may have grown since the observation, when another write saw a newer holder).
/// The lock's latest known generation is the higher of it and the observed holder's:
/// - below it: superseded, even where the resource never saw the newer one;
/// - above it: no holder's (a waiter's key, a made-up number);
/// - equal: the holder's; lapsed when nobody held the lock. A recorded generation above the
///   observed holder's means the observation is older than another write's: its holder is
///   treated as current, so a late view never refuses the current holder.
///
/// `in_scope` is `ExternalLock::in_scope` for the write's resource: a write outside the lock's
/// resources is refused before any of the above (`403 out-of-scope`).
pub fn lease_check(
    observation: &LockObservation,
    highest_seen: i64,
    strict: bool,
    in_scope: bool,
) -> LeaseCheck {
    let observed = observation.holder.as_ref().map_or(0, |h| h.generation);
    LeaseCheck {
        issued: highest_seen.max(observed),
        lapsed: observation.holder.is_none(),
        in_scope,
        strict,
    }
}

/// The highest holder generation to record after the observation.
pub fn advanced(observation: &LockObservation, highest_seen: i64) -> i64 {
    observation
        .holder
        .as_ref()
        .map_or(highest_seen, |h| h.generation.max(highest_seen))
}

/// Two different owners presenting the same generation of one lock: the service gave one
/// grant to two workers, or one of them copied another's token.
pub fn shared_generation(
    recorded_owner: Option<&str>,
    recorded_generation: i64,
    token: i64,
    owner: Option<&str>,
) -> bool {
    match (recorded_owner, owner) {
        (Some(recorded), Some(owner)) => recorded_generation == token && recorded != owner,
        _ => false,
    }
}

/// The anomalies of an issuer that are counted and raised.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Anomaly {
    /// The service's generations went backwards.
    Regressed,
    /// One generation presented by two owners.
    SharedGeneration,
}

impl Anomaly {
    pub const ALL: [Anomaly; 2] = [Anomaly::Regressed, Anomaly::SharedGeneration];

    pub fn as_str(self) -> &'static str {
        match self {
            Anomaly::Regressed => "regressed",
            Anomaly::SharedGeneration => "shared_generation",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::{decide, Decision, FencingToken, ResourceState, WriteIntent};
    use proptest::prelude::*;

    fn held(generation: i64, revision: i64) -> LockObservation {
        LockObservation {
            holder: Some(LockHolder {
                key: format!("jobs/{generation:x}"),
                generation,
                name: None,
            }),
            revision,
        }
    }

    fn free(revision: i64) -> LockObservation {
        LockObservation {
            holder: None,
            revision,
        }
    }

    fn judge(
        state: ResourceState,
        observation: &LockObservation,
        highest_seen: i64,
        token: i64,
        strict: bool,
    ) -> Decision {
        decide(
            state,
            None,
            WriteIntent {
                token: FencingToken::new(token).unwrap(),
                body_sha256: "aa",
                expected_revision: None,
                lease: Some(lease_check(observation, highest_seen, strict, true)),
            },
        )
    }

    #[test]
    fn lease_names() {
        let lock = |text: &str| ExternalLock::from_lease(&LeaseName::parse(text).unwrap());
        assert_eq!(lock("jobs"), None, "a lease of the daemon's own");
        assert_eq!(
            lock("consul:jobs"),
            None,
            "no such authority: the daemon's own"
        );
        let zk = lock("zk:/locks/jobs").unwrap().unwrap();
        assert_eq!(zk.kind, AuthorityKind::ZooKeeper);
        assert_eq!(zk.name(), "/locks/jobs");
        assert_eq!(zk.lease_name(), "zk:/locks/jobs");
        assert!(lock("zk:locks/jobs").unwrap().is_err(), "relative");
        assert!(lock("zk:/locks//jobs").unwrap().is_err(), "empty part");
        assert!(lock("zk:/locks/../jobs").unwrap().is_err(), "dot-dot");
        assert!(lock("zk:/").unwrap().is_err(), "the root");
        let etcd = lock("etcd:/locks/jobs").unwrap().unwrap();
        assert_eq!(etcd.kind, AuthorityKind::Etcd);
        assert_eq!(etcd.name(), "/locks/jobs");
        assert_eq!(etcd.key_prefix(), "/locks/jobs/");
        assert_eq!(etcd.lease_name(), "etcd:/locks/jobs");
        assert!(lock("etcd:").unwrap().is_err(), "empty");
        assert!(lock("etcd:jobs/").unwrap().is_err(), "trailing slash");
        assert!(ExternalLock::parse(AuthorityKind::Etcd, "a\u{1}b").is_err());
        assert!(ExternalLock::parse(AuthorityKind::Etcd, "a\nb").is_err());
        // The same split on bytes, for the key scopes.
        let etcd = AuthorityKind::Etcd;
        assert_eq!(
            AuthorityKind::of_name(b"etcd:/locks/jobs"),
            Some((etcd, &b"/locks/jobs"[..]))
        );
        assert_eq!(AuthorityKind::of_name(b"etcd:"), Some((etcd, &b""[..])));
        assert_eq!(
            AuthorityKind::of_name(b"etcd:a:b"),
            Some((etcd, &b"a:b"[..]))
        );
        assert_eq!(AuthorityKind::of_name(b"jobs"), None);
        assert_eq!(
            AuthorityKind::of_name(b"zk:/jobs"),
            Some((AuthorityKind::ZooKeeper, &b"/jobs"[..]))
        );
        assert_eq!(AuthorityKind::of_name(b"jobs:etcd:x"), None);
    }

    #[test]
    fn lease_scope_prefix_covers_the_lock_and_what_is_under_it() {
        let key = |text: &str| ResourceKey::parse(text).unwrap();
        let lock = |name: &str| ExternalLock::parse(AuthorityKind::Etcd, name).unwrap();
        let prefix = LeaseScope::Prefix;
        let jobs = lock("jobs");
        assert!(jobs.in_scope(prefix, &key("jobs")));
        assert!(jobs.in_scope(prefix, &key("jobs/7")));
        assert!(jobs.in_scope(prefix, &key("jobs/7/log")));
        assert!(!jobs.in_scope(prefix, &key("jobs2")), "a longer name");
        assert!(!jobs.in_scope(prefix, &key("job")));
        assert!(!jobs.in_scope(prefix, &key("other/jobs")));
        assert!(
            !jobs.in_scope(prefix, &key("/jobs")),
            "the resource's '/' is its own"
        );
        // One leading '/' is etcd's root, not part of the resource's name.
        let rooted = lock("/locks/jobs");
        assert!(rooted.in_scope(prefix, &key("locks/jobs")));
        assert!(rooted.in_scope(prefix, &key("locks/jobs/7")));
        assert!(!rooted.in_scope(prefix, &key("locks/jobs2")));
        assert!(!rooted.in_scope(prefix, &key("locks")));
        // Only one: '//x' keeps the second.
        assert!(lock("//x").in_scope(prefix, &key("/x")));
        assert!(!lock("//x").in_scope(prefix, &key("x")));
        // Without the prefix scope, any resource.
        assert!(jobs.in_scope(LeaseScope::Any, &key("elsewhere")));
        assert!(rooted.in_scope(LeaseScope::Any, &key("/elsewhere")));
        // Out of scope is refused before the lock's generations are compared, whatever the
        // token: even the current holder's.
        for token in [9, 10, 11] {
            let decision = decide(
                ResourceState::FRESH,
                None,
                WriteIntent {
                    token: FencingToken::new(token).unwrap(),
                    body_sha256: "aa",
                    expected_revision: None,
                    lease: Some(lease_check(&held(10, 12), 0, false, false)),
                },
            );
            assert_eq!(decision, Decision::OutOfScope, "token {token}");
        }
    }

    #[test]
    fn the_contracts_rows() {
        let fresh = ResourceState::FRESH;
        // The current holder is decided as usual.
        assert!(matches!(
            judge(fresh, &held(10, 12), 0, 10, false),
            Decision::Accept {
                lease_lapsed: false,
                ..
            }
        ));
        // Below the holder, or below a generation seen holding: superseded, on a fresh resource.
        assert_eq!(
            judge(fresh, &held(10, 12), 0, 9, false),
            Decision::Superseded
        );
        assert_eq!(
            judge(fresh, &held(10, 12), 11, 10, false),
            Decision::Superseded
        );
        // A waiter's key or a made-up number.
        assert_eq!(
            judge(fresh, &held(10, 12), 0, 11, false),
            Decision::UnknownGeneration
        );
        // Nobody holds it: the last holder's is accepted as lapsed, or refused when strict.
        assert!(matches!(
            judge(fresh, &free(12), 10, 10, false),
            Decision::Accept {
                lease_lapsed: true,
                ..
            }
        ));
        assert_eq!(
            judge(fresh, &free(12), 10, 10, true),
            Decision::LeaseExpired
        );
        assert_eq!(judge(fresh, &free(12), 10, 9, false), Decision::Superseded);
        assert_eq!(
            judge(fresh, &free(12), 10, 11, false),
            Decision::UnknownGeneration
        );
        // Never seen held: nothing is known to be issued.
        assert_eq!(
            judge(fresh, &free(12), 0, 5, false),
            Decision::UnknownGeneration
        );
        // The resource's own fence still applies after the authority's.
        let state = ResourceState {
            highest_token: 20,
            revision: crate::domain::Revision::new(1).unwrap(),
        };
        assert_eq!(judge(state, &held(10, 12), 0, 10, false), Decision::Stale);
    }

    #[test]
    fn a_late_observation_does_not_refuse_the_holder_another_write_saw() {
        // Another write recorded holder 20 after this observation saw 10.
        assert!(matches!(
            judge(ResourceState::FRESH, &held(10, 15), 20, 20, false),
            Decision::Accept {
                lease_lapsed: false,
                ..
            }
        ));
        assert_eq!(
            judge(ResourceState::FRESH, &held(10, 15), 20, 10, false),
            Decision::Superseded
        );
    }

    #[test]
    fn regression() {
        assert_eq!(progress(0, &free(1)), Progress::Consistent);
        assert_eq!(progress(10, &held(10, 10)), Progress::Consistent);
        assert_eq!(progress(10, &held(12, 30)), Progress::Consistent);
        assert_eq!(
            progress(10, &free(9)),
            Progress::Regressed {
                recorded: 10,
                observed: 9
            },
            "the cluster's counter is below what it issued"
        );
        assert_eq!(
            progress(10, &held(4, 30)),
            Progress::Regressed {
                recorded: 10,
                observed: 4
            },
            "a holder older than one seen holding"
        );
    }

    #[test]
    fn shared_generations() {
        assert!(shared_generation(Some("a"), 7, 7, Some("b")));
        assert!(!shared_generation(Some("a"), 7, 7, Some("a")));
        assert!(!shared_generation(Some("a"), 7, 8, Some("b")));
        assert!(!shared_generation(None, 7, 7, Some("b")));
        assert!(!shared_generation(Some("a"), 7, 7, None));
    }

    fn observation() -> impl Strategy<Value = LockObservation> {
        (proptest::option::of(1i64..100), 0i64..50).prop_map(|(holder, extra)| match holder {
            Some(generation) => held(generation, generation + extra),
            None => free(extra + 1),
        })
    }

    proptest! {
        /// Nothing below the latest known generation is ever accepted, whatever the resource.
        #[test]
        fn never_accepts_below_the_latest_holder(
            observation in observation(),
            highest_seen in 0i64..100,
            token in 1i64..120,
            strict: bool,
            resource_highest in 0i64..120,
        ) {
            let state = ResourceState {
                highest_token: resource_highest,
                revision: crate::domain::Revision::new(resource_highest.min(1)).unwrap(),
            };
            let decision = judge(state, &observation, highest_seen, token, strict);
            let latest = advanced(&observation, highest_seen);
            if matches!(decision, Decision::Accept { .. }) {
                prop_assert_eq!(token, latest);
            }
            if token > latest {
                prop_assert_eq!(&decision, &Decision::UnknownGeneration);
            }
            if token < latest {
                prop_assert_eq!(&decision, &Decision::Superseded);
            }
        }

        /// The observed holder, not below anything recorded, is never refused by the authority.
        #[test]
        fn never_refuses_the_current_holder(
            generation in 1i64..100,
            extra in 0i64..50,
            below in 0i64..100,
            strict: bool,
        ) {
            let highest_seen = below.min(generation);
            let decision = judge(
                ResourceState::FRESH,
                &held(generation, generation + extra),
                highest_seen,
                generation,
                strict,
            );
            let accepted = matches!(decision, Decision::Accept { lease_lapsed: false, .. });
            prop_assert!(accepted);
            prop_assert_eq!(progress(highest_seen, &held(generation, generation + extra)), Progress::Consistent);
        }

        /// What is recorded only grows.
        #[test]
        fn the_record_only_grows(observation in observation(), highest_seen in 0i64..100) {
            prop_assert!(advanced(&observation, highest_seen) >= highest_seen);
        }
    }
}
