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
    hex::encode(row_digest(entry, seq, prev_hash))
}

/// `row_hash` as its 32 bytes, the form the audit stores: compared without hex.
pub fn row_digest(entry: &AuditEntry, seq: i64, prev_hash: &str) -> [u8; 32] {
    let mut canonical = Vec::with_capacity(256);
    let encoded = serde_json::to_writer(
        &mut canonical,
        &Canonical {
            entry,
            seq,
            prev_hash,
        },
    );
    // Writing into a Vec cannot fail, and every field is a string, a number or null.
    debug_assert!(encoded.is_ok());
    encoding_digest(&canonical)
}

/// The digest of an encoding of a row built elsewhere (the database's own JSON of its columns):
/// it equals `row_digest` exactly when the bytes are those `row_hash` would have encoded.
pub fn encoding_digest(encoded: &[u8]) -> [u8; 32] {
    Sha256::digest(encoded).into()
}

/// The fields a row's hash covers, serialized straight into bytes rather than through a
/// `serde_json::Value` (on the group-commit thread, the serial stage of every write, building
/// and printing that tree cost more than the SHA-256).
struct Canonical<'a> {
    entry: &'a AuditEntry,
    seq: i64,
    prev_hash: &'a str,
}

impl serde::Serialize for Canonical<'_> {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeTuple;
        let mut fields = serializer.serialize_tuple(17)?;
        fields.serialize_element("fencewatch-audit-v1")?;
        fields.serialize_element(&self.seq)?;
        self.entry.serialize_recorded_fields(&mut fields)?;
        fields.serialize_element(self.prev_hash)?;
        fields.end()
    }
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
            source: None,
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

    /// The encoding is part of every stored chain: a change to it would make `audit verify`
    /// report intact audits as tampered.
    #[test]
    fn the_encoding_is_pinned() {
        let mut full = entry();
        full.idempotency_key = Some("op-\"17\"\u{e9}".into());
        full.lease = Some("jobs".into());
        full.detail = Some("generation 7 was superseded by 8".into());
        full.caller = Some("svc".into());
        full.expected_revision = Some(1);
        assert_eq!(
            row_hash(&entry(), 1, GENESIS),
            "5c6595b5966910000d82b7d071cdcb6c5fce6e91560bd99e44cb697d3da7ed67"
        );
        assert_eq!(
            row_hash(&full, 42, &"ab".repeat(32)),
            "042e76292413222779fea0375e92bb4b2d203bcba254d9f576473ba699989f35"
        );
    }
}
