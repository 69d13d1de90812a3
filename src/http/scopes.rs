//! What an API key may do. A key line's scopes (`read`, `write[=PREFIX]`, `lease[=PREFIX]`,
//! `admin`) are matched against what a request needs, worked out from its method and path
//! alone, before any handler runs.

use axum::http::Method;

/// One scope of a key line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Scope {
    /// Every `GET` under `/v1`.
    Read,
    /// `PUT` and `GET` of resources whose key starts with the prefix (`""`: all).
    Write(String),
    /// Acquire, renew, release and `GET` of leases whose name starts with the prefix.
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
}

impl Grants {
    pub fn allows(&self, need: &Need) -> bool {
        let scopes = match self {
            Grants::Unscoped => return true,
            Grants::Scoped(scopes) => scopes,
        };
        scopes.iter().any(|scope| scope_allows(scope, need))
    }
}

fn scope_allows(scope: &Scope, need: &Need) -> bool {
    let under = |prefix: &str, name: &[u8]| name.starts_with(prefix.as_bytes());
    match (scope, need) {
        (Scope::Admin, _) | (_, Need::Nothing) => true,
        (Scope::Read, Need::Read | Need::ReadResource(_) | Need::ReadLease(_)) => true,
        (Scope::Write(prefix), Need::ReadResource(key) | Need::WriteResource(key)) => {
            under(prefix, key)
        }
        (Scope::Lease(prefix), Need::ReadLease(name) | Need::ActOnLease(name)) => {
            under(prefix, name)
        }
        _ => false,
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
    }
}
