//! One value per outcome, the shape of the stats' totals and rates on the wire.

use crate::domain::Outcome;
use serde::{Deserialize, Serialize};

/// One value per outcome, on the wire an object keyed by outcome name (`{"accepted": 3, …}`).
/// The fields are in name order, so the members come out sorted. A reader ignores a member it
/// does not know (a newer daemon's outcome) and takes a missing one as the default.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct PerOutcome<T> {
    pub accepted: T,
    pub idempotency_conflict: T,
    pub invalid: T,
    pub lease_expired: T,
    pub replayed: T,
    pub reset: T,
    pub revision_conflict: T,
    pub stale: T,
    pub superseded: T,
    pub unauthorized: T,
}

impl<T> PerOutcome<T> {
    pub fn from_fn(mut value: impl FnMut(Outcome) -> T) -> Self {
        Self {
            accepted: value(Outcome::Accepted),
            idempotency_conflict: value(Outcome::IdempotencyConflict),
            invalid: value(Outcome::Invalid),
            lease_expired: value(Outcome::LeaseExpired),
            replayed: value(Outcome::Replayed),
            reset: value(Outcome::Reset),
            revision_conflict: value(Outcome::RevisionConflict),
            stale: value(Outcome::Stale),
            superseded: value(Outcome::Superseded),
            unauthorized: value(Outcome::Unauthorized),
        }
    }

    pub fn get(&self, outcome: Outcome) -> &T {
        match outcome {
            Outcome::Accepted => &self.accepted,
            Outcome::IdempotencyConflict => &self.idempotency_conflict,
            Outcome::Invalid => &self.invalid,
            Outcome::LeaseExpired => &self.lease_expired,
            Outcome::Replayed => &self.replayed,
            Outcome::Reset => &self.reset,
            Outcome::RevisionConflict => &self.revision_conflict,
            Outcome::Stale => &self.stale,
            Outcome::Superseded => &self.superseded,
            Outcome::Unauthorized => &self.unauthorized,
        }
    }

    pub fn get_mut(&mut self, outcome: Outcome) -> &mut T {
        match outcome {
            Outcome::Accepted => &mut self.accepted,
            Outcome::IdempotencyConflict => &mut self.idempotency_conflict,
            Outcome::Invalid => &mut self.invalid,
            Outcome::LeaseExpired => &mut self.lease_expired,
            Outcome::Replayed => &mut self.replayed,
            Outcome::Reset => &mut self.reset,
            Outcome::RevisionConflict => &mut self.revision_conflict,
            Outcome::Stale => &mut self.stale,
            Outcome::Superseded => &mut self.superseded,
            Outcome::Unauthorized => &mut self.unauthorized,
        }
    }

    /// Each outcome with its value, in name order (the order of the JSON members).
    pub fn iter(&self) -> impl Iterator<Item = (Outcome, &T)> {
        let mut outcomes = Outcome::ALL;
        outcomes.sort_unstable_by_key(|outcome| outcome.as_str());
        outcomes
            .into_iter()
            .map(move |outcome| (outcome, self.get(outcome)))
    }
}

impl std::ops::AddAssign<&PerOutcome<u64>> for PerOutcome<u64> {
    fn add_assign(&mut self, other: &PerOutcome<u64>) {
        for (outcome, count) in other.iter() {
            let total = self.get_mut(outcome);
            *total = total.saturating_add(*count);
        }
    }
}
