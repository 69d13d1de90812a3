use super::*;
use crate::domain::Outcome;
use chrono::DateTime;

fn entry(id: i64, owner: &str) -> AuditEntry {
    AuditEntry {
        id,
        at: DateTime::from_timestamp_micros(1_764_474_000_000_000 + id).unwrap(),
        resource: "r".into(),
        outcome: Outcome::Accepted,
        token: Some(id),
        highest_token: id,
        revision: id,
        idempotency_key: None,
        expected_revision: None,
        owner: Some(owner.into()),
        lease: None,
        body_sha256: None,
        body_len: None,
        detail: None,
        caller: None,
        source: None,
    }
}

/// A chain of `owners.len()` rows, ids and positions from 1: each row whole, as written.
fn chain(owners: &[&str]) -> Vec<AuditRecord> {
    let mut prev = GENESIS.to_owned();
    let mut rows = Vec::new();
    for (n, owner) in owners.iter().enumerate() {
        let seq = n as i64 + 1;
        let entry = entry(seq, owner);
        let hash = row_hash(&entry, seq, &prev);
        rows.push(AuditRecord {
            entry,
            seq: Some(seq),
            prev_hash: Some(prev),
            hash: Some(hash.clone()),
        });
        prev = hash;
    }
    rows
}

fn bytes(hex_text: &Option<String>) -> Option<Vec<u8>> {
    hex_text.as_deref().map(|h| hex::decode(h).unwrap())
}

/// The row as SQLite's full run reads it: its encoding as the database built it, here
/// serde_json's with `spaces` after the first comma (JSON of the same values that hashes
/// differently, as an escaping SQLite did otherwise would).
fn encoded(row: &AuditRecord, spaces: usize) -> ChainRow {
    let e = &row.entry;
    let canonical = serde_json::json!([
        "fencewatch-audit-v1",
        row.seq,
        e.at.timestamp_micros(),
        e.resource,
        e.outcome.as_str(),
        e.token,
        e.highest_token,
        e.revision,
        e.idempotency_key,
        e.expected_revision,
        e.owner,
        e.lease,
        e.body_sha256,
        e.body_len,
        e.detail,
        e.caller,
        row.prev_hash,
    ])
    .to_string()
    .replacen(',', &format!(",{}", " ".repeat(spaces)), 1);
    ChainRow {
        id: e.id,
        seq: row.seq,
        prev_hash: bytes(&row.prev_hash),
        hash: bytes(&row.hash),
        contents: Contents::Encoded(canonical),
    }
}

fn walk(rows: impl IntoIterator<Item = ChainRow>) -> ChainVerifier {
    let mut walk = ChainVerifier::from_start("r".into(), None);
    for row in rows {
        walk.push(row);
    }
    walk
}

fn whole(rows: &[AuditRecord]) -> HashMap<i64, AuditRecord> {
    rows.iter().map(|r| (r.entry.id, r.clone())).collect()
}

fn breach(walked: WalkedChain) -> Option<(Option<i64>, String)> {
    match walked.end {
        ChainEnd::Verified(_) => None,
        ChainEnd::Broken(b) => Some((b.audit_id, b.problem)),
    }
}

#[test]
fn a_matching_database_encoding_verifies_without_doubt() {
    let rows = chain(&["a", "b", "c"]);
    let walked = walk(rows.iter().map(|r| encoded(r, 0)));
    assert_eq!(walked.doubted().count(), 0);
    let head = (3, rows[2].hash.clone().unwrap());
    let ChainEnd::Verified(position) = walked.finish(Some(&head)).end else {
        panic!("verified")
    };
    assert_eq!(
        (position.seq, position.hash, position.audit_id),
        (3, head.1, Some(3))
    );
}

#[test]
fn an_encoding_that_differs_is_settled_by_the_row_read_whole() {
    let rows = chain(&["a", "b", "c"]);
    let mut walked = walk(rows.iter().enumerate().map(|(n, r)| encoded(r, n % 2)));
    assert_eq!(walked.doubted().collect::<Vec<_>>(), [2]);
    walked.settle(&whole(&rows));
    let head = (3, rows[2].hash.clone().unwrap());
    assert_eq!(breach(walked.finish(Some(&head))), None);
}

#[test]
fn a_doubted_row_found_changed_is_the_first_breach_ahead_of_a_later_one() {
    let written = chain(&["a", "b", "c", "d"]);
    // Row 2's owner changed in the database, row 4 moved out of place.
    let mut stored = written.clone();
    stored[1].entry.owner = Some("mallory".into());
    stored[3].seq = Some(7);
    let mut walked = walk(stored.iter().map(|r| encoded(r, 0)));
    assert_eq!(walked.doubted().collect::<Vec<_>>(), [2]);
    walked.settle(&whole(&stored));
    let (id, problem) = breach(walked.finish(None)).unwrap();
    assert_eq!(id, Some(2));
    assert!(problem.contains("changed"), "{problem}");

    // Settled as intact, the later breach stands.
    let mut stored = written.clone();
    stored[3].seq = Some(7);
    let mut walked = walk(
        stored
            .iter()
            .map(|r| encoded(r, usize::from(r.entry.id == 2))),
    );
    assert_eq!(walked.doubted().collect::<Vec<_>>(), [2]);
    walked.settle(&whole(&stored));
    let (id, problem) = breach(walked.finish(None)).unwrap();
    assert_eq!(id, Some(4));
    assert!(problem.contains("position 7"), "{problem}");
}

#[test]
fn an_unsettled_or_unreadable_doubt_is_no_match() {
    let rows = chain(&["a", "b"]);
    let head = (2, rows[1].hash.clone().unwrap());
    let walked = walk(rows.iter().map(|r| encoded(r, 1)));
    let (id, _) = breach(walked.finish(Some(&head))).unwrap();
    assert_eq!(id, Some(1));
    let mut walked = walk(rows.iter().map(|r| encoded(r, 1)));
    walked.settle(&whole(&rows[1..]));
    let (id, problem) = breach(walked.finish(Some(&head))).unwrap();
    assert_eq!(id, Some(1));
    assert!(problem.contains("read again"), "{problem}");
}

#[test]
fn rows_with_fields_are_checked_on_the_spot() {
    let mut rows = chain(&["a", "b"]);
    rows[1].entry.owner = Some("mallory".into());
    let mut walked = ChainVerifier::from_start("r".into(), None);
    for r in &rows {
        walked.push(ChainRow {
            id: r.entry.id,
            seq: r.seq,
            prev_hash: bytes(&r.prev_hash),
            hash: bytes(&r.hash),
            contents: Contents::Fields(Box::new(r.entry.clone())),
        });
    }
    assert_eq!(walked.doubted().count(), 0);
    let (id, problem) = breach(walked.finish(None)).unwrap();
    assert_eq!(id, Some(2));
    assert!(problem.contains("changed"), "{problem}");
}

#[test]
fn a_start_hash_no_stored_digest_can_equal_links_to_nothing() {
    let rows = chain(&["a"]);
    // A digest in upper case: hex, but not the text a chain holds.
    let upper = (0, GENESIS.to_uppercase().replace('0', "A"));
    let mut walked = ChainVerifier::from_start("r".into(), Some(&upper));
    walked.push(encoded(&rows[0], 0));
    let (_, problem) = breach(walked.finish(None)).unwrap();
    assert!(problem.contains("does not link"), "{problem}");
    let empty = ChainVerifier::from_start("r".into(), Some(&upper));
    let ChainEnd::Verified(position) = empty.finish(None).end else {
        panic!("nothing to check")
    };
    assert_eq!(position.hash, upper.1, "the start's own text");
}
