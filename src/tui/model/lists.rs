//! What the list views show of the model: the filter, the sorted and filtered lists, and the
//! counts the header and tabs carry.

use super::{Model, OverlapSort};
use crate::api::events::{OverlapEvent, WriteEvent};
use crate::domain::alert::AlertState;
use crate::domain::{Outcome, OverlapState};

impl Model {
    fn matches_filter(&self, fields: &[Option<&str>], numbers: &[Option<i64>]) -> bool {
        if self.filter.is_empty() {
            return true;
        }
        let needle = self.filter.to_lowercase();
        fields
            .iter()
            .flatten()
            .any(|text| text.to_lowercase().contains(&needle))
            || numbers.iter().flatten().any(|n| n.to_string() == needle)
    }

    /// Overlaps that pass the filter, in the chosen order.
    pub fn visible_overlaps(&self) -> Vec<&OverlapEvent> {
        let mut overlaps: Vec<&OverlapEvent> = self
            .overlaps
            .values()
            .filter(|o| {
                let o = &o.overlap;
                self.matches_filter(
                    &[
                        Some(&o.resource),
                        o.source.as_deref(),
                        o.stale_owner.as_deref(),
                        o.superseding_owner.as_deref(),
                        Some(o.state.as_str()),
                    ],
                    &[Some(o.stale_token), Some(o.superseding_token)],
                )
            })
            .collect();
        match self.sort {
            OverlapSort::LastSeen => {
                overlaps.sort_by_key(|o| std::cmp::Reverse(o.overlap.last_seen))
            }
            OverlapSort::Count => {
                overlaps.sort_by_key(|o| std::cmp::Reverse(o.overlap.rejected_writes))
            }
            OverlapSort::Resource => {
                overlaps.sort_by(|a, b| a.overlap.resource.cmp(&b.overlap.resource))
            }
        }
        overlaps
    }

    /// Rejected writes that pass the filter (resource, owner or outcome), newest first.
    pub fn visible_rejections(&self) -> Vec<&WriteEvent> {
        self.rejections
            .iter()
            .map(|r| &**r)
            .filter(|r| {
                self.matches_filter(
                    &[
                        Some(&r.resource),
                        r.source.as_deref(),
                        r.owner.as_deref(),
                        Some(r.outcome.as_str()),
                    ],
                    &[r.token],
                )
            })
            .collect()
    }

    /// Who holds the higher generation that refused `row`, as far as the dashboard knows:
    /// the newer owner its overlap (its resource and generation) names, as long as that overlap
    /// is still about the generation the row was refused by.
    pub fn holder_of(&self, row: &WriteEvent) -> Option<&str> {
        let token = row.token?;
        self.overlaps
            .values()
            .map(|o| &o.overlap)
            .find(|o| {
                o.resource == row.resource
                    && o.source == row.source
                    && o.stale_token == token
                    && o.superseding_token == row.highest_token
            })?
            .superseding_owner
            .as_deref()
    }

    /// Whether any overlap or rejection came from a watched database: the lists then show
    /// each row's source.
    pub fn shows_sources(&self) -> bool {
        !self.sources.is_empty()
            || self.overlaps.values().any(|o| o.overlap.source.is_some())
            || self.rejections.iter().any(|r| r.source.is_some())
    }

    pub fn open_overlaps(&self) -> usize {
        self.overlaps
            .values()
            .filter(|o| o.overlap.state == OverlapState::Open)
            .count()
    }

    pub fn firing_alerts(&self) -> usize {
        self.alerts
            .values()
            .filter(|a| a.state == AlertState::Firing)
            .count()
    }

    pub fn total(&self, outcome: Outcome) -> u64 {
        *self.totals.get(outcome)
    }

    /// Seconds since the last event, if any.
    pub fn data_age(&self) -> Option<i64> {
        self.last_event.map(|at| (self.now - at).max(0))
    }
}
