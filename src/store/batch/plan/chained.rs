//! A decided segment's audit rows linked onto their resources' chains, and its `Plan` built from
//! them: the same whether the segment was decided on an observation or on known state.

use super::{link, Change, Decided, Plan};
use crate::store::batch::shared::{ChainHeads, Link, ObservedResource};
use crate::store::chain_heads::{StartingHeads, UnwrittenMoves, UnwrittenSeen};
use crate::store::StoreError;
use std::collections::{BTreeSet, HashMap};

/// What a segment's plan borrows beyond its decisions: the chains' heads after it, each audit
/// row's link, and the `chain_heads` rows it saw. Owned here, apart from the plan, since the
/// plan's changes point into the heads.
pub(crate) struct Chained {
    heads: ChainHeads,
    links: Vec<Link>,
    unwritten_seen: UnwrittenSeen,
}

impl Chained {
    /// Links `decided`'s audit rows from the heads of what it was decided on: `resources`
    /// (observed, or known) and the `chain_heads` rows seen of resources without a row.
    pub fn new(
        decided: &Decided<'_>,
        keys: &BTreeSet<&str>,
        resources: &HashMap<String, ObservedResource>,
        unwritten_rows: Vec<(String, i64, String)>,
    ) -> Result<Self, StoreError> {
        let StartingHeads {
            mut heads,
            unwritten: unwritten_seen,
        } = StartingHeads::new(keys, resources, unwritten_rows)?;
        // From here on, the heads after the segment.
        let links = link(&mut heads, &decided.entries)?;
        Ok(Self {
            heads,
            links,
            unwritten_seen,
        })
    }

    /// The plan of `decided`, as decided on `resources` (the same as given to `new`).
    pub fn plan<'a>(
        &'a self,
        decided: &'a Decided<'_>,
        resources: &'a HashMap<String, ObservedResource>,
    ) -> Result<Plan<'a>, StoreError> {
        let changes = decided.changes(resources, &self.heads)?;
        let unwritten = unwritten_moves(&self.unwritten_seen, &changes);
        Ok(Plan {
            writes: decided.writes,
            decisions: &decided.decisions,
            changes,
            entries: &decided.entries,
            links: &self.links,
            unwritten,
            stale_writes: &decided.stale_writes,
        })
    }
}

/// How the segment moves the `chain_heads` rows of its resources that have no row of their own.
fn unwritten_moves(seen: &UnwrittenSeen, changes: &[Change<'_>]) -> UnwrittenMoves {
    UnwrittenMoves::new(
        seen,
        changes
            .iter()
            .filter(|change| change.observed.is_none())
            .map(|change| (change.key, change.accepted.is_some(), change.head)),
    )
}
