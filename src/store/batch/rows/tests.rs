//! The rows' encoding, and rows for the statements' tests.

use super::*;

fn seen(
    stale: i64,
    superseding: i64,
    owner: Option<&str>,
    stale_owner: Option<&str>,
    at: i64,
) -> StaleWrite {
    StaleWrite {
        resource: "r".into(),
        stale_token: stale,
        superseding_token: superseding,
        stale_owner: stale_owner.map(Into::into),
        superseding_owner: owner.map(Into::into),
        at_us: at,
    }
}

#[test]
fn stale_writes_of_one_overlap_merge_as_if_recorded_in_turn() {
    let stale_writes = [
        seen(3, 5, Some("b"), Some("a"), 10),
        seen(4, 5, Some("b"), None, 11),
        seen(3, 7, Some("c"), None, 12),
        seen(3, 7, Some("d"), Some("a2"), 13),
    ];
    let merged = merge_stale_writes(&stale_writes);
    let row = |stale, superseding, stale_owner, owner, first, last, count| OverlapRow {
        resource: "r",
        stale_token: stale,
        superseding_token: superseding,
        stale_owner,
        superseding_owner: owner,
        first_seen_us: first,
        last_seen_us: last,
        rejected_writes: count,
    };
    assert_eq!(
        merged,
        vec![
            row(3, 7, Some("a2"), Some("c"), 10, 13, 3),
            row(4, 5, None, Some("b"), 11, 11, 1),
        ]
    );
    // By name: the statements read each value by its column's name.
    let json = to_json(&merged[1]).unwrap();
    assert_eq!(
        json,
        r#"{"resource":"r","stale_token":4,"superseding_token":5,"stale_owner":null,"superseding_owner":"b","first_seen_us":11,"last_seen_us":11,"rejected_writes":1}"#
    );
}

/// Rows for tests of the statements built from them, with these counts (two audit rows; no
/// creations or operations).
pub(in crate::store::batch) fn test_encoded(
    updates: usize,
    sightings: usize,
    advances: usize,
    starts: usize,
) -> Encoded<'static> {
    let update = ResourceUpdate {
        key: "r",
        accepted: true,
        highest_token: 1,
        revision: 1,
        value: Some(b"v"),
        content_type: None,
        updated_at_us: Some(1),
        highest_owner: None,
        chain_seq: 1,
        chain_hash: "h",
        observed_revision: 0,
        observed_chain_seq: 0,
        observed_chain_hash: "g",
    };
    let audit = AuditRow {
        id: None,
        at_us: 1,
        resource: "r",
        outcome: "accepted",
        token: Some(1),
        highest_token: 1,
        revision: 1,
        idempotency_key: None,
        expected_revision: None,
        owner: None,
        lease: None,
        body_sha256: None,
        body_len: None,
        detail: None,
        caller: None,
        seq: 1,
        prev_hash: "g",
        hash: "h",
    };
    let sighting = OverlapRow {
        resource: "r",
        stale_token: 1,
        superseding_token: 2,
        stale_owner: None,
        superseding_owner: None,
        first_seen_us: 1,
        last_seen_us: 1,
        rejected_writes: 1,
    };
    Encoded {
        updates: (0..updates).map(|_| update.clone()).collect(),
        inserts: Vec::new(),
        head_advances: (0..advances)
            .map(|_| ChainHeadAdvance {
                resource: "r",
                seq: 1,
                hash: "h",
                observed_seq: 0,
            })
            .collect(),
        head_starts: (0..starts)
            .map(|_| ChainHeadRow {
                resource: "r",
                seq: 1,
                hash: "h",
            })
            .collect(),
        audit: vec![audit.clone(), audit],
        operations: Vec::new(),
        sightings: (0..sightings).map(|_| sighting.clone()).collect(),
    }
}
