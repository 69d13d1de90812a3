//! What this daemon knows of its resources' committed state from its own batches, so that a
//! batch on PostgreSQL can be decided without reading them first and applied and committed in
//! one round trip (`postgres`).
//!
//! Knowledge is only ever a guess: the statement that applies a batch decided on it is a
//! compare-and-set on each resource's revision and chain head, whose hash covers the resource's
//! whole audit history. Another daemon's commit, a batch that failed after this one recorded
//! it, anything else, and the statement changes nothing; the batch is then decided again on a
//! fresh observation, which corrects what is known.

use super::plan::Change;
use super::shared::ObservedResource;
use std::collections::{BTreeSet, HashMap};
use std::sync::{Mutex, MutexGuard};

/// Resources known at most: past it, everything is forgotten and learnt again from the
/// batches that follow. A few hundred bytes each.
const CAPACITY: usize = 65_536;

#[derive(Default)]
pub(crate) struct KnownResources {
    resources: Mutex<HashMap<String, ObservedResource>>,
}

impl KnownResources {
    /// The state of every one of `keys`, or `None` if any is unknown.
    pub(super) fn all_of(
        &self,
        keys: &BTreeSet<&str>,
    ) -> Option<HashMap<String, ObservedResource>> {
        let known = self.lock();
        keys.iter()
            .map(|key| Some(((*key).to_owned(), known.get(*key)?.clone())))
            .collect()
    }

    /// Records what a committed batch left: every resource it changed now has a row.
    pub(super) fn remember(&self, changes: &[Change<'_>]) {
        let mut known = self.lock();
        if known.len() + changes.len() > CAPACITY {
            known.clear();
        }
        for change in changes {
            let Some(resource) = after(change) else {
                continue;
            };
            match known.get_mut(change.key) {
                Some(entry) => *entry = resource,
                None => {
                    known.insert(change.key.to_owned(), resource);
                }
            }
        }
    }

    /// Forgets `keys`: a batch on them failed, or found them other than known.
    pub(in crate::store) fn forget<'k>(&self, keys: impl IntoIterator<Item = &'k str>) {
        let mut known = self.lock();
        for key in keys {
            known.remove(key);
        }
    }

    fn lock(&self) -> MutexGuard<'_, HashMap<String, ObservedResource>> {
        // Every change is one call that leaves the map consistent, even if it panicked.
        self.resources
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

/// A resource's row as `change` leaves it; `None` for one that still has no row (its head is
/// in `chain_heads`).
fn after(change: &Change<'_>) -> Option<ObservedResource> {
    let (state, owner) = match (&change.accepted, change.observed) {
        (Some(accepted), _) => (accepted.state, accepted.owner.map(str::to_owned)),
        (None, Some(observed)) => (observed.state, observed.owner.clone()),
        (None, None) => return None,
    };
    Some(ObservedResource {
        state,
        owner,
        chain: change.head.clone(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::{ResourceState, Revision};

    fn resource(revision: i64) -> ObservedResource {
        ObservedResource {
            state: ResourceState {
                highest_token: 7,
                revision: Revision::new(revision).unwrap(),
            },
            owner: None,
            chain: (revision, format!("h{revision}")),
        }
    }

    fn change<'a>(
        key: &'a str,
        observed: &'a ObservedResource,
        head: &'a (i64, String),
    ) -> Change<'a> {
        Change {
            key,
            observed: Some(observed),
            accepted: None,
            head,
        }
    }

    #[test]
    fn all_or_nothing_forgotten_on_failure_and_bounded() {
        let known = KnownResources::default();
        let (seen, head) = (resource(1), (2, "h2".to_owned()));
        known.remember(&[change("a", &seen, &head), change("b", &seen, &head)]);
        let both = known
            .all_of(&BTreeSet::from(["a", "b"]))
            .expect("both known");
        assert_eq!(both["a"].chain, head, "the head the batch left");
        assert!(
            known.all_of(&BTreeSet::from(["a", "c"])).is_none(),
            "c is not known"
        );
        known.forget(["a"]);
        assert!(known.all_of(&BTreeSet::from(["a"])).is_none());

        // Past its capacity it starts over rather than grow.
        let keys: Vec<String> = (0..CAPACITY + 10).map(|i| format!("r{i}")).collect();
        for chunk in keys.chunks(1000) {
            let changes: Vec<Change<'_>> =
                chunk.iter().map(|key| change(key, &seen, &head)).collect();
            known.remember(&changes);
        }
        assert!(known.lock().len() <= CAPACITY);
        assert!(known
            .all_of(&BTreeSet::from([keys[CAPACITY + 9].as_str()]))
            .is_some());
    }
}
