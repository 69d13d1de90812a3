//! The fence decision, as a pure function of what the resource holds and what the write asks.
//! The store observes the state and applies the decision under its database's concurrency
//! control; this module only says what the answer is.

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
    pub status: u16,
    pub revision: Revision,
    pub highest_token: i64,
    pub audit_id: i64,
}

/// The parts of a write the decision depends on.
#[derive(Debug, Clone, Copy)]
pub struct WriteIntent<'a> {
    pub token: FencingToken,
    pub body_sha256: &'a str,
    pub expected_revision: Option<Revision>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Decision {
    /// The same operation again: answer with its stored result, apply nothing.
    Replay(RecordedOperation),
    /// The idempotency key was used before for another token or body.
    KeyReuse { recorded: RecordedOperation },
    /// A higher generation was accepted already.
    Stale,
    /// `If-Match` does not name the current revision.
    RevisionMismatch,
    /// Apply: the fence moves to `token` and the revision to `revision`.
    Accept { revision: Revision },
}

impl Decision {
    pub fn outcome(&self) -> Outcome {
        match self {
            Decision::Replay(_) => Outcome::Replayed,
            Decision::KeyReuse { .. } => Outcome::IdempotencyConflict,
            Decision::Stale => Outcome::Stale,
            Decision::RevisionMismatch => Outcome::RevisionConflict,
            Decision::Accept { .. } => Outcome::Accepted,
        }
    }
}

/// Decides a write in the contract's order: replay or key reuse, stale token, revision, accept.
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
            Decision::KeyReuse {
                recorded: recorded.clone(),
            }
        };
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
            if let Decision::Accept { revision } = decision {
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
                revision: Revision::new(2).unwrap()
            }
        );
        write.expected_revision = Some(Revision::NEVER_WRITTEN);
        assert_eq!(
            decide(ResourceState::FRESH, None, write).outcome(),
            Outcome::Accepted
        );
    }

    #[test]
    fn a_recorded_operation_wins_over_the_fence() {
        let recorded = RecordedOperation {
            token: token(7),
            body_sha256: "aa".into(),
            status: 201,
            revision: Revision::new(1).unwrap(),
            highest_token: 7,
            audit_id: 1,
        };
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
}
