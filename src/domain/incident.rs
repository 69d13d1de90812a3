//! The postmortem of one ownership overlap, from the audit and the authority's history alone:
//! how long the stale owner was silent, when its grant lapsed, whether any of its writes got
//! through after that and before the successor's first write, and how long it kept trying.
//! `GET /v1/overlaps/{id}/report` and `fencewatch audit report` send these facts.

use super::audit::{
    deserialize_optional_rfc3339, deserialize_rfc3339, serialize_optional_rfc3339_micros,
    serialize_rfc3339_micros,
};
use super::lease_history::{LeaseChange, LeaseEvent};
use super::{AuditEntry, Outcome, Overlap};
use chrono::{DateTime, TimeDelta, Utc};
use serde::{Deserialize, Serialize};

/// How far the incident's window reaches before the stale owner's last activity and after its
/// last refusal: enough to show what led in and out, not the resource's whole history.
pub const WINDOW_MARGIN: TimeDelta = TimeDelta::seconds(1);

/// The facts of one incident (API.md, "Incident reports"). Times are `null` where the history
/// cannot tell; durations are whole milliseconds.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct IncidentReport {
    pub incident: i64,
    pub resource: String,
    /// The watched database the overlap was seen in; `null` for the audit read itself.
    pub source: Option<String>,
    pub stale_generation: i64,
    pub stale_owner: Option<String>,
    pub superseding_generation: i64,
    pub superseding_owner: Option<String>,
    #[serde(with = "optional_time")]
    pub stale_last_active_at: Option<DateTime<Utc>>,
    #[serde(with = "optional_time")]
    pub stale_grant_lapsed_at: Option<DateTime<Utc>>,
    #[serde(with = "optional_time")]
    pub superseding_acquired_at: Option<DateTime<Utc>>,
    #[serde(with = "optional_time")]
    pub superseding_first_write_at: Option<DateTime<Utc>>,
    #[serde(with = "optional_time")]
    pub first_refused_at: Option<DateTime<Utc>>,
    #[serde(with = "optional_time")]
    pub last_refused_at: Option<DateTime<Utc>>,
    pub refused: i64,
    pub pause_ms: Option<i64>,
    pub zombie_lifetime_ms: Option<i64>,
    pub accepted_after_lapse: Option<i64>,
    pub timeline: Vec<TimelineEntry>,
}

/// One line of a condensed timeline: an audit row or a lease event, or a run of alike ones
/// folded into one (`count` > 1, from `at` to `last_at`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TimelineEntry {
    #[serde(
        serialize_with = "serialize_rfc3339_micros",
        deserialize_with = "deserialize_rfc3339"
    )]
    pub at: DateTime<Utc>,
    #[serde(with = "optional_time")]
    pub last_at: Option<DateTime<Utc>>,
    pub kind: EntryKind,
    /// The write's outcome (`accepted`, `stale`, …) or the lease's change (`renewed`, …).
    pub event: String,
    pub generation: Option<i64>,
    /// The write's owner or the lease's holder.
    pub owner: Option<String>,
    pub count: u64,
    /// The first row's id: the audit's for a write, the lease history's for a lease event.
    pub id: i64,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum EntryKind {
    Write,
    Lease,
}

mod optional_time {
    use chrono::{DateTime, Utc};
    use serde::{Deserializer, Serializer};

    pub fn serialize<S: Serializer>(
        at: &Option<DateTime<Utc>>,
        serializer: S,
    ) -> Result<S::Ok, S::Error> {
        super::serialize_optional_rfc3339_micros(at, serializer)
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(
        deserializer: D,
    ) -> Result<Option<DateTime<Utc>>, D::Error> {
        super::deserialize_optional_rfc3339(deserializer)
    }
}

/// Whether an outcome is the fence turning a stale owner away.
pub fn is_fenced_out(outcome: Outcome) -> bool {
    matches!(
        outcome,
        Outcome::Stale | Outcome::Superseded | Outcome::LeaseExpired
    )
}

/// What the facts are computed from.
pub struct Evidence<'a> {
    pub overlap: &'a Overlap,
    /// The resource's audit rows of the stale and the superseding generations (others are
    /// ignored), in any order.
    pub writes: &'a [AuditEntry],
    /// The history of the lease (or external lock) that granted the stale generation, in any
    /// order; empty when the writes named none.
    pub history: &'a [LeaseEvent],
    /// Grants that had not ended by now have not lapsed.
    pub now: DateTime<Utc>,
}

/// The facts of the incident, with an empty timeline (`condense` makes one for the window
/// `window` returns).
pub fn facts(evidence: &Evidence<'_>) -> IncidentReport {
    let overlap = evidence.overlap;
    let stale = overlap.stale_token;
    let successor = overlap.superseding_token;
    let mut writes: Vec<&AuditEntry> = evidence.writes.iter().collect();
    writes.sort_by_key(|w| (w.at, w.id));
    let mut history: Vec<&LeaseEvent> = evidence.history.iter().collect();
    history.sort_by_key(|e| (e.at, e.id));

    let refusals: Vec<&AuditEntry> = writes
        .iter()
        .copied()
        .filter(|w| w.token == Some(stale) && is_fenced_out(w.outcome))
        .collect();
    // A watched database's overlap has its rows elsewhere: the overlap's own figures then.
    let (first_refused_at, last_refused_at, refused) = match (refusals.first(), refusals.last()) {
        (Some(first), Some(last)) => (Some(first.at), Some(last.at), refusals.len() as i64),
        _ => (
            Some(overlap.first_seen),
            Some(overlap.last_seen),
            overlap.rejected_writes,
        ),
    };
    let before_refusal = |at: DateTime<Utc>| first_refused_at.is_none_or(|first| at < first);

    let stale_accepted = writes
        .iter()
        .filter(|w| w.token == Some(stale) && w.outcome == Outcome::Accepted);
    let last_write = stale_accepted
        .clone()
        .filter(|w| before_refusal(w.at))
        .map(|w| w.at)
        .max();
    let last_renewal = history
        .iter()
        .filter(|e| {
            e.token == stale
                && matches!(e.event, LeaseChange::Acquired | LeaseChange::Renewed)
                && before_refusal(e.at)
        })
        .map(|e| e.at)
        .max();
    let stale_last_active_at = last_write.max(last_renewal);

    let superseding_acquired_at = history
        .iter()
        .find(|e| e.token == successor && e.event.begins_generation())
        .map(|e| e.at);
    let superseding_first_write_at = writes
        .iter()
        .find(|w| w.token == Some(successor) && w.outcome == Outcome::Accepted)
        .map(|w| w.at);
    // The audit itself shows time got at least as far as its newest row, whatever the reader's
    // clock says.
    let now = writes
        .iter()
        .map(|w| w.at)
        .chain(history.iter().map(|e| e.at))
        .chain([overlap.last_seen])
        .fold(evidence.now, DateTime::max);
    let stale_grant_lapsed_at = lapse(&history, stale, now);
    let accepted_after_lapse = stale_grant_lapsed_at.map(|lapsed| {
        stale_accepted
            .filter(|w| w.at >= lapsed && superseding_first_write_at.is_none_or(|s| w.at < s))
            .count() as i64
    });

    IncidentReport {
        incident: overlap.id,
        resource: overlap.resource.clone(),
        source: overlap.source.clone(),
        stale_generation: stale,
        stale_owner: overlap.stale_owner.clone(),
        superseding_generation: successor,
        superseding_owner: overlap.superseding_owner.clone(),
        stale_last_active_at,
        stale_grant_lapsed_at,
        superseding_acquired_at,
        superseding_first_write_at,
        first_refused_at,
        last_refused_at,
        refused,
        pause_ms: between(stale_last_active_at, first_refused_at),
        zombie_lifetime_ms: between(first_refused_at, last_refused_at),
        accepted_after_lapse,
        timeline: Vec::new(),
    }
}

/// Milliseconds from `from` to `to`, when both are known.
fn between(from: Option<DateTime<Utc>>, to: Option<DateTime<Utc>>) -> Option<i64> {
    Some((to? - from?).num_milliseconds())
}

/// When generation `token`'s grant ended: its expiry as last renewed, its release, or a later
/// generation's grant, whichever came first. An external lock's holder is known to have lost
/// the lock only once its successor is seen holding it.
fn lapse(history: &[&LeaseEvent], token: i64, now: DateTime<Utc>) -> Option<DateTime<Utc>> {
    let granted = history
        .iter()
        .find(|e| e.token == token && e.event.begins_generation())?;
    let takeover = history
        .iter()
        .find(|e| e.token > token && e.event.begins_generation() && e.at >= granted.at)
        .map(|e| e.at);
    if granted.event == LeaseChange::Observed {
        return takeover;
    }
    let mut until = granted.expires_at;
    let mut released = None;
    for event in history
        .iter()
        .filter(|e| e.token == token && takeover.is_none_or(|t| e.at <= t))
    {
        match event.event {
            LeaseChange::Acquired | LeaseChange::Renewed => until = event.expires_at,
            LeaseChange::Released => {
                released.get_or_insert(event.expires_at);
            }
            LeaseChange::Expired | LeaseChange::Observed => {}
        }
    }
    let ended = released.unwrap_or(until);
    let ended = takeover.map_or(ended, |t| ended.min(t));
    (ended <= now).then_some(ended)
}

/// The part of the resource's history the incident needs: from shortly before the first thing
/// it knows of (the stale owner's last activity, its lapse, the successor's grant) to shortly
/// after the stale owner's last refusal.
pub fn window(report: &IncidentReport) -> (DateTime<Utc>, DateTime<Utc>) {
    let starts = [
        report.stale_last_active_at,
        report.stale_grant_lapsed_at,
        report.superseding_acquired_at,
        report.superseding_first_write_at,
        report.first_refused_at,
    ];
    let ends = [
        report.last_refused_at,
        report.first_refused_at,
        report.stale_last_active_at,
    ];
    let start = starts.into_iter().flatten().min();
    let end = ends.into_iter().flatten().max();
    let (start, end) = match (start, end) {
        (Some(start), Some(end)) => (start, end.max(start)),
        (Some(only), None) | (None, Some(only)) => (only, only),
        (None, None) => (DateTime::<Utc>::MIN_UTC, DateTime::<Utc>::MAX_UTC),
    };
    (
        start.checked_sub_signed(WINDOW_MARGIN).unwrap_or(start),
        end.checked_add_signed(WINDOW_MARGIN).unwrap_or(end),
    )
}

/// Which runs of alike entries fold into one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Folding {
    /// Only a lease's repeated renewals (`renewed ×97`): every write stays its own line.
    Renewals,
    /// Also repeated writes of one generation and owner with one outcome.
    Alike,
}

/// The writes and lease events in time order (lease events first at equal times), with runs of
/// alike entries folded.
pub fn condense(
    writes: &[AuditEntry],
    history: &[LeaseEvent],
    folding: Folding,
) -> Vec<TimelineEntry> {
    let mut entries: Vec<(DateTime<Utc>, u8, i64, TimelineEntry)> = Vec::new();
    for w in writes.iter().filter(|w| w.outcome != Outcome::Reset) {
        entries.push((
            w.at,
            1,
            w.id,
            single(
                w.at,
                EntryKind::Write,
                w.outcome.as_str(),
                w.token,
                &w.owner,
                w.id,
            ),
        ));
    }
    for e in history {
        entries.push((
            e.at,
            0,
            e.id,
            single(
                e.at,
                EntryKind::Lease,
                e.event.as_str(),
                Some(e.token),
                &Some(e.holder.clone()),
                e.id,
            ),
        ));
    }
    entries.sort_by_key(|(at, kind, id, _)| (*at, *kind, *id));
    fold(entries.into_iter().map(|(.., entry)| entry), folding)
}

fn single(
    at: DateTime<Utc>,
    kind: EntryKind,
    event: &str,
    generation: Option<i64>,
    owner: &Option<String>,
    id: i64,
) -> TimelineEntry {
    TimelineEntry {
        at,
        last_at: None,
        kind,
        event: event.to_owned(),
        generation,
        owner: owner.clone(),
        count: 1,
        id,
    }
}

/// Folds runs of alike entries (in time order) into one each. A run is broken only by an
/// entry of its own kind: a grant's renewals between a burst's writes still make one line (and
/// the writes between renewals one more), each line saying its span.
pub fn fold(
    entries: impl IntoIterator<Item = TimelineEntry>,
    folding: Folding,
) -> Vec<TimelineEntry> {
    let mut out: Vec<TimelineEntry> = Vec::new();
    for entry in entries {
        let foldable = match folding {
            Folding::Renewals => entry.kind == EntryKind::Lease && entry.event == "renewed",
            Folding::Alike => true,
        };
        let run = out.iter_mut().rev().find(|line| line.kind == entry.kind);
        if let Some(last) = run {
            if foldable
                && last.event == entry.event
                && last.generation == entry.generation
                && last.owner == entry.owner
            {
                last.count += entry.count;
                last.last_at = Some(entry.last_at.unwrap_or(entry.at));
                continue;
            }
        }
        out.push(entry);
    }
    out
}

/// Incidents over a period (`audit summary`): how many per stale owner and per resource, the
/// spread of pauses and zombie lifetimes, and the writes accepted after a lapse.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Summary {
    pub incidents: u64,
    /// Stale owner (`-` when unnamed) and its incidents, most first.
    pub by_owner: Vec<Count>,
    pub by_resource: Vec<Count>,
    pub pause_ms: Percentiles,
    pub zombie_lifetime_ms: Percentiles,
    pub accepted_after_lapse: i64,
    /// Incidents whose lapse the history could not tell, left out of `accepted_after_lapse`.
    pub lapse_unknown: u64,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Count {
    pub name: String,
    pub incidents: u64,
}

/// Nearest-rank percentiles of the known figures; `null` with none.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Percentiles {
    pub count: u64,
    pub p50: Option<i64>,
    pub p90: Option<i64>,
    pub p99: Option<i64>,
    pub max: Option<i64>,
}

impl Percentiles {
    pub fn of(mut values: Vec<i64>) -> Self {
        values.sort_unstable();
        let rank = |p: f64| -> Option<i64> {
            if values.is_empty() {
                return None;
            }
            let index = ((p * values.len() as f64).ceil() as usize).clamp(1, values.len()) - 1;
            values.get(index).copied()
        };
        Percentiles {
            count: values.len() as u64,
            p50: rank(0.50),
            p90: rank(0.90),
            p99: rank(0.99),
            max: values.last().copied(),
        }
    }
}

pub fn summarise(reports: &[IncidentReport]) -> Summary {
    let count = |key: &dyn Fn(&IncidentReport) -> String| -> Vec<Count> {
        let mut counts: std::collections::BTreeMap<String, u64> = Default::default();
        for r in reports {
            *counts.entry(key(r)).or_default() += 1;
        }
        let mut out: Vec<Count> = counts
            .into_iter()
            .map(|(name, incidents)| Count { name, incidents })
            .collect();
        out.sort_by(|a, b| b.incidents.cmp(&a.incidents).then(a.name.cmp(&b.name)));
        out
    };
    Summary {
        incidents: reports.len() as u64,
        by_owner: count(&|r| r.stale_owner.clone().unwrap_or_else(|| "-".to_owned())),
        by_resource: count(&|r| match &r.source {
            Some(source) => format!("{source}:{}", r.resource),
            None => r.resource.clone(),
        }),
        pause_ms: Percentiles::of(reports.iter().filter_map(|r| r.pause_ms).collect()),
        zombie_lifetime_ms: Percentiles::of(
            reports
                .iter()
                .filter_map(|r| r.zombie_lifetime_ms)
                .collect(),
        ),
        accepted_after_lapse: reports.iter().filter_map(|r| r.accepted_after_lapse).sum(),
        lapse_unknown: reports
            .iter()
            .filter(|r| r.accepted_after_lapse.is_none())
            .count() as u64,
    }
}

#[cfg(test)]
mod tests;
