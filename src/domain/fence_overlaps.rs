//! What the audit of a fence installed in the user's own database shows of ownership overlaps:
//! each `stale` or `superseded` row is a stale generation still writing after a newer one was
//! accepted (or issued by the lease it names). The watcher of `serve --watch` records these as
//! the daemon records its own; `fencewatch audit incidents` on an installed fence, which has no
//! overlaps table, derives the incidents from the same rows.

use super::fence_audit::FenceAuditRow;
use super::{Outcome, Overlap, OverlapState};
use chrono::DateTime;
use std::collections::HashMap;

/// Scopes whose accepting owner is remembered at most: past it the memory starts over (an
/// overlap then shows its superseding owner only once the watcher has seen that owner write).
const REMEMBERED_SCOPES: usize = 100_000;

/// Who set each scope's highest accepted generation, as far as the rows seen so far tell.
#[derive(Debug, Clone, Default)]
pub struct ScopeOwners {
    by_scope: HashMap<String, (i64, Option<String>)>,
}

impl ScopeOwners {
    /// Takes in one row, in id order.
    pub fn observe(&mut self, row: &FenceAuditRow) {
        let Some(token) = row.token else {
            return;
        };
        if row.known_outcome() != Some(Outcome::Accepted) || token != row.highest_token {
            return;
        }
        if self.by_scope.len() >= REMEMBERED_SCOPES && !self.by_scope.contains_key(&row.resource) {
            self.by_scope.clear();
        }
        self.by_scope
            .insert(row.resource.clone(), (token, row.owner.clone()));
    }

    /// The owner whose write made `token` the scope's highest, if it was seen.
    pub fn owner_of(&self, scope: &str, token: i64) -> Option<&str> {
        match self.by_scope.get(scope) {
            Some((seen, owner)) if *seen == token => owner.as_deref(),
            _ => None,
        }
    }
}

/// One overlap as a run of rows shows it, merged per scope and stale generation in row order:
/// the highest superseding generation (with its owner), the last stale owner named, when it was
/// first and last seen (the rows' own times) and how many writes it refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OverlapSighting {
    pub resource: String,
    pub stale_token: i64,
    pub superseding_token: i64,
    pub stale_owner: Option<String>,
    pub superseding_owner: Option<String>,
    pub first_seen_us: i64,
    pub last_seen_us: i64,
    pub rejected_writes: i64,
}

/// Refused rows of one scope, outcome and second (the row's own time, truncated).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WatchedCount {
    pub resource: String,
    pub outcome: Outcome,
    pub second_us: i64,
    pub count: i64,
}

/// What a page of rows adds: its overlaps' sightings and its refusals counted.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PageSummary {
    pub sightings: Vec<OverlapSighting>,
    pub counts: Vec<WatchedCount>,
}

/// The generation that superseded a refused row: the scope's highest for a stale one; for one a
/// lease superseded, the lease's newer generation as the row's detail states it (`… superseded
/// by N`), which the scope may not have seen yet.
pub fn superseding_token(row: &FenceAuditRow) -> i64 {
    let stated = row
        .detail
        .as_deref()
        .and_then(|detail| detail.rsplit_once("superseded by "))
        .and_then(|(_, rest)| {
            let digits: String = rest.chars().take_while(char::is_ascii_digit).collect();
            digits.parse::<i64>().ok()
        });
    match (row.known_outcome(), stated) {
        (Some(Outcome::Superseded), Some(stated)) => stated.max(row.highest_token),
        _ => row.highest_token,
    }
}

/// The sighting one row is, if it is a stale generation refused: `stale` or `superseded`.
pub fn sighting(row: &FenceAuditRow, owners: &ScopeOwners) -> Option<OverlapSighting> {
    let outcome = row.known_outcome()?;
    if !matches!(outcome, Outcome::Stale | Outcome::Superseded) {
        return None;
    }
    let stale_token = row.token?;
    let superseding_token = superseding_token(row);
    let at_us = row.at.timestamp_micros();
    Some(OverlapSighting {
        resource: row.resource.clone(),
        stale_token,
        superseding_token,
        stale_owner: row.owner.clone(),
        superseding_owner: owners
            .owner_of(&row.resource, superseding_token)
            .map(str::to_owned),
        first_seen_us: at_us,
        last_seen_us: at_us,
        rejected_writes: 1,
    })
}

/// Joins a later sighting of the same overlap onto an earlier one.
fn join(into: &mut OverlapSighting, later: OverlapSighting) {
    if later.superseding_token > into.superseding_token {
        into.superseding_token = later.superseding_token;
        into.superseding_owner = later.superseding_owner;
    } else if later.superseding_token == into.superseding_token && into.superseding_owner.is_none()
    {
        into.superseding_owner = later.superseding_owner;
    }
    if later.stale_owner.is_some() {
        into.stale_owner = later.stale_owner;
    }
    into.first_seen_us = into.first_seen_us.min(later.first_seen_us);
    into.last_seen_us = later.last_seen_us;
    into.rejected_writes += later.rejected_writes;
}

/// The sightings and counts of `rows` (in id order), with `owners` taking in each row as it
/// goes, so that a stale row names the owner whose accepted write superseded it.
pub fn summarize(rows: &[FenceAuditRow], owners: &mut ScopeOwners) -> PageSummary {
    let mut sightings: Vec<OverlapSighting> = Vec::new();
    let mut places: HashMap<(String, i64), usize> = HashMap::new();
    let mut counts: Vec<WatchedCount> = Vec::new();
    let mut counted: HashMap<(String, Outcome, i64), usize> = HashMap::new();
    for row in rows {
        owners.observe(row);
        if let Some(found) = sighting(row, owners) {
            let key = (found.resource.clone(), found.stale_token);
            match places.get(&key) {
                Some(&place) => join(&mut sightings[place], found),
                None => {
                    places.insert(key, sightings.len());
                    sightings.push(found);
                }
            }
        }
        let Some(outcome) = row.known_outcome().filter(|o| o.is_rejection()) else {
            continue;
        };
        let at_us = row.at.timestamp_micros();
        let second_us = at_us - at_us.rem_euclid(1_000_000);
        let key = (row.resource.clone(), outcome, second_us);
        match counted.get(&key) {
            Some(&place) => counts[place].count += 1,
            None => {
                counted.insert(key, counts.len());
                counts.push(WatchedCount {
                    resource: row.resource.clone(),
                    outcome,
                    second_us,
                    count: 1,
                });
            }
        }
    }
    PageSummary { sightings, counts }
}

/// The incidents a fence's whole audit shows, as the daemon would have recorded them had it
/// watched from the start: one per scope and stale generation while its refusals come less than
/// `quiet_us` apart, closed `quiet_us` after its last one (if that is before `now_us`). Numbered
/// from 1 in the order they opened; oldest first.
pub fn incidents(rows: &[FenceAuditRow], quiet_us: i64, now_us: i64) -> Vec<Overlap> {
    let mut owners = ScopeOwners::default();
    let mut incidents: Vec<Overlap> = Vec::new();
    let mut open: HashMap<(String, i64), usize> = HashMap::new();
    for row in rows {
        owners.observe(row);
        let Some(seen) = sighting(row, &owners) else {
            continue;
        };
        let key = (seen.resource.clone(), seen.stale_token);
        let quiet_since = |overlap: &Overlap| {
            overlap
                .last_seen
                .timestamp_micros()
                .saturating_add(quiet_us)
                < seen.last_seen_us
        };
        let place = match open.get(&key) {
            Some(&place) if !quiet_since(&incidents[place]) => place,
            _ => {
                incidents.push(opened(incidents.len() as i64 + 1, &seen));
                open.insert(key, incidents.len() - 1);
                continue;
            }
        };
        let incident = &mut incidents[place];
        let mut merged = as_sighting(incident);
        join(&mut merged, seen);
        incident.superseding_token = merged.superseding_token;
        incident.superseding_owner = merged.superseding_owner;
        incident.stale_owner = merged.stale_owner;
        incident.last_seen = time(merged.last_seen_us);
        incident.rejected_writes = merged.rejected_writes;
    }
    for incident in &mut incidents {
        let closes_at = incident
            .last_seen
            .timestamp_micros()
            .saturating_add(quiet_us);
        if closes_at <= now_us {
            incident.state = OverlapState::Closed;
            incident.closed_at = Some(time(closes_at));
        }
    }
    incidents
}

fn time(us: i64) -> DateTime<chrono::Utc> {
    DateTime::from_timestamp_micros(us).unwrap_or_default()
}

fn opened(id: i64, seen: &OverlapSighting) -> Overlap {
    Overlap {
        id,
        resource: seen.resource.clone(),
        source: None,
        stale_token: seen.stale_token,
        superseding_token: seen.superseding_token,
        stale_owner: seen.stale_owner.clone(),
        superseding_owner: seen.superseding_owner.clone(),
        first_seen: time(seen.first_seen_us),
        last_seen: time(seen.last_seen_us),
        rejected_writes: seen.rejected_writes,
        state: OverlapState::Open,
        closed_at: None,
    }
}

fn as_sighting(overlap: &Overlap) -> OverlapSighting {
    OverlapSighting {
        resource: overlap.resource.clone(),
        stale_token: overlap.stale_token,
        superseding_token: overlap.superseding_token,
        stale_owner: overlap.stale_owner.clone(),
        superseding_owner: overlap.superseding_owner.clone(),
        first_seen_us: overlap.first_seen.timestamp_micros(),
        last_seen_us: overlap.last_seen.timestamp_micros(),
        rejected_writes: overlap.rejected_writes,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const T0: i64 = 1_764_474_000_000_000;

    fn row(
        id: i64,
        scope: &str,
        outcome: &str,
        token: i64,
        highest: i64,
        owner: &str,
    ) -> FenceAuditRow {
        FenceAuditRow {
            id,
            at: time(T0 + id * 1_000_000),
            resource: scope.into(),
            outcome: outcome.into(),
            token: Some(token),
            highest_token: highest,
            idempotency_key: None,
            owner: Some(owner.into()),
            lease: None,
            detail: None,
            table_name: Some("public.orders".into()),
            seq: id,
            prev_hash: None,
            hash: None,
        }
    }

    #[test]
    fn a_stale_row_names_the_owner_whose_write_superseded_it() {
        let rows = [
            row(1, "eu", "accepted", 7, 7, "old"),
            row(2, "eu", "accepted", 8, 8, "new"),
            row(3, "eu", "stale", 7, 8, "old"),
            row(4, "eu", "stale", 7, 8, "old"),
            row(5, "us", "stale", 3, 9, "zombie"),
            row(6, "eu", "replayed", 8, 8, "new"),
        ];
        let mut owners = ScopeOwners::default();
        let page = summarize(&rows, &mut owners);
        assert_eq!(
            page.sightings,
            [
                OverlapSighting {
                    resource: "eu".into(),
                    stale_token: 7,
                    superseding_token: 8,
                    stale_owner: Some("old".into()),
                    superseding_owner: Some("new".into()),
                    first_seen_us: T0 + 3_000_000,
                    last_seen_us: T0 + 4_000_000,
                    rejected_writes: 2,
                },
                OverlapSighting {
                    resource: "us".into(),
                    stale_token: 3,
                    superseding_token: 9,
                    stale_owner: Some("zombie".into()),
                    superseding_owner: None,
                    first_seen_us: T0 + 5_000_000,
                    last_seen_us: T0 + 5_000_000,
                    rejected_writes: 1,
                },
            ]
        );
        let counted: Vec<(&str, Outcome, i64)> = page
            .counts
            .iter()
            .map(|c| (c.resource.as_str(), c.outcome, c.count))
            .collect();
        assert_eq!(
            counted,
            [
                ("eu", Outcome::Stale, 1),
                ("eu", Outcome::Stale, 1),
                ("us", Outcome::Stale, 1)
            ],
            "one count per second; accepted and replayed rows are not refusals"
        );
        // The owner is remembered across pages.
        let later = summarize(&[row(9, "eu", "stale", 6, 8, "older")], &mut owners);
        assert_eq!(later.sightings[0].superseding_owner.as_deref(), Some("new"));
    }

    #[test]
    fn a_lease_superseded_row_is_superseded_by_the_generation_its_detail_states() {
        let mut superseded = row(1, "eu", "superseded", 7, 5, "zombie");
        superseded.detail = Some("generation 7 of lease billing was superseded by 9".into());
        assert_eq!(superseding_token(&superseded), 9);
        superseded.detail = None;
        assert_eq!(superseding_token(&superseded), 5);
        let stale = row(2, "eu", "stale", 4, 6, "w");
        assert_eq!(superseding_token(&stale), 6);
        assert_eq!(
            sighting(&row(3, "eu", "invalid", 0, 6, "w"), &ScopeOwners::default()),
            None
        );
    }

    #[test]
    fn incidents_split_at_a_quiet_period_and_close_after_one() {
        let quiet = 10_000_000;
        let rows = [
            row(1, "eu", "accepted", 8, 8, "new"),
            row(2, "eu", "stale", 7, 8, "old"),
            row(3, "eu", "stale", 7, 8, "old"),
            // 20 s later: a new incident of the same generation.
            row(23, "eu", "stale", 7, 8, "old"),
        ];
        let found = incidents(&rows, quiet, T0 + 28_000_000);
        assert_eq!(found.len(), 2);
        assert_eq!((found[0].id, found[0].rejected_writes), (1, 2));
        assert_eq!(found[0].state, OverlapState::Closed);
        assert_eq!(
            found[0].closed_at.map(|at| at.timestamp_micros()),
            Some(T0 + 13_000_000)
        );
        assert_eq!(found[0].superseding_owner.as_deref(), Some("new"));
        assert_eq!((found[1].id, found[1].rejected_writes), (2, 1));
        assert_eq!(found[1].state, OverlapState::Open);
        assert_eq!(found[1].closed_at, None);
    }
}
