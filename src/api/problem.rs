//! RFC 9457 problems (`application/problem+json`) as both ends see them: `ProblemType`, what
//! went wrong, with its status and title, and `ProblemSummary`, what a client reads of a
//! problem. The daemon's side, with the extension members, is the HTTP layer's `Problem`.

use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// What went wrong, as a problem's `type` member names it (its slug). The daemon builds every
/// problem from one and a client branches on one; the slug, status and title of each are in
/// `ProblemType::describe` and nowhere else.
///
/// A slug names what the client sees, which is not always the audit's name for the same
/// decision: a `revision-mismatch` is audited with outcome `revision_conflict`, an
/// `idempotency-key-reuse` with `idempotency_conflict`, and a `stale-token` as `stale` or
/// `superseded`. Both sets of names are fixed by the contract (API.md).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ProblemType {
    /// A malformed key, header, query or body.
    InvalidRequest,
    PayloadTooLarge,
    /// The body did not arrive within `--body-read-timeout`; the connection is closed.
    RequestTimeout,
    /// A `Host` that `--allowed-host` does not name (DNS rebinding).
    MisdirectedRequest,
    /// An address over its budget of refused requests; answered with `Retry-After`.
    TooManyRequests,
    /// A higher generation was accepted at the resource or issued by the lease.
    StaleToken,
    /// `If-Match` names another revision than the resource's.
    RevisionMismatch,
    /// The `Idempotency-Key` was recorded with another token or body.
    IdempotencyKeyReuse,
    /// No or a wrong API key.
    Unauthorized,
    /// The API key's scopes do not allow the request.
    Forbidden,
    /// A lease name under `fencewatch/`, which the daemon keeps for itself.
    ReservedName,
    /// A browser request from an origin `--allow-origin` does not name.
    CrossOrigin,
    /// A lease request whose body is not declared JSON.
    UnsupportedMediaType,
    /// A token the named lease or lock never issued.
    UnknownGeneration,
    /// The lease may not fence this resource (`--lease-scope prefix`).
    OutOfScope,
    /// The lease's current generation after its grant lapsed (`--strict-leases`).
    LeaseExpired,
    /// Someone else holds the lease.
    LeaseHeld,
    /// The caller no longer holds the lease.
    LeaseLost,
    NotFound,
    MethodNotAllowed,
    /// The database (or an authority) cannot be reached now; retry later.
    Unavailable,
    /// A bug; the details are in the daemon's log, never in the answer.
    Internal,
    /// A type this build does not know: a client reading a daemon newer than itself. The
    /// daemon never sends it. It reads and writes as `about:blank`, RFC 9457's type for a
    /// problem that means no more than its status.
    Unknown,
}

impl ProblemType {
    /// Every type the daemon sends, in declaration order (`Unknown`, which it never sends, is
    /// last and left out).
    pub const ALL: [ProblemType; 22] = [
        Self::InvalidRequest,
        Self::PayloadTooLarge,
        Self::RequestTimeout,
        Self::MisdirectedRequest,
        Self::TooManyRequests,
        Self::StaleToken,
        Self::RevisionMismatch,
        Self::IdempotencyKeyReuse,
        Self::Unauthorized,
        Self::Forbidden,
        Self::ReservedName,
        Self::CrossOrigin,
        Self::UnsupportedMediaType,
        Self::UnknownGeneration,
        Self::OutOfScope,
        Self::LeaseExpired,
        Self::LeaseHeld,
        Self::LeaseLost,
        Self::NotFound,
        Self::MethodNotAllowed,
        Self::Unavailable,
        Self::Internal,
    ];

    /// The slug, HTTP status and title of each type: the one table of them.
    const fn describe(self) -> (&'static str, u16, &'static str) {
        match self {
            Self::InvalidRequest => ("invalid-request", 400, "Invalid request"),
            Self::PayloadTooLarge => ("payload-too-large", 413, "Payload too large"),
            Self::RequestTimeout => ("request-timeout", 408, "Request timeout"),
            Self::MisdirectedRequest => ("misdirected-request", 421, "Misdirected request"),
            Self::TooManyRequests => ("too-many-requests", 429, "Too many requests"),
            Self::StaleToken => ("stale-token", 409, "Stale fencing token"),
            Self::RevisionMismatch => ("revision-mismatch", 412, "Revision mismatch"),
            Self::IdempotencyKeyReuse => (
                "idempotency-key-reuse",
                422,
                "Idempotency key reused for another request",
            ),
            Self::Unauthorized => ("unauthorized", 401, "Unauthorized"),
            Self::Forbidden => ("forbidden", 403, "Forbidden"),
            Self::ReservedName => ("reserved-name", 403, "Reserved lease name"),
            Self::CrossOrigin => ("cross-origin", 403, "Cross-origin request refused"),
            Self::UnsupportedMediaType => ("unsupported-media-type", 415, "Unsupported media type"),
            Self::UnknownGeneration => ("unknown-generation", 403, "Unknown generation"),
            Self::OutOfScope => ("out-of-scope", 403, "Resource outside the lease's scope"),
            Self::LeaseExpired => ("lease-expired", 409, "Lease expired"),
            Self::LeaseHeld => ("lease-held", 409, "Lease held"),
            Self::LeaseLost => ("lease-lost", 409, "Lease lost"),
            Self::NotFound => ("not-found", 404, "Not found"),
            Self::MethodNotAllowed => ("method-not-allowed", 405, "Method not allowed"),
            Self::Unavailable => ("unavailable", 503, "Service unavailable"),
            Self::Internal => ("internal", 500, "Internal error"),
            Self::Unknown => ("about:blank", 500, "Unknown problem"),
        }
    }

    /// The `type` member: `stale-token`, `lease-held`, …
    pub const fn slug(self) -> &'static str {
        self.describe().0
    }

    /// The HTTP status the daemon answers this type with.
    pub const fn status(self) -> u16 {
        self.describe().1
    }

    /// The `title` member.
    pub const fn title(self) -> &'static str {
        self.describe().2
    }

    /// The type a slug names; `Unknown` for one this build does not know.
    pub fn from_slug(slug: &str) -> Self {
        Self::ALL
            .into_iter()
            .find(|kind| kind.slug() == slug)
            .unwrap_or(Self::Unknown)
    }
}

impl std::fmt::Display for ProblemType {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.slug())
    }
}

impl Serialize for ProblemType {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.slug())
    }
}

impl<'de> Deserialize<'de> for ProblemType {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let slug = std::borrow::Cow::<'de, str>::deserialize(deserializer)?;
        Ok(Self::from_slug(&slug))
    }
}

/// What a client reads of a problem: its type, to branch on, and its detail, to show.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
pub struct ProblemSummary {
    /// Absent from an answer that is not a problem.
    #[serde(rename = "type", default)]
    pub kind: Option<ProblemType>,
    #[serde(default)]
    pub detail: Option<String>,
}

impl ProblemSummary {
    /// Reads a body as a problem; a body that is not one reads as an empty summary.
    pub fn read(body: &[u8]) -> Self {
        serde_json::from_slice(body).unwrap_or_default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The contract's statuses (API.md) and the titles clients have always been sent, written
    /// out apart from `describe` so that a slip in either shows here.
    const CONTRACT: [(&str, u16, &str); 22] = [
        ("invalid-request", 400, "Invalid request"),
        ("payload-too-large", 413, "Payload too large"),
        ("request-timeout", 408, "Request timeout"),
        ("misdirected-request", 421, "Misdirected request"),
        ("too-many-requests", 429, "Too many requests"),
        ("stale-token", 409, "Stale fencing token"),
        ("revision-mismatch", 412, "Revision mismatch"),
        (
            "idempotency-key-reuse",
            422,
            "Idempotency key reused for another request",
        ),
        ("unauthorized", 401, "Unauthorized"),
        ("forbidden", 403, "Forbidden"),
        ("reserved-name", 403, "Reserved lease name"),
        ("cross-origin", 403, "Cross-origin request refused"),
        ("unsupported-media-type", 415, "Unsupported media type"),
        ("unknown-generation", 403, "Unknown generation"),
        ("out-of-scope", 403, "Resource outside the lease's scope"),
        ("lease-expired", 409, "Lease expired"),
        ("lease-held", 409, "Lease held"),
        ("lease-lost", 409, "Lease lost"),
        ("not-found", 404, "Not found"),
        ("method-not-allowed", 405, "Method not allowed"),
        ("unavailable", 503, "Service unavailable"),
        ("internal", 500, "Internal error"),
    ];

    #[test]
    fn every_type_has_the_contracts_slug_status_and_title() {
        for (kind, (slug, status, title)) in ProblemType::ALL.into_iter().zip(CONTRACT) {
            assert_eq!(
                (kind.slug(), kind.status(), kind.title()),
                (slug, status, title),
                "{kind:?}"
            );
        }
    }

    #[test]
    fn every_type_round_trips_through_its_slug() {
        for kind in ProblemType::ALL.into_iter().chain([ProblemType::Unknown]) {
            assert_eq!(ProblemType::from_slug(kind.slug()), kind);
            let json = serde_json::to_string(&kind).unwrap();
            assert_eq!(json, format!("\"{}\"", kind.slug()));
            assert_eq!(serde_json::from_str::<ProblemType>(&json).unwrap(), kind);
        }
    }

    /// `ALL` lists the variants in declaration order, each once, and `Unknown` comes after
    /// them: a variant added but not listed moves `Unknown` and fails here.
    #[test]
    fn all_lists_every_known_type_once() {
        for (index, kind) in ProblemType::ALL.into_iter().enumerate() {
            assert_eq!(kind as usize, index, "{kind:?}");
        }
        assert_eq!(ProblemType::Unknown as usize, ProblemType::ALL.len());
    }

    #[test]
    fn a_slug_from_a_newer_daemon_reads_as_unknown() {
        assert_eq!(
            ProblemType::from_slug("quota-exceeded"),
            ProblemType::Unknown
        );
        let summary = ProblemSummary::read(
            br#"{"type":"quota-exceeded","title":"Quota exceeded","status":429,"detail":"d"}"#,
        );
        assert_eq!(summary.kind, Some(ProblemType::Unknown));
        assert_eq!(summary.detail.as_deref(), Some("d"));
    }

    #[test]
    fn a_summary_reads_the_type_of_a_problem_and_nothing_of_another_body() {
        let stale = ProblemSummary::read(
            br#"{"type":"stale-token","title":"Stale fencing token","status":409,"detail":"d"}"#,
        );
        assert_eq!(stale.kind, Some(ProblemType::StaleToken));
        assert_eq!(ProblemSummary::read(br#"{"resource":"a"}"#).kind, None);
        assert_eq!(ProblemSummary::read(b"not json"), ProblemSummary::default());
    }

    /// Every `STATUS slug` the API's reference names (its tables and its prose) agrees with
    /// `describe`.
    #[test]
    fn the_statuses_the_api_reference_names_are_the_types_statuses() {
        let reference = include_str!("../../docs/api.md").replace('`', "");
        let mut checked = 0;
        for kind in ProblemType::ALL {
            for (at, _) in reference.match_indices(&format!(" {}", kind.slug())) {
                // `409 stale-token`, or a table row's `| 421, 403, 401, 429 | misdirected-request`.
                let before = reference[..at].trim_end_matches(['|', ' ']);
                let Some(named) = before
                    .rsplit(|c: char| !(c.is_ascii_digit() || c == ',' || c == ' '))
                    .next()
                else {
                    continue;
                };
                let statuses: Result<Vec<u16>, _> = named
                    .split(',')
                    .map(|status| status.trim().parse())
                    .collect();
                let Ok(statuses) = statuses else {
                    continue;
                };
                if !statuses.iter().all(|status| (400..600).contains(status)) {
                    continue;
                }
                assert!(
                    statuses.contains(&kind.status()),
                    "docs/api.md names {} with {named}",
                    kind.slug()
                );
                checked += 1;
            }
        }
        assert!(
            checked >= 30,
            "found only {checked} statuses in docs/api.md"
        );
    }

    #[test]
    fn the_openapi_description_lists_every_type() {
        let yaml: serde_yaml_ng::Value =
            serde_yaml_ng::from_str(include_str!("../../docs/openapi.yaml")).unwrap();
        let listed: Vec<&str> = yaml["components"]["schemas"]["Problem"]["properties"]["type"]
            ["enum"]
            .as_sequence()
            .unwrap()
            .iter()
            .map(|slug| slug.as_str().unwrap())
            .collect();
        let slugs: Vec<&str> = ProblemType::ALL.iter().map(|kind| kind.slug()).collect();
        assert_eq!(listed, slugs);
    }
}
