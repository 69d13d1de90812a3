//! The audit's tamper evidence: each resource's rows form a hash chain. A row's hash covers its
//! position in the chain, every recorded field and the previous row's hash, so changing,
//! removing, inserting or reordering a row breaks the chain at that row.

use super::AuditEntry;
use sha2::{Digest, Sha256};

/// The `prev_hash` of a chain's first row.
pub const GENESIS: &str = "0000000000000000000000000000000000000000000000000000000000000000";

/// The hash of `entry` at position `seq` after `prev_hash`. The encoding is a JSON array of the
/// fields in a fixed order (times as integer microseconds), so it is unambiguous and stable.
/// The row id is left out: it is the database's, and order is checked through `seq`.
pub fn row_hash(entry: &AuditEntry, seq: i64, prev_hash: &str) -> String {
    let canonical = serde_json::json!([
        "fencewatch-audit-v1",
        seq,
        entry.at.timestamp_micros(),
        entry.resource,
        entry.outcome.as_str(),
        entry.token,
        entry.highest_token,
        entry.revision,
        entry.idempotency_key,
        entry.expected_revision,
        entry.owner,
        entry.lease,
        entry.body_sha256,
        entry.body_len,
        entry.detail,
        entry.caller,
        prev_hash,
    ]);
    hex::encode(Sha256::digest(canonical.to_string().as_bytes()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::Outcome;
    use chrono::DateTime;

    fn entry() -> AuditEntry {
        AuditEntry {
            id: 1,
            at: DateTime::from_timestamp_micros(1_764_474_000_000_001).unwrap(),
            resource: "accounts/totals".into(),
            outcome: Outcome::Stale,
            token: Some(7),
            highest_token: 8,
            revision: 2,
            idempotency_key: None,
            expected_revision: None,
            owner: Some("old".into()),
            lease: None,
            body_sha256: Some("ab".into()),
            body_len: Some(2),
            detail: None,
            caller: None,
        }
    }

    #[test]
    fn every_field_position_and_link_counts() {
        let base = row_hash(&entry(), 1, GENESIS);
        assert_eq!(base, row_hash(&entry(), 1, GENESIS), "deterministic");
        assert_eq!(base.len(), 64);
        assert_ne!(base, row_hash(&entry(), 2, GENESIS));
        assert_ne!(base, row_hash(&entry(), 1, &base));
        let mut changed = entry();
        changed.token = Some(8);
        assert_ne!(base, row_hash(&changed, 1, GENESIS));
        let mut changed = entry();
        changed.owner = None;
        assert_ne!(base, row_hash(&changed, 1, GENESIS));
        // The id is the database's and not covered.
        let mut renumbered = entry();
        renumbered.id = 99;
        assert_eq!(base, row_hash(&renumbered, 1, GENESIS));
    }
}
