//! An operator setting a resource's highest accepted generation by hand
//! (`POST /v1/resources/{key}/reset`), pure: what a reset carries and what the audit records of
//! it. The way back from a runaway token: one write with 9223372036854775807 would otherwise
//! fence its resource against every generation there is, for good.
//!
//! A reset moves only the fence. The value and its revision stay (nothing was written, so an
//! `ETag` a client holds stays true), and leases keep their counters: the lease authority's
//! generations are its own, never the resource's.

use super::{AuditEntry, FencingToken, Outcome, ParseError, ResourceKey, Revision};
use chrono::{DateTime, Utc};

/// Why the operator reset: 1 to 512 characters, none of them a control character, kept as the
/// audit row's `detail`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ResetReason(String);

impl ResetReason {
    pub const MAX_CHARS: usize = 512;

    pub fn parse(text: &str) -> Result<Self, ParseError> {
        let chars = text.chars().count();
        if chars == 0 {
            return Err(ParseError::new(
                "reason is empty: say why the fence is reset",
            ));
        }
        if chars > Self::MAX_CHARS {
            return Err(ParseError::new(format!(
                "reason is {chars} characters; the limit is {}",
                Self::MAX_CHARS
            )));
        }
        if text.chars().any(char::is_control) {
            return Err(ParseError::new(
                "reason must be printable: no control characters (line breaks, tabs, …)",
            ));
        }
        Ok(Self(text.to_owned()))
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

/// One reset, as asked for.
#[derive(Debug, Clone)]
pub struct Reset {
    pub key: ResourceKey,
    /// The resource's highest accepted generation afterwards: lower (the usual case) or higher
    /// than before.
    pub highest_token: FencingToken,
    pub reason: ResetReason,
    /// The API key's name, when keys are configured.
    pub caller: Option<String>,
}

impl Reset {
    /// The audit row of the reset of a resource at `revision`: outcome `reset`, `token` and
    /// `highest_token` the new generation, the revision unchanged, the caller as `owner` and
    /// `caller`, the reason as `detail`. Its id is the database's, set on insert.
    pub fn audit_entry(&self, revision: Revision, at: DateTime<Utc>) -> AuditEntry {
        AuditEntry {
            id: 0,
            at,
            resource: self.key.as_str().to_owned(),
            outcome: Outcome::Reset,
            token: Some(self.highest_token.get()),
            highest_token: self.highest_token.get(),
            revision: revision.get(),
            idempotency_key: None,
            expected_revision: None,
            owner: self.caller.clone(),
            lease: None,
            body_sha256: None,
            body_len: None,
            detail: Some(self.reason.as_str().to_owned()),
            caller: self.caller.clone(),
            source: None,
        }
    }
}

/// A reset as committed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ResetDone {
    /// Its audit row.
    pub entry: AuditEntry,
    /// The highest accepted generation it replaced.
    pub previous_highest_token: i64,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reasons_are_short_printable_text() {
        assert!(ResetReason::parse("INC-42: a test client sent i64::MAX").is_ok());
        assert!(
            ResetReason::parse(&"é".repeat(512)).is_ok(),
            "characters, not bytes"
        );
        assert!(ResetReason::parse(&"x".repeat(513)).is_err());
        assert!(ResetReason::parse("").is_err());
        for control in ["a\nb", "a\tb", "a\u{0}b", "a\u{7f}b", "a\u{9b}b"] {
            assert!(ResetReason::parse(control).is_err(), "{control:?}");
        }
    }

    #[test]
    fn the_audit_row_names_who_why_and_the_new_generation() {
        let reset = Reset {
            key: ResourceKey::parse("ledger").unwrap(),
            highest_token: FencingToken::new(5).unwrap(),
            reason: ResetReason::parse("runaway").unwrap(),
            caller: Some("ops".into()),
        };
        let at = DateTime::from_timestamp_micros(1_764_474_000_000_001).unwrap();
        let entry = reset.audit_entry(Revision::new(3).unwrap(), at);
        assert_eq!(entry.outcome, Outcome::Reset);
        assert_eq!((entry.token, entry.highest_token), (Some(5), 5));
        assert_eq!(entry.revision, 3, "the value was not written");
        assert_eq!(entry.owner.as_deref(), Some("ops"));
        assert_eq!(entry.caller.as_deref(), Some("ops"));
        assert_eq!(entry.detail.as_deref(), Some("runaway"));
        assert_eq!(entry.resource, "ledger");
    }
}
