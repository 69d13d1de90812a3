//! DNS rebinding: a page on `evil.example`, whose name its owner makes resolve to the daemon's
//! address, calls the daemon as its own origin (so the `Origin` guard cannot tell), but every
//! request it sends says `Host: evil.example`. Only the names the daemon answers to are served
//! (`--allowed-host`, with `localhost` and the listen address's host by default); any other
//! gets `421 misdirected-request` before anything else runs, on every route (`/metrics` too).
//!
//! IP literals (`127.0.0.1`, `[::1]`, `10.1.2.3`) are always allowed: a rebinding needs a name,
//! and a daemon listening on `0.0.0.0` or `[::]` is reached at addresses it cannot list.
//!
//! A request must name one host (RFC 9112 §3.2): an HTTP/1.1 request without `Host`, or any
//! request with two or more, gets `400 invalid-request`, whatever `--allowed-host` says (`*`
//! too). With two, the check would pass on one name while a proxy or a log behind it reads the
//! other; without one, there is no name to check. An HTTP/1.0 request without `Host` is served:
//! that version did not have it.

use super::problem::Problem;
use super::AppState;
use crate::api::problem::ProblemType;
use axum::extract::{Request, State};
use axum::http::{header, Version};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use std::net::{Ipv4Addr, Ipv6Addr};

/// The host names the daemon answers to, lower case, without port or trailing dot.
#[derive(Debug, Clone)]
pub struct AllowedHosts {
    names: Vec<String>,
    /// `--allowed-host '*'`: no check (behind a proxy that checks, say).
    any: bool,
}

impl Default for AllowedHosts {
    /// `localhost` and IP literals.
    fn default() -> Self {
        Self {
            names: vec!["localhost".to_owned()],
            any: false,
        }
    }
}

#[derive(Debug, PartialEq, Eq, thiserror::Error)]
#[error("--allowed-host {0:?}: expected a host name such as fencewatch.internal (a port is ignored), or *")]
pub struct InvalidHost(pub String);

impl AllowedHosts {
    /// The default names, the host of `listen` (`HOST:PORT`) and each of `extra`.
    pub fn new<S: AsRef<str>>(extra: &[S], listen: &str) -> Result<Self, InvalidHost> {
        let mut allowed = Self::default();
        for name in extra {
            let name = name.as_ref();
            if name.trim() == "*" {
                allowed.any = true;
                continue;
            }
            let host = host_part(name.trim()).ok_or_else(|| InvalidHost(name.to_owned()))?;
            allowed.add(host);
        }
        // The listen address may be a name (`--listen fencewatch.internal:7420`).
        if let Some(host) = host_part(listen) {
            allowed.add(host);
        }
        Ok(allowed)
    }

    fn add(&mut self, host: Host) {
        if let Host::Name(name) = host {
            if !self.names.contains(&name) {
                self.names.push(name);
            }
        }
    }

    /// Whether a request naming `authority` (a `Host` value, or a request target's authority)
    /// may be served.
    pub fn allows(&self, authority: &str) -> bool {
        if self.any {
            return true;
        }
        match host_part(authority) {
            Some(Host::Ip) => true,
            Some(Host::Name(name)) => self.names.contains(&name),
            None => false,
        }
    }
}

#[derive(Debug, PartialEq, Eq)]
enum Host {
    Ip,
    Name(String),
}

/// The host of `HOST[:PORT]` or `[V6][:PORT]`: an IP literal, or a name in lower case without
/// a trailing dot. `None` when it is neither.
fn host_part(authority: &str) -> Option<Host> {
    if let Some(rest) = authority.strip_prefix('[') {
        let (inside, after) = rest.split_once(']')?;
        let port_ok = after.is_empty()
            || after
                .strip_prefix(':')
                .is_some_and(|port| port.bytes().all(|b| b.is_ascii_digit()));
        return (port_ok && inside.parse::<Ipv6Addr>().is_ok()).then_some(Host::Ip);
    }
    let host = match authority.rsplit_once(':') {
        Some((host, port)) if port.bytes().all(|b| b.is_ascii_digit()) => host,
        Some(_) => return None,
        None => authority,
    };
    if host.parse::<Ipv4Addr>().is_ok() {
        return Some(Host::Ip);
    }
    let name = host.strip_suffix('.').unwrap_or(host).to_ascii_lowercase();
    let well_formed = !name.is_empty()
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"-._".contains(&b));
    well_formed.then_some(Host::Name(name))
}

/// Middleware: refuses a request whose `Host`, or whose request target's authority, is not
/// allowed. The refusal is counted like every refusal before the fence.
pub(super) async fn guard(State(state): State<AppState>, request: Request, next: Next) -> Response {
    if let Some(problem) = not_one_host(&request) {
        return problem.into_response();
    }
    let allowed = &state.allowed_hosts;
    let host = request.headers().get(header::HOST);
    let bad_host = host.filter(|value| !value.to_str().is_ok_and(|text| allowed.allows(text)));
    let bad_target = request
        .uri()
        .authority()
        .filter(|authority| !allowed.allows(authority.as_str()));
    let shown = match (bad_host, bad_target) {
        (None, None) => return next.run(request).await,
        (Some(value), _) => String::from_utf8_lossy(value.as_bytes()).into_owned(),
        (None, Some(authority)) => authority.as_str().to_owned(),
    };
    let problem = Problem::new(
        ProblemType::MisdirectedRequest,
        format!(
        "this daemon does not answer to the host {shown:?}; serve --allowed-host NAME allows one"
    ),
    );
    super::refusal::refuse(&state, request, problem, None).await
}

/// The `400` for a request that does not name exactly one host, if it does not.
fn not_one_host(request: &Request) -> Option<Problem> {
    let hosts = request.headers().get_all(header::HOST).iter().count();
    let older = matches!(request.version(), Version::HTTP_09 | Version::HTTP_10);
    match hosts {
        1 => None,
        0 if older => None,
        0 => Some(Problem::invalid_request(
            "an HTTP/1.1 request must carry a Host header (RFC 9112, section 3.2)",
        )),
        n => Some(Problem::invalid_request(format!(
            "a request must carry one Host header, not {n} (RFC 9112, section 3.2)"
        ))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hosts_are_compared_by_name_without_port_or_case() {
        let allowed = AllowedHosts::new(&["FenceWatch.Internal:443"], "0.0.0.0:7420").unwrap();
        for host in [
            "localhost",
            "LOCALHOST:7420",
            "localhost.",
            "fencewatch.internal",
            "fencewatch.internal.:8080",
            "127.0.0.1:7420",
            "0.0.0.0",
            "10.1.2.3",
            "[::1]:7420",
            "[::]",
            "[2001:db8::1]",
        ] {
            assert!(allowed.allows(host), "{host}");
        }
        for host in [
            "evil.example",
            "evil.example:7420",
            "localhost.evil.example",
            "127.0.0.1.nip.io",
            "internal",
            "",
            "[::1",
            "[not-v6]",
            "localhost:port",
            "local host",
            "localhost/x",
        ] {
            assert!(!allowed.allows(host), "{host}");
        }
    }

    #[test]
    fn the_listen_address_names_itself_and_star_allows_all() {
        let named = AllowedHosts::new::<&str>(&[], "fencewatch.internal:7420").unwrap();
        assert!(named.allows("fencewatch.internal:7420"));
        assert!(!named.allows("evil.example"));
        let any = AllowedHosts::new(&["*"], "127.0.0.1:7420").unwrap();
        assert!(any.allows("evil.example"));
        assert_eq!(
            AllowedHosts::new(&["http://x/"], "127.0.0.1:0").unwrap_err(),
            InvalidHost("http://x/".into())
        );
        assert!(AllowedHosts::new(&[""], "127.0.0.1:0").is_err());
    }

    #[test]
    fn a_request_names_exactly_one_host() {
        let request = |version: Version, hosts: &[&str]| {
            let mut builder = axum::http::Request::builder()
                .uri("/healthz")
                .version(version);
            for host in hosts {
                builder = builder.header(header::HOST, *host);
            }
            builder.body(axum::body::Body::empty()).unwrap()
        };
        assert!(not_one_host(&request(Version::HTTP_11, &["localhost"])).is_none());
        assert!(not_one_host(&request(Version::HTTP_10, &[])).is_none());
        assert!(not_one_host(&request(Version::HTTP_10, &["localhost"])).is_none());
        let missing = not_one_host(&request(Version::HTTP_11, &[])).unwrap();
        assert_eq!(
            (missing.status().as_u16(), missing.kind.slug()),
            (400, "invalid-request")
        );
        for version in [Version::HTTP_10, Version::HTTP_11] {
            let two = not_one_host(&request(version, &["localhost", "evil.example"])).unwrap();
            assert_eq!(
                (two.status().as_u16(), two.kind.slug()),
                (400, "invalid-request")
            );
            assert!(two.detail.contains("not 2"), "{}", two.detail);
            assert!(not_one_host(&request(version, &["a", "a"])).is_some());
        }
    }
}
