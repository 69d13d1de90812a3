//! What an API key may do. A key line's scopes (`read`, `write[=PREFIX]`, `lease[=PREFIX]`,
//! `admin`) are matched against what a request needs, worked out from its method, its path and,
//! for a write, the lease it names, before any handler runs.
//!
//! Every prefix is matched by the daemon's one rule (`domain::prefix::covers`): `billing`
//! covers `billing` and `billing/…`, `billing/` what is under it, neither `billingsecrets`.

use super::write_request;
use crate::domain::authority::AuthorityKind;
use crate::domain::prefix;
use axum::http::{HeaderMap, Method};

/// One scope of a key line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Scope {
    /// Every `GET` under `/v1`.
    Read,
    /// `PUT` and `GET` of resources the prefix covers (`""`: all).
    Write(String),
    /// Acquire, renew, release and `GET` of leases the prefix covers, and naming them in a
    /// write's `Fencing-Lease` (`""`: all, external locks too; `etcd:PREFIX`: etcd's locks).
    Lease(String),
    /// Everything.
    Admin,
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown scope {0:?}: use read, write, write=PREFIX, lease, lease=PREFIX or admin")]
pub struct UnknownScope(pub String);

impl Scope {
    pub fn parse(word: &str) -> Result<Self, UnknownScope> {
        let (name, prefix) = match word.split_once('=') {
            Some((name, prefix)) if !prefix.is_empty() => (name, Some(prefix)),
            Some(_) => return Err(UnknownScope(word.to_owned())),
            None => (word, None),
        };
        let prefix = || prefix.unwrap_or_default().to_owned();
        match (name, prefix) {
            ("read", _) if word == "read" => Ok(Scope::Read),
            ("admin", _) if word == "admin" => Ok(Scope::Admin),
            ("write", prefix) => Ok(Scope::Write(prefix())),
            ("lease", prefix) => Ok(Scope::Lease(prefix())),
            _ => Err(UnknownScope(word.to_owned())),
        }
    }
}

/// Everything a key line allows.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Grants {
    /// A line without scopes: full access, as before scopes existed.
    Unscoped,
    Scoped(Vec<Scope>),
}

/// What a request needs, from its method and path. Names are the percent-decoded bytes, so that
/// a prefix is matched against what the handler will see, whatever the encoding.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Need {
    /// A read of the monitoring side: audit, overlaps, stats, alerts, events, lease history.
    Read,
    /// `GET /v1/resources/KEY`.
    ReadResource(Vec<u8>),
    /// `PUT /v1/resources/KEY`.
    WriteResource(Vec<u8>),
    /// `GET /v1/leases/NAME`.
    ReadLease(Vec<u8>),
    /// `POST /v1/leases/NAME/ACTION`.
    ActOnLease(Vec<u8>),
    /// A write's `Fencing-Lease: NAME`: its token is taken for a generation of that lease (or
    /// external lock), so naming it is using the lease.
    FenceWithLease(Vec<u8>),
    /// `POST /v1/resources/KEY/reset`, the only `POST` there: operators only.
    Admin,
    /// Nothing any route would do (an unknown method or path): the router answers it.
    Nothing,
}

pub const RESOURCES: &str = "/v1/resources/";
pub const LEASES: &str = "/v1/leases/";

fn decoded(raw: &str) -> Vec<u8> {
    percent_encoding::percent_decode_str(raw).collect()
}

impl Need {
    pub fn of(method: &Method, path: &str) -> Need {
        let reading = *method == Method::GET || *method == Method::HEAD;
        if let Some(key) = path.strip_prefix(RESOURCES) {
            return match *method {
                Method::PUT => Need::WriteResource(decoded(key)),
                Method::POST => Need::Admin,
                _ if reading => Need::ReadResource(decoded(key)),
                _ => Need::Nothing,
            };
        }
        if let Some(rest) = path.strip_prefix(LEASES) {
            return match *method {
                Method::POST => match rest.rsplit_once('/') {
                    Some((name, _action)) => Need::ActOnLease(decoded(name)),
                    None => Need::Nothing,
                },
                _ if reading => Need::ReadLease(decoded(rest)),
                _ => Need::Nothing,
            };
        }
        if reading {
            Need::Read
        } else {
            Need::Nothing
        }
    }

    /// Everything a request needs: what its method and path need and, for a write, the lease
    /// its `Fencing-Lease` names, read by the write's own parser (`write_request`), so the
    /// scope is checked on the very name the fence will be. A header the parser refuses names
    /// no lease, and the write is refused as invalid.
    pub fn all_of(method: &Method, path: &str, headers: &HeaderMap) -> Vec<Need> {
        let need = Need::of(method, path);
        let lease = match need {
            Need::WriteResource(_) => write_request::named_lease(headers),
            _ => None,
        };
        let mut needs = vec![need];
        needs.extend(lease.map(|lease| Need::FenceWithLease(lease.as_str().as_bytes().to_vec())));
        needs
    }
}

impl Grants {
    pub fn allows(&self, need: &Need) -> bool {
        let scopes = match self {
            Grants::Unscoped => return true,
            Grants::Scoped(scopes) => scopes,
        };
        scopes.iter().any(|scope| scope_allows(scope, need))
    }

    /// The first of `needs` these grants do not allow, if any.
    pub fn refused<'n>(&self, needs: &'n [Need]) -> Option<&'n Need> {
        needs.iter().find(|need| !self.allows(need))
    }
}

fn scope_allows(scope: &Scope, need: &Need) -> bool {
    match (scope, need) {
        (Scope::Admin, _) | (_, Need::Nothing) => true,
        (Scope::Read, Need::Read | Need::ReadResource(_) | Need::ReadLease(_)) => true,
        (Scope::Write(prefix), Need::ReadResource(key) | Need::WriteResource(key)) => {
            prefix::covers(prefix.as_bytes(), key)
        }
        (
            Scope::Lease(prefix),
            Need::ReadLease(name) | Need::ActOnLease(name) | Need::FenceWithLease(name),
        ) => lease_covers(prefix, name),
        _ => false,
    }
}

/// Whether `lease=PREFIX` covers the lease or lock `name`. A lock of an external service
/// (`etcd:/locks/jobs`) is no lease of the daemon's: only a prefix naming the same service
/// (`etcd:/locks/`, `etcd:` for all of its locks) covers it, matched on the lock's name by the
/// one prefix rule, and a plain `lease=PREFIX` covers the daemon's leases alone. `lease`
/// (no prefix) covers everything.
fn lease_covers(scope_prefix: &str, name: &[u8]) -> bool {
    if scope_prefix.is_empty() {
        return true;
    }
    let (scope_authority, scope_rest) = authority_of(scope_prefix.as_bytes());
    let (name_authority, name_rest) = authority_of(name);
    scope_authority == name_authority && prefix::covers(scope_rest, name_rest)
}

/// The external service a lease name belongs to (`None`: the daemon), and the name within it.
fn authority_of(name: &[u8]) -> (Option<AuthorityKind>, &[u8]) {
    match AuthorityKind::of_name(name) {
        Some((kind, rest)) => (Some(kind), rest),
        None => (None, name),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn grants(words: &[&str]) -> Grants {
        Grants::Scoped(words.iter().map(|w| Scope::parse(w).unwrap()).collect())
    }

    #[test]
    fn scopes_parse_and_refuse_the_unknown() {
        assert_eq!(Scope::parse("read"), Ok(Scope::Read));
        assert_eq!(Scope::parse("admin"), Ok(Scope::Admin));
        assert_eq!(Scope::parse("write"), Ok(Scope::Write(String::new())));
        assert_eq!(
            Scope::parse("write=billing/"),
            Ok(Scope::Write("billing/".into()))
        );
        assert_eq!(Scope::parse("lease=jobs"), Ok(Scope::Lease("jobs".into())));
        for bad in [
            "", "reads", "read=x", "admin=x", "write=", "delete", "WRITE",
        ] {
            assert!(Scope::parse(bad).is_err(), "{bad:?} must be refused");
        }
    }

    #[test]
    fn requests_need_what_their_method_and_path_say() {
        let get = Method::GET;
        assert_eq!(
            Need::of(&Method::PUT, "/v1/resources/billing%2Fa"),
            Need::WriteResource(b"billing/a".to_vec())
        );
        assert_eq!(
            Need::of(&get, "/v1/resources/a/b"),
            Need::ReadResource(b"a/b".to_vec())
        );
        assert_eq!(
            Need::of(&Method::POST, "/v1/leases/jobs%2Fa/acquire"),
            Need::ActOnLease(b"jobs/a".to_vec())
        );
        assert_eq!(
            Need::of(&get, "/v1/leases/jobs/a"),
            Need::ReadLease(b"jobs/a".to_vec())
        );
        // A lease's history is a monitoring read, like the audit.
        assert_eq!(Need::of(&get, "/v1/lease-history/jobs%2Fa"), Need::Read);
        assert_eq!(Need::of(&get, "/v1/audit"), Need::Read);
        assert_eq!(Need::of(&get, "/v1/events"), Need::Read);
        assert_eq!(Need::of(&Method::DELETE, "/v1/resources/a"), Need::Nothing);
    }

    #[test]
    fn each_scope_allows_its_part_and_nothing_more() {
        let worker = grants(&["write=billing/", "lease=billing/"]);
        assert!(worker.allows(&Need::WriteResource(b"billing/totals".to_vec())));
        assert!(worker.allows(&Need::ReadResource(b"billing/totals".to_vec())));
        assert!(worker.allows(&Need::ActOnLease(b"billing/leader".to_vec())));
        assert!(!worker.allows(&Need::WriteResource(b"payroll/x".to_vec())));
        assert!(!worker.allows(&Need::ActOnLease(b"payroll".to_vec())));
        assert!(!worker.allows(&Need::Read), "no audit or events");

        let dashboard = grants(&["read"]);
        assert!(dashboard.allows(&Need::Read));
        assert!(dashboard.allows(&Need::ReadResource(b"x".to_vec())));
        assert!(dashboard.allows(&Need::ReadLease(b"x".to_vec())));
        assert!(!dashboard.allows(&Need::WriteResource(b"x".to_vec())));
        assert!(!dashboard.allows(&Need::ActOnLease(b"x".to_vec())));

        for everything in [grants(&["admin"]), Grants::Unscoped] {
            assert!(everything.allows(&Need::WriteResource(b"x".to_vec())));
            assert!(everything.allows(&Need::ActOnLease(b"x".to_vec())));
            assert!(everything.allows(&Need::Read));
        }
        let writer = grants(&["write"]);
        assert!(writer.allows(&Need::WriteResource(b"anything".to_vec())));
        assert!(!writer.allows(&Need::ActOnLease(b"anything".to_vec())));
        assert!(!writer.allows(&Need::FenceWithLease(b"anything".to_vec())));
    }

    #[test]
    fn prefixes_cover_whole_segments() {
        let narrow = grants(&["write=billing", "lease=jobs"]);
        let write = |key: &str| Need::WriteResource(key.as_bytes().to_vec());
        let act = |name: &str| Need::ActOnLease(name.as_bytes().to_vec());
        assert!(narrow.allows(&write("billing")));
        assert!(narrow.allows(&write("billing/x")));
        assert!(!narrow.allows(&write("billingsecrets")));
        assert!(!narrow.allows(&write("billing2/x")));
        assert!(narrow.allows(&act("jobs")));
        assert!(narrow.allows(&act("jobs/a")));
        assert!(!narrow.allows(&act("jobs2")));
        let slashed = grants(&["write=billing/"]);
        assert!(slashed.allows(&write("billing/x")));
        assert!(!slashed.allows(&write("billing")));
        assert!(!slashed.allows(&write("billing2/x")));
    }

    #[test]
    fn a_write_naming_a_lease_needs_its_scope() {
        let mut headers = HeaderMap::new();
        let put =
            |headers: &HeaderMap| Need::all_of(&Method::PUT, "/v1/resources/billing%2Fx", headers);
        assert_eq!(put(&headers), [Need::WriteResource(b"billing/x".to_vec())]);
        headers.insert("fencing-lease", "payroll/leader".parse().unwrap());
        let needs = put(&headers);
        assert_eq!(
            needs,
            [
                Need::WriteResource(b"billing/x".to_vec()),
                Need::FenceWithLease(b"payroll/leader".to_vec())
            ]
        );
        let intruder = grants(&["write=billing/"]);
        assert_eq!(intruder.refused(&needs), Some(&needs[1]));
        let billing = grants(&["write=billing/", "lease=billing/"]);
        assert_eq!(billing.refused(&needs), Some(&needs[1]));
        for allowed in [
            grants(&["write=billing/", "lease=payroll/"]),
            grants(&["write=billing/", "lease"]),
            grants(&["admin"]),
            Grants::Unscoped,
        ] {
            assert_eq!(allowed.refused(&needs), None, "{allowed:?}");
        }
        // Only a write's lease is a need: a read names none, and a header the write's parser
        // refuses (given twice) names none either; that write is refused as invalid.
        assert_eq!(
            Need::all_of(&Method::GET, "/v1/resources/billing%2Fx", &headers),
            [Need::ReadResource(b"billing/x".to_vec())]
        );
        headers.append("fencing-lease", "billing/leader".parse().unwrap());
        assert_eq!(put(&headers).len(), 1);
    }

    #[test]
    fn external_locks_are_covered_only_by_scopes_naming_their_service() {
        let lock = |name: &str| Need::FenceWithLease(name.as_bytes().to_vec());
        let daemon = grants(&["lease=locks/"]);
        assert!(daemon.allows(&lock("locks/jobs")));
        assert!(!daemon.allows(&lock("etcd:locks/jobs")));
        assert!(!daemon.allows(&lock("etcd:/locks/jobs")));
        let jobs = grants(&["lease=etcd:/locks/jobs"]);
        assert!(jobs.allows(&lock("etcd:/locks/jobs")));
        assert!(jobs.allows(&lock("etcd:/locks/jobs/7")));
        assert!(!jobs.allows(&lock("etcd:/locks/jobs2")));
        assert!(!jobs.allows(&lock("etcd:locks/jobs")));
        assert!(!jobs.allows(&lock("/locks/jobs")), "the daemon's lease");
        let etcd = grants(&["lease=etcd:"]);
        assert!(etcd.allows(&lock("etcd:/locks/jobs")));
        assert!(etcd.allows(&lock("etcd:jobs")));
        assert!(!etcd.allows(&lock("jobs")));
        assert!(!etcd.allows(&Need::ActOnLease(b"jobs".to_vec())));
        let every = grants(&["lease"]);
        assert!(every.allows(&lock("etcd:/locks/jobs")));
        assert!(every.allows(&lock("jobs")));
    }

    #[test]
    fn only_admins_reset() {
        let reset = Need::of(&Method::POST, "/v1/resources/billing%2Fx/reset");
        assert_eq!(reset, Need::Admin);
        for other in [
            grants(&["write"]),
            grants(&["write=billing/", "lease", "read"]),
        ] {
            assert!(!other.allows(&reset), "{other:?}");
        }
        assert!(grants(&["admin"]).allows(&reset));
        assert!(Grants::Unscoped.allows(&reset));
    }
}
