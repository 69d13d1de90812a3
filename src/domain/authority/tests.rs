use super::*;
use crate::domain::{decide, Decision, FencingToken, ResourceState, WriteIntent};
use proptest::prelude::*;

fn held(generation: i64, revision: i64) -> LockObservation {
    LockObservation {
        holder: Some(LockHolder {
            key: format!("jobs/{generation:x}"),
            generation,
            name: None,
        }),
        revision,
    }
}

fn free(revision: i64) -> LockObservation {
    LockObservation {
        holder: None,
        revision,
    }
}

fn judge(
    state: ResourceState,
    observation: &LockObservation,
    highest_seen: i64,
    token: i64,
    strict: bool,
) -> Decision {
    decide(
        state,
        None,
        WriteIntent {
            token: FencingToken::new(token).unwrap(),
            body_sha256: "aa",
            expected_revision: None,
            lease: Some(lease_check(observation, highest_seen, strict, true)),
        },
    )
}

#[test]
fn lease_names() {
    let lock = |text: &str| ExternalLock::from_lease(&LeaseName::parse(text).unwrap());
    assert_eq!(lock("jobs"), None, "a lease of the daemon's own");
    assert_eq!(
        lock("consul:jobs"),
        None,
        "no such authority: the daemon's own"
    );
    let zk = lock("zk:/locks/jobs").unwrap().unwrap();
    assert_eq!(zk.kind, AuthorityKind::ZooKeeper);
    assert_eq!(zk.name(), "/locks/jobs");
    assert_eq!(zk.lease_name(), "zk:/locks/jobs");
    assert!(lock("zk:locks/jobs").unwrap().is_err(), "relative");
    assert!(lock("zk:/locks//jobs").unwrap().is_err(), "empty part");
    assert!(lock("zk:/locks/../jobs").unwrap().is_err(), "dot-dot");
    assert!(lock("zk:/").unwrap().is_err(), "the root");
    let etcd = lock("etcd:/locks/jobs").unwrap().unwrap();
    assert_eq!(etcd.kind, AuthorityKind::Etcd);
    assert_eq!(etcd.name(), "/locks/jobs");
    assert_eq!(etcd.key_prefix(), "/locks/jobs/");
    assert_eq!(etcd.lease_name(), "etcd:/locks/jobs");
    assert!(lock("etcd:").unwrap().is_err(), "empty");
    assert!(lock("etcd:jobs/").unwrap().is_err(), "trailing slash");
    assert!(ExternalLock::parse(AuthorityKind::Etcd, "a\u{1}b").is_err());
    assert!(ExternalLock::parse(AuthorityKind::Etcd, "a\nb").is_err());
    // The same split on bytes, for the key scopes.
    let etcd = AuthorityKind::Etcd;
    assert_eq!(
        AuthorityKind::of_name(b"etcd:/locks/jobs"),
        Some((etcd, &b"/locks/jobs"[..]))
    );
    assert_eq!(AuthorityKind::of_name(b"etcd:"), Some((etcd, &b""[..])));
    assert_eq!(
        AuthorityKind::of_name(b"etcd:a:b"),
        Some((etcd, &b"a:b"[..]))
    );
    assert_eq!(AuthorityKind::of_name(b"jobs"), None);
    assert_eq!(
        AuthorityKind::of_name(b"zk:/jobs"),
        Some((AuthorityKind::ZooKeeper, &b"/jobs"[..]))
    );
    assert_eq!(AuthorityKind::of_name(b"jobs:etcd:x"), None);
}

#[test]
fn lease_scope_prefix_covers_the_lock_and_what_is_under_it() {
    let key = |text: &str| ResourceKey::parse(text).unwrap();
    let lock = |name: &str| ExternalLock::parse(AuthorityKind::Etcd, name).unwrap();
    let prefix = LeaseScope::Prefix;
    let jobs = lock("jobs");
    assert!(jobs.in_scope(prefix, &key("jobs")));
    assert!(jobs.in_scope(prefix, &key("jobs/7")));
    assert!(jobs.in_scope(prefix, &key("jobs/7/log")));
    assert!(!jobs.in_scope(prefix, &key("jobs2")), "a longer name");
    assert!(!jobs.in_scope(prefix, &key("job")));
    assert!(!jobs.in_scope(prefix, &key("other/jobs")));
    assert!(
        !jobs.in_scope(prefix, &key("/jobs")),
        "the resource's '/' is its own"
    );
    // One leading '/' is etcd's root, not part of the resource's name.
    let rooted = lock("/locks/jobs");
    assert!(rooted.in_scope(prefix, &key("locks/jobs")));
    assert!(rooted.in_scope(prefix, &key("locks/jobs/7")));
    assert!(!rooted.in_scope(prefix, &key("locks/jobs2")));
    assert!(!rooted.in_scope(prefix, &key("locks")));
    // Only one: '//x' keeps the second.
    assert!(lock("//x").in_scope(prefix, &key("/x")));
    assert!(!lock("//x").in_scope(prefix, &key("x")));
    // Without the prefix scope, any resource.
    assert!(jobs.in_scope(LeaseScope::Any, &key("elsewhere")));
    assert!(rooted.in_scope(LeaseScope::Any, &key("/elsewhere")));
    // Out of scope is refused before the lock's generations are compared, whatever the
    // token: even the current holder's.
    for token in [9, 10, 11] {
        let decision = decide(
            ResourceState::FRESH,
            None,
            WriteIntent {
                token: FencingToken::new(token).unwrap(),
                body_sha256: "aa",
                expected_revision: None,
                lease: Some(lease_check(&held(10, 12), 0, false, false)),
            },
        );
        assert_eq!(decision, Decision::OutOfScope, "token {token}");
    }
}

#[test]
fn the_contracts_rows() {
    let fresh = ResourceState::FRESH;
    // The current holder is decided as usual.
    assert!(matches!(
        judge(fresh, &held(10, 12), 0, 10, false),
        Decision::Accept {
            lease_lapsed: false,
            ..
        }
    ));
    // Below the holder, or below a generation seen holding: superseded, on a fresh resource.
    assert_eq!(
        judge(fresh, &held(10, 12), 0, 9, false),
        Decision::Superseded
    );
    assert_eq!(
        judge(fresh, &held(10, 12), 11, 10, false),
        Decision::Superseded
    );
    // A waiter's key or a made-up number.
    assert_eq!(
        judge(fresh, &held(10, 12), 0, 11, false),
        Decision::UnknownGeneration
    );
    // Nobody holds it: the last holder's is accepted as lapsed, or refused when strict.
    assert!(matches!(
        judge(fresh, &free(12), 10, 10, false),
        Decision::Accept {
            lease_lapsed: true,
            ..
        }
    ));
    assert_eq!(
        judge(fresh, &free(12), 10, 10, true),
        Decision::LeaseExpired
    );
    assert_eq!(judge(fresh, &free(12), 10, 9, false), Decision::Superseded);
    assert_eq!(
        judge(fresh, &free(12), 10, 11, false),
        Decision::UnknownGeneration
    );
    // Never seen held: nothing is known to be issued.
    assert_eq!(
        judge(fresh, &free(12), 0, 5, false),
        Decision::UnknownGeneration
    );
    // The resource's own fence still applies after the authority's.
    let state = ResourceState {
        highest_token: 20,
        revision: crate::domain::Revision::new(1).unwrap(),
    };
    assert_eq!(judge(state, &held(10, 12), 0, 10, false), Decision::Stale);
}

#[test]
fn a_late_observation_does_not_refuse_the_holder_another_write_saw() {
    // Another write recorded holder 20 after this observation saw 10.
    assert!(matches!(
        judge(ResourceState::FRESH, &held(10, 15), 20, 20, false),
        Decision::Accept {
            lease_lapsed: false,
            ..
        }
    ));
    assert_eq!(
        judge(ResourceState::FRESH, &held(10, 15), 20, 10, false),
        Decision::Superseded
    );
}

#[test]
fn regression() {
    assert_eq!(progress(0, &free(1)), Progress::Consistent);
    assert_eq!(progress(10, &held(10, 10)), Progress::Consistent);
    assert_eq!(progress(10, &held(12, 30)), Progress::Consistent);
    assert_eq!(
        progress(10, &free(9)),
        Progress::Regressed {
            recorded: 10,
            observed: 9
        },
        "the cluster's counter is below what it issued"
    );
    assert_eq!(
        progress(10, &held(4, 30)),
        Progress::Regressed {
            recorded: 10,
            observed: 4
        },
        "a holder older than one seen holding"
    );
}

#[test]
fn shared_generations() {
    assert!(shared_generation(Some("a"), 7, 7, Some("b")));
    assert!(!shared_generation(Some("a"), 7, 7, Some("a")));
    assert!(!shared_generation(Some("a"), 7, 8, Some("b")));
    assert!(!shared_generation(None, 7, 7, Some("b")));
    assert!(!shared_generation(Some("a"), 7, 7, None));
}

fn observation() -> impl Strategy<Value = LockObservation> {
    (proptest::option::of(1i64..100), 0i64..50).prop_map(|(holder, extra)| match holder {
        Some(generation) => held(generation, generation + extra),
        None => free(extra + 1),
    })
}

proptest! {
    /// Nothing below the latest known generation is ever accepted, whatever the resource.
    #[test]
    fn never_accepts_below_the_latest_holder(
        observation in observation(),
        highest_seen in 0i64..100,
        token in 1i64..120,
        strict: bool,
        resource_highest in 0i64..120,
    ) {
        let state = ResourceState {
            highest_token: resource_highest,
            revision: crate::domain::Revision::new(resource_highest.min(1)).unwrap(),
        };
        let decision = judge(state, &observation, highest_seen, token, strict);
        let latest = advanced(&observation, highest_seen);
        if matches!(decision, Decision::Accept { .. }) {
            prop_assert_eq!(token, latest);
        }
        if token > latest {
            prop_assert_eq!(&decision, &Decision::UnknownGeneration);
        }
        if token < latest {
            prop_assert_eq!(&decision, &Decision::Superseded);
        }
    }

    /// The observed holder, not below anything recorded, is never refused by the authority.
    #[test]
    fn never_refuses_the_current_holder(
        generation in 1i64..100,
        extra in 0i64..50,
        below in 0i64..100,
        strict: bool,
    ) {
        let highest_seen = below.min(generation);
        let decision = judge(
            ResourceState::FRESH,
            &held(generation, generation + extra),
            highest_seen,
            generation,
            strict,
        );
        let accepted = matches!(decision, Decision::Accept { lease_lapsed: false, .. });
        prop_assert!(accepted);
        prop_assert_eq!(progress(highest_seen, &held(generation, generation + extra)), Progress::Consistent);
    }

    /// What is recorded only grows.
    #[test]
    fn the_record_only_grows(observation in observation(), highest_seen in 0i64..100) {
        prop_assert!(advanced(&observation, highest_seen) >= highest_seen);
    }
}
