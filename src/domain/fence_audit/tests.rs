use super::*;
use proptest::prelude::*;

fn row(seq: i64) -> FenceAuditRow {
    FenceAuditRow {
        id: seq * 10,
        at: DateTime::from_timestamp_micros(1_764_474_000_000_001).unwrap(),
        resource: "orders/eu".into(),
        outcome: "stale".into(),
        token: Some(7),
        highest_token: 8,
        idempotency_key: Some("op-1".into()),
        owner: Some("worker-a".into()),
        lease: None,
        detail: Some("generation 7 is below 8, the highest accepted".into()),
        table_name: Some("public.orders".into()),
        seq,
        prev_hash: None,
        hash: None,
    }
}

fn sealed(rows: Vec<FenceAuditRow>) -> Vec<FenceAuditRow> {
    let links = seal_scope(GENESIS, &rows);
    rows.into_iter()
        .zip(links)
        .map(|(mut row, (_, prev, hash))| {
            row.prev_hash = Some(prev);
            row.hash = Some(hash);
            row
        })
        .collect()
}

/// The encoding is part of every stored chain and of the SQL that computes it at install:
/// changing it would make every installed fence's audit fail to verify. The hash was
/// computed by PostgreSQL's installed `row_hash()`, not by this code.
#[test]
fn the_encoding_is_pinned() {
    let mut quoted = row(1);
    quoted.owner = Some("a \"b\" \\c\n\u{1}\u{e9}".into());
    assert_eq!(
        String::from_utf8(canonical_encoding(&quoted, GENESIS)).unwrap(),
        format!(
            "[\"fencewatch-fence-v1\",1,1764474000000001,\"orders/eu\",\"stale\",7,8,\"op-1\",\
             \"a \\\"b\\\" \\\\c\\n\\u0001\u{e9}\",null,\"generation 7 is below 8, the highest \
             accepted\",\"public.orders\",\"{GENESIS}\"]"
        )
    );
    assert_eq!(
        row_hash(&row(1), GENESIS),
        "9234b281f34ce55b93dd0f592222144ac0d8359dba61245ad4e7efbdc8484120"
    );
}

#[test]
fn a_sealed_chain_verifies_and_any_change_breaks_it_at_that_row() {
    let chain = sealed((1..=4).map(row).collect());
    let check = check_chains(&chain);
    assert!(check.intact(), "{check:?}");
    assert_eq!((check.rows, check.scopes, check.unsealed), (4, 1, 0));

    let mut altered = chain.clone();
    altered[2].owner = Some("someone else".into());
    assert_eq!(
        check_chains(&altered).breaches[0].fault,
        ChainFault::Altered
    );
    assert_eq!(check_chains(&altered).breaches[0].seq, 3);

    let mut removed = chain.clone();
    removed.remove(1);
    assert_eq!(
        check_chains(&removed).breaches[0].fault,
        ChainFault::Gap { expected_seq: 2 }
    );

    let mut rechained = chain.clone();
    rechained[3].prev_hash = Some(GENESIS.into());
    assert_eq!(
        check_chains(&rechained).breaches[0].fault,
        ChainFault::Unlinked
    );
}

#[test]
fn an_unsealed_tail_is_not_a_fault_but_a_sealed_row_after_it_is() {
    let mut chain = sealed((1..=2).map(row).collect());
    chain.push(row(3));
    chain.push(row(4));
    let check = check_chains(&chain);
    assert!(check.intact());
    assert_eq!(check.unsealed, 2);

    let mut forged = chain.clone();
    forged[3].prev_hash = Some("ab".repeat(32));
    forged[3].hash = Some(row_hash(&forged[3], &"ab".repeat(32)));
    assert_eq!(
        check_chains(&forged).breaches[0].fault,
        ChainFault::SealedAfterUnsealed
    );

    let mut half = chain;
    half[2].hash = Some("00".into());
    assert_eq!(
        check_chains(&half).breaches[0].fault,
        ChainFault::HalfSealed
    );
}

#[test]
fn sealing_after_a_sealed_head_continues_the_chain() {
    let head = sealed((1..=2).map(row).collect());
    let head_hash = head[1].hash.clone().unwrap();
    let tail: Vec<_> = (3..=5).map(row).collect();
    let links = seal_scope(&head_hash, &tail);
    let mut all = head;
    for (mut row, (id, prev, hash)) in tail.into_iter().zip(links) {
        assert_eq!(id, row.id);
        row.prev_hash = Some(prev);
        row.hash = Some(hash);
        all.push(row);
    }
    assert!(check_chains(&all).intact());
}

fn head_of(chain: &[FenceAuditRow]) -> ScopeHead {
    let last = chain.last().unwrap();
    ScopeHead {
        scope: last.resource.clone(),
        highest_token: last.highest_token,
        head_seq: last.seq,
        head_hash: last.hash.clone(),
        sealed: None,
    }
}

#[test]
fn a_scopes_row_is_held_to_its_chain() {
    let chain = sealed((1..=3).map(row).collect());
    let head = head_of(&chain);
    assert!(check_fence(&chain, std::slice::from_ref(&head)).intact());
    let fault = |head: ScopeHead| {
        let check = check_fence(&chain, &[head]);
        assert_eq!(check.breaches.len(), 1, "{check:?}");
        assert_eq!(check.breaches[0].seq, 3);
        check.breaches[0].fault.clone()
    };
    let what = |fault: ChainFault| match fault {
        ChainFault::HeadDisagrees { what, .. } => what,
        other => panic!("{other:?}"),
    };
    let lowered = ScopeHead {
        highest_token: 1,
        ..head.clone()
    };
    assert_eq!(what(fault(lowered)), "highest_token");
    let rewound = ScopeHead {
        head_seq: 2,
        ..head.clone()
    };
    assert_eq!(what(fault(rewound)), "head_seq");
    let rehashed = ScopeHead {
        head_hash: Some("00".repeat(32)),
        ..head.clone()
    };
    assert_eq!(what(fault(rehashed)), "head_hash");
    assert_eq!(
        check_fence(&chain, &[]).breaches[0].fault,
        ChainFault::NoScopeRow
    );
    // A scope row claiming rows its chain does not have: the tail was deleted, or the
    // whole chain.
    let orphan = ScopeHead {
        scope: "elsewhere".into(),
        ..head
    };
    let check = check_fence(&chain[..0], &[orphan]);
    assert_eq!(check.breaches[0].resource, "elsewhere");
}

#[test]
fn sqlites_sealed_head_is_a_sealed_row_of_the_chain() {
    let mut chain = sealed((1..=2).map(row).collect());
    chain.push(row(3));
    let sealed_hash = chain[1].hash.clone();
    let head = ScopeHead {
        head_hash: None,
        sealed: Some((2, sealed_hash)),
        ..head_of(&chain)
    };
    assert!(check_fence(&chain, std::slice::from_ref(&head)).intact());
    let wrong = ScopeHead {
        sealed: Some((2, Some("ff".repeat(32)))),
        ..head
    };
    assert!(!check_fence(&chain, &[wrong]).intact());
}

#[test]
fn rows_convert_to_the_daemons_entries() {
    let entry = row(1).to_audit_entry(Some("shop")).unwrap();
    assert_eq!(entry.source.as_deref(), Some("shop"));
    assert_eq!(entry.outcome, Outcome::Stale);
    assert_eq!(entry.revision, 0);
    assert_eq!(
        entry.detail.as_deref(),
        Some("generation 7 is below 8, the highest accepted (table public.orders)")
    );
    let mut unknown = row(1);
    unknown.outcome = "exploded".into();
    assert_eq!(unknown.to_audit_entry(None), None);
}

proptest! {
    /// Whatever the texts hold, the encoding is valid JSON that reads back to the same
    /// fields: no text can shift another into a different position.
    #[test]
    fn the_encoding_is_unambiguous(owner in "\\PC*|[\"\\\\\u{0}-\u{1f}]*", detail in any::<Option<String>>()) {
        let mut r = row(3);
        r.owner = Some(owner.clone());
        r.detail = detail.clone();
        let parsed: serde_json::Value = serde_json::from_slice(&canonical_encoding(&r, GENESIS)).unwrap();
        prop_assert_eq!(parsed[8].as_str(), Some(owner.as_str()));
        prop_assert_eq!(parsed[10].as_str(), detail.as_deref());
        prop_assert_eq!(parsed.as_array().map(Vec::len), Some(13));
    }
}
