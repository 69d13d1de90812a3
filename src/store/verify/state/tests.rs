use super::*;

fn resource() -> Recorded {
    Recorded {
        key: "r".into(),
        highest_token: 8,
        revision: 3,
        chain_seq: 5,
        value_sha256: vec![1; 32],
        head: Some(HeadRow {
            id: 50,
            seq: 5,
            highest_token: 8,
            revision: 3,
        }),
        accepted: Some(AcceptedRow {
            id: 40,
            seq: Some(4),
            revision: 3,
            body_sha256: Some(vec![1; 32]),
        }),
    }
}

fn judged(resource: &Recorded, checkpoint: Option<i64>, pre_chain: bool) -> Judged {
    let checkpoints: HashMap<String, i64> = checkpoint
        .map(|seq| ("r".to_owned(), seq))
        .into_iter()
        .collect();
    judge(
        resource,
        &Known {
            checkpoints: &checkpoints,
            pre_chain,
            broken: &HashSet::new(),
        },
    )
}

fn problems(judged: &Judged) -> Vec<(Option<i64>, &str)> {
    judged
        .breaches
        .iter()
        .map(|b| (b.audit_id, b.problem.as_str()))
        .collect()
}

#[test]
fn a_state_its_audit_records_passes() {
    assert_eq!(judged(&resource(), None, false), Judged::default());
}

#[test]
fn each_stored_field_is_held_to_the_row_that_records_it() {
    let mut lowered = resource();
    lowered.highest_token = 3;
    assert_eq!(
        problems(&judged(&lowered, None, false)),
        [(Some(50), "highest generation 3 is stored, its audit says 8")]
    );
    let mut changed = resource();
    changed.value_sha256 = vec![2; 32];
    let found = judged(&changed, None, false);
    assert_eq!(found.breaches.len(), 1, "{found:?}");
    assert_eq!(found.breaches[0].audit_id, Some(40));
    assert!(found.breaches[0]
        .problem
        .starts_with("the value's SHA-256 is 0202"));
    let mut both = resource();
    both.highest_token = 3;
    both.revision = 4;
    assert_eq!(
        problems(&judged(&both, None, false)),
        [(
            Some(50),
            "highest generation 3 is stored, its audit says 8; revision 4 is stored, its \
             audit says 3"
        )]
    );
    let mut revised = resource();
    revised.revision = 4;
    assert_eq!(
        problems(&judged(&revised, None, false)),
        [(Some(50), "revision 4 is stored, its audit says 3")],
        "one breach for one change"
    );
}

#[test]
fn a_broken_chain_stands_for_its_resource() {
    let mut lowered = resource();
    lowered.highest_token = 3;
    let checkpoints = HashMap::new();
    let broken = HashSet::from(["r".to_owned()]);
    let known = Known {
        checkpoints: &checkpoints,
        pre_chain: false,
        broken: &broken,
    };
    assert_eq!(judge(&lowered, &known), Judged::default());
}

#[test]
fn what_was_pruned_is_unchecked_not_guessed() {
    let mut pruned = resource();
    pruned.head = None;
    pruned.accepted = None;
    pruned.highest_token = 1;
    let found = judged(&pruned, Some(5), false);
    assert!(found.breaches.is_empty(), "{found:?}");
    let what: Vec<&str> = found.unchecked.iter().map(|u| u.what.as_str()).collect();
    assert_eq!(what, ["highest generation and revision", "value"]);
    // Pruned up to before its head: the head's row is still there and must be found.
    let found = judged(&pruned, Some(4), false);
    assert_eq!(found.breaches.len(), 1, "{found:?}");
}

#[test]
fn a_resource_without_an_audit_is_a_breach_unless_it_may_predate_the_chain() {
    let mut made = resource();
    made.chain_seq = 0;
    made.head = None;
    made.accepted = None;
    assert_eq!(
        problems(&judged(&made, None, false)),
        [(
            None,
            "it has no audit chain: its row was added outside fencewatch"
        )]
    );
    let old = judged(&made, None, true);
    assert!(old.breaches.is_empty());
    assert_eq!(old.unchecked.len(), 2);
    // Its head set back to the start while its chain goes on.
    let mut reset_head = resource();
    reset_head.chain_seq = 0;
    assert_eq!(
        problems(&judged(&reset_head, None, true)),
        [(
            Some(50),
            "its chain head is at position 0 but its audit reaches position 5"
        )]
    );
}
