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
mod tests;
