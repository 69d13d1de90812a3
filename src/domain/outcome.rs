use serde::{Deserialize, Serialize};

/// What became of one write attempt; every attempt that names a resource gets exactly one.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Outcome {
    /// Applied: the fence moved to (or stayed at) the write's token.
    Accepted,
    /// A repeat of a recorded operation: its stored result was returned, nothing applied.
    Replayed,
    /// Rejected: the resource had already accepted a higher generation.
    Stale,
    /// Rejected: the lease had issued a newer generation (a zombie owner), even if the
    /// resource had not seen it.
    Superseded,
    /// Rejected: the lease's current generation, but its grant had lapsed
    /// (`--strict-leases`).
    LeaseExpired,
    /// Rejected: `If-Match` named another revision (`Decision::RevisionMismatch`). The audit
    /// calls it `revision_conflict` and the answer `revision-mismatch`: the contract fixes both.
    RevisionConflict,
    /// Rejected: an `Idempotency-Key` reused with another token or body (`Decision::IdempotencyKeyReuse`).
    /// The audit calls it `idempotency_conflict` and the answer `idempotency-key-reuse`: the
    /// contract fixes both.
    IdempotencyConflict,
    /// Rejected: malformed request.
    Invalid,
    /// Rejected: the caller was not allowed to make it (no or wrong API key, a token the lease
    /// never issued, a resource outside the lease's scope).
    Unauthorized,
    /// Not a write: an operator set the resource's highest accepted generation by hand
    /// (`POST /v1/resources/{key}/reset`); the value stayed.
    Reset,
}

impl Outcome {
    pub const ALL: [Outcome; 10] = [
        Outcome::Accepted,
        Outcome::Replayed,
        Outcome::Stale,
        Outcome::Superseded,
        Outcome::LeaseExpired,
        Outcome::RevisionConflict,
        Outcome::IdempotencyConflict,
        Outcome::Invalid,
        Outcome::Unauthorized,
        Outcome::Reset,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Outcome::Accepted => "accepted",
            Outcome::Replayed => "replayed",
            Outcome::Stale => "stale",
            Outcome::Superseded => "superseded",
            Outcome::LeaseExpired => "lease_expired",
            Outcome::RevisionConflict => "revision_conflict",
            Outcome::IdempotencyConflict => "idempotency_conflict",
            Outcome::Invalid => "invalid",
            Outcome::Unauthorized => "unauthorized",
            Outcome::Reset => "reset",
        }
    }

    pub fn parse(text: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|o| o.as_str() == text)
    }

    /// Whether the attempt changed nothing because the fence or a precondition refused it.
    pub fn is_rejection(self) -> bool {
        !matches!(self, Outcome::Accepted | Outcome::Replayed | Outcome::Reset)
    }
}

impl std::fmt::Display for Outcome {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip_and_match_serde() {
        for outcome in Outcome::ALL {
            assert_eq!(Outcome::parse(outcome.as_str()), Some(outcome));
            assert_eq!(
                serde_json::to_string(&outcome).unwrap(),
                format!("\"{}\"", outcome.as_str())
            );
        }
        assert_eq!(Outcome::parse("nope"), None);
    }

    #[test]
    fn a_reset_is_no_rejection() {
        assert!(!Outcome::Reset.is_rejection());
        assert!(Outcome::Stale.is_rejection());
        assert!(!Outcome::Accepted.is_rejection());
    }
}
