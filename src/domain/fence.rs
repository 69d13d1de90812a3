//! The fence decision, as a pure function of what the resource holds and what the write asks.
//! The store observes the state and applies the decision under its database's concurrency
//! control; this module only says what the answer is.

use super::lease::LeaseCheck;
use super::{FencingToken, Outcome, Revision};

/// What a resource holds when a write is decided.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ResourceState {
    /// The highest generation ever accepted; 0 before the first write.
    pub highest_token: i64,
    pub revision: Revision,
}

impl ResourceState {
    pub const FRESH: ResourceState = ResourceState {
        highest_token: 0,
        revision: Revision::NEVER_WRITTEN,
    };
}

/// The stored result of an accepted operation, returned again to a repeat of it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RecordedOperation {
    pub token: FencingToken,
    pub body_sha256: String,
    pub applied: Applied,
    pub revision: Revision,
    pub highest_token: i64,
    pub audit_id: i64,
}

/// What an accepted write did to its resource.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Applied {
    /// Its first revision.
    Created,
    /// A revision after the first.
    Updated,
}

impl Applied {
    /// How a write that moved its resource to `revision` applied.
    pub fn at(revision: Revision) -> Self {
        if revision.get() == 1 {
            Applied::Created
        } else {
            Applied::Updated
        }
    }
}

/// The parts of a write the decision depends on.
#[derive(Debug, Clone, Copy)]
pub struct WriteIntent<'a> {
    pub token: FencingToken,
    pub body_sha256: &'a str,
    pub expected_revision: Option<Revision>,
    /// Present when the write names a lease of this daemon's authority (`Fencing-Lease`).
    pub lease: Option<LeaseCheck>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Decision {
    /// The same operation again: answer with its stored result, apply nothing.
    Replay(RecordedOperation),
    /// The idempotency key was used before for another token or body: answered
    /// `idempotency-key-reuse`, audited `idempotency_conflict`.
    IdempotencyKeyReuse { recorded: RecordedOperation },
    /// The lease may not fence this resource (`--lease-scope`).
    OutOfScope,
    /// The token is above any generation the lease has issued: forged or foreign.
    UnknownGeneration,
    /// The lease has issued a newer generation, whether or not this resource has seen it.
    Superseded,
    /// The current generation, but its grant lapsed (refused under `--strict-leases`).
    LeaseExpired,
    /// A higher generation was accepted already.
    Stale,
    /// `If-Match` does not name the current revision: answered `revision-mismatch`, audited
    /// `revision_conflict`.
    RevisionMismatch,
    /// Apply: the fence moves to `token` and the revision to `revision`. `lease_lapsed` flags
    /// a lease-checked write whose grant had lapsed (accepted when leases are not strict).
    Accept {
        revision: Revision,
        lease_lapsed: bool,
    },
}

/// The audit's detail of a stale write: the one text the write path and `bench --fill` record.
pub fn stale_detail(token: i64, highest_token: i64) -> String {
    format!("generation {token} was superseded by {highest_token}")
}

impl Decision {
    pub fn outcome(&self) -> Outcome {
        match self {
            Decision::Replay(_) => Outcome::Replayed,
            Decision::IdempotencyKeyReuse { .. } => Outcome::IdempotencyConflict,
            Decision::OutOfScope | Decision::UnknownGeneration => Outcome::Unauthorized,
            Decision::Superseded => Outcome::Superseded,
            Decision::LeaseExpired => Outcome::LeaseExpired,
            Decision::Stale => Outcome::Stale,
            Decision::RevisionMismatch => Outcome::RevisionConflict,
            Decision::Accept { .. } => Outcome::Accepted,
        }
    }
}

/// Decides a write in the contract's order: replay or key reuse, the lease authority's checks,
/// stale token, revision, accept.
///
/// Equal tokens are accepted: one owner may write many times. Duplicate suppression is the
/// operation record's job, not the token's.
pub fn decide(
    state: ResourceState,
    recorded: Option<&RecordedOperation>,
    intent: WriteIntent<'_>,
) -> Decision {
    if let Some(recorded) = recorded {
        return if recorded.token == intent.token && recorded.body_sha256 == intent.body_sha256 {
            Decision::Replay(recorded.clone())
        } else {
            Decision::IdempotencyKeyReuse {
                recorded: recorded.clone(),
            }
        };
    }
    if let Some(lease) = intent.lease {
        if !lease.in_scope {
            return Decision::OutOfScope;
        }
        if intent.token.get() > lease.issued {
            return Decision::UnknownGeneration;
        }
        if intent.token.get() < lease.issued {
            return Decision::Superseded;
        }
        if lease.lapsed && lease.strict {
            return Decision::LeaseExpired;
        }
    }
    if intent.token.get() < state.highest_token {
        return Decision::Stale;
    }
    if let Some(expected) = intent.expected_revision {
        if expected != state.revision {
            return Decision::RevisionMismatch;
        }
    }
    Decision::Accept {
        revision: state.revision.next(),
        lease_lapsed: intent.lease.is_some_and(|lease| lease.lapsed),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn token(value: i64) -> FencingToken {
        FencingToken::new(value).unwrap()
    }

    fn state(highest_token: i64, revision: i64) -> ResourceState {
        ResourceState {
            highest_token,
            revision: Revision::new(revision).unwrap(),
        }
    }

    fn intent(value: i64) -> WriteIntent<'static> {
        WriteIntent {
            token: token(value),
            body_sha256: "aa",
            expected_revision: None,
            lease: None,
        }
    }

    /// The article's register, step by step: 7, 8, 7 refused, 8 again.
    #[test]
    fn the_articles_sequence() {
        let mut current = ResourceState::FRESH;
        for (value, expected_outcome) in [
            (7, Outcome::Accepted),
            (8, Outcome::Accepted),
            (7, Outcome::Stale),
            (8, Outcome::Accepted),
        ] {
            let decision = decide(current, None, intent(value));
            assert_eq!(decision.outcome(), expected_outcome, "token {value}");
            if let Decision::Accept { revision, .. } = decision {
                current = ResourceState {
                    highest_token: value,
                    revision,
                };
            }
        }
        assert_eq!(current, state(8, 3));
    }

    #[test]
    fn a_fresh_resource_accepts_any_generation_until_it_sees_a_newer_one() {
        assert_eq!(
            decide(ResourceState::FRESH, None, intent(7)).outcome(),
            Outcome::Accepted
        );
        assert_eq!(decide(state(8, 1), None, intent(7)), Decision::Stale);
    }

    #[test]
    fn revision_is_checked_after_the_token() {
        let mut write = intent(7);
        write.expected_revision = Some(Revision::new(1).unwrap());
        assert_eq!(decide(state(8, 2), None, write), Decision::Stale);
        assert_eq!(decide(state(7, 2), None, write), Decision::RevisionMismatch);
        assert_eq!(
            decide(state(7, 1), None, write),
            Decision::Accept {
                revision: Revision::new(2).unwrap(),
                lease_lapsed: false
            }
        );
        write.expected_revision = Some(Revision::NEVER_WRITTEN);
        assert_eq!(
            decide(ResourceState::FRESH, None, write).outcome(),
            Outcome::Accepted
        );
    }

    fn leased(value: i64, issued: i64, lapsed: bool, strict: bool) -> WriteIntent<'static> {
        WriteIntent {
            lease: Some(LeaseCheck {
                issued,
                lapsed,
                in_scope: true,
                strict,
            }),
            ..intent(value)
        }
    }

    #[test]
    fn the_authority_closes_the_fresh_resource_gap_and_refuses_forgeries() {
        // The resource never saw 8, but the lease issued it: 7 is superseded.
        assert_eq!(
            decide(ResourceState::FRESH, None, leased(7, 8, false, false)),
            Decision::Superseded
        );
        assert_eq!(
            decide(ResourceState::FRESH, None, leased(9, 8, false, false)),
            Decision::UnknownGeneration
        );
        assert_eq!(
            decide(ResourceState::FRESH, None, leased(1, 0, false, false)),
            Decision::UnknownGeneration
        );
        assert_eq!(
            decide(ResourceState::FRESH, None, leased(8, 8, true, false)),
            Decision::Accept {
                revision: Revision::new(1).unwrap(),
                lease_lapsed: true
            }
        );
        assert_eq!(
            decide(ResourceState::FRESH, None, leased(8, 8, true, true)),
            Decision::LeaseExpired
        );
        let mut out_of_scope = leased(8, 8, false, false);
        if let Some(lease) = out_of_scope.lease.as_mut() {
            lease.in_scope = false;
        }
        assert_eq!(
            decide(ResourceState::FRESH, None, out_of_scope),
            Decision::OutOfScope
        );
        // The resource's own fence still applies to the current generation.
        assert_eq!(
            decide(state(9, 4), None, leased(8, 8, false, false)),
            Decision::Stale
        );
        assert_eq!(Decision::UnknownGeneration.outcome(), Outcome::Unauthorized);
    }

    #[test]
    fn a_recorded_operation_wins_over_the_fence() {
        let recorded = RecordedOperation {
            token: token(7),
            body_sha256: "aa".into(),
            applied: Applied::Created,
            revision: Revision::new(1).unwrap(),
            highest_token: 7,
            audit_id: 1,
        };
        // A replay comes before the authority's checks too.
        assert_eq!(
            decide(state(8, 2), Some(&recorded), leased(7, 9, true, true)),
            Decision::Replay(recorded.clone())
        );
        // Replayed even though generation 8 has been accepted since.
        assert_eq!(
            decide(state(8, 2), Some(&recorded), intent(7)),
            Decision::Replay(recorded.clone())
        );
        assert_eq!(
            decide(state(8, 2), Some(&recorded), intent(8)).outcome(),
            Outcome::IdempotencyConflict
        );
        let other_body = WriteIntent {
            body_sha256: "bb",
            ..intent(7)
        };
        assert_eq!(
            decide(state(7, 1), Some(&recorded), other_body).outcome(),
            Outcome::IdempotencyConflict
        );
    }

    mod properties {
        use super::*;
        use proptest::prelude::*;

        fn any_lease() -> impl Strategy<Value = Option<LeaseCheck>> {
            proptest::option::of(
                (0i64..20, any::<bool>(), any::<bool>(), any::<bool>()).prop_map(
                    |(issued, lapsed, in_scope, strict)| LeaseCheck {
                        issued,
                        lapsed,
                        in_scope,
                        strict,
                    },
                ),
            )
        }

        proptest! {
            /// Whatever the state, the operation and the lease say, a decision never lets a
            /// generation below the fence through, never moves the revision but by one, and
            /// never accepts against the authority's knowledge.
            #[test]
            fn the_fence_never_lets_an_older_generation_through(
                highest in 0i64..20,
                revision in 0i64..20,
                token_value in 1i64..20,
                expected in proptest::option::of(0i64..20),
                lease in any_lease(),
            ) {
                let decision = decide(
                    state(highest, revision),
                    None,
                    WriteIntent {
                        token: token(token_value),
                        body_sha256: "aa",
                        expected_revision: expected.map(|e| Revision::new(e).unwrap()),
                        lease,
                    },
                );
                if let Decision::Accept { revision: next, lease_lapsed } = decision {
                    prop_assert!(token_value >= highest);
                    prop_assert_eq!(next.get(), revision + 1);
                    prop_assert!(expected.is_none_or(|e| e == revision));
                    if let Some(lease) = lease {
                        prop_assert!(lease.in_scope && token_value == lease.issued);
                        prop_assert!(!(lease.lapsed && lease.strict));
                        prop_assert_eq!(lease_lapsed, lease.lapsed);
                    }
                } else if token_value < highest && lease.is_none() {
                    prop_assert_eq!(decision, Decision::Stale);
                }
            }

            /// A recorded operation is answered from its record, whatever else holds: the same
            /// token and body replay it, anything else is a key reuse.
            #[test]
            fn a_recorded_operation_decides_alone(
                highest in 0i64..20,
                recorded_token in 1i64..20,
                token_value in 1i64..20,
                same_body in any::<bool>(),
                lease in any_lease(),
            ) {
                let recorded = RecordedOperation {
                    token: token(recorded_token),
                    body_sha256: "aa".into(),
                    applied: Applied::Created,
                    revision: Revision::new(1).unwrap(),
                    highest_token: recorded_token,
                    audit_id: 1,
                };
                let decision = decide(
                    state(highest, 3),
                    Some(&recorded),
                    WriteIntent {
                        token: token(token_value),
                        body_sha256: if same_body { "aa" } else { "bb" },
                        expected_revision: None,
                        lease,
                    },
                );
                if recorded_token == token_value && same_body {
                    prop_assert_eq!(decision, Decision::Replay(recorded));
                } else {
                    prop_assert_eq!(decision, Decision::IdempotencyKeyReuse { recorded });
                }
            }
        }
    }
}
