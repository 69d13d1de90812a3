//! What the demo tells at its end: the incidents with their resources and generations, the
//! alerts that fired and resolved, where the database is and how to look at it again.

use crate::api::events::{AlertEvent, PerOutcome};
use crate::domain::alert::AlertState;
use crate::domain::audit::{serialize_optional_rfc3339_micros, serialize_rfc3339_micros};
use crate::domain::{Overlap, OverlapState};
use crate::live::alerts::{default_rules, Rule};
use chrono::{DateTime, Utc};
use serde::Serialize;

/// The summary, printed as text or (`--json`) as this object.
#[derive(Debug, Clone, Serialize)]
pub struct Summary {
    pub seconds: f64,
    pub workers: usize,
    pub resources: usize,
    /// Totals per outcome.
    pub writes: PerOutcome<u64>,
    /// How many incidents (ownership overlaps), and how many are still open.
    pub overlaps: usize,
    pub open_overlaps: usize,
    /// The incidents, oldest first.
    pub incidents: Vec<Overlap>,
    pub alerts_fired: u64,
    pub alerts_resolved: u64,
    /// The alerts that fired: rule, and resource for per-resource rules.
    pub alerts: Vec<String>,
    /// Each firing, with when it fired and resolved.
    pub alert_history: Vec<AlertRecord>,
    /// The rules the demo ran with, and `serve`'s built-in ones they differ from.
    pub rules: RulesNote,
    pub database: DatabaseNote,
}

/// The demo pages on a burst of a few refused writes within seconds, so that a minute of demo
/// shows an alert fire and resolve; `serve`'s built-in rules wait for a sustained spike.
#[derive(Debug, Clone, Serialize)]
pub struct RulesNote {
    pub demo: Vec<String>,
    pub built_in: Vec<String>,
}

impl RulesNote {
    pub fn new(demo: &[Rule]) -> Self {
        Self {
            demo: demo.iter().map(Rule::describe).collect(),
            built_in: default_rules().iter().map(Rule::describe).collect(),
        }
    }

    /// The lines the summary prints (the dashboard's header says the same in short).
    pub fn lines(&self) -> Vec<String> {
        let mut lines =
            vec!["alert rules: the demo's, tuned to page on a burst within seconds:".to_owned()];
        lines.extend(self.demo.iter().map(|rule| format!("  {rule}")));
        lines.push(
            "  serve's built-in rules (a sustained spike; yours with --config FILE):".to_owned(),
        );
        lines.extend(self.built_in.iter().map(|rule| format!("  {rule}")));
        lines
    }
}

/// One firing of an alert.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct AlertRecord {
    pub rule: String,
    pub resource: Option<String>,
    #[serde(serialize_with = "serialize_rfc3339_micros")]
    pub fired_at: DateTime<Utc>,
    #[serde(serialize_with = "serialize_optional_rfc3339_micros")]
    pub resolved_at: Option<DateTime<Utc>>,
}

/// Where the demo's database is after the run.
#[derive(Debug, Clone, Serialize)]
pub struct DatabaseNote {
    /// Its URL, any password masked (`crate::redact::redact_url`).
    pub url: String,
    /// False for the temporary file, deleted as the demo ends.
    pub kept: bool,
    /// The command that ran the demo, as the hints repeat it: `fencewatch demo`, or
    /// `target/release/fencewatch demo --authority etcd` when run as `cargo run` runs it.
    #[serde(skip)]
    pub demo_command: String,
}

impl DatabaseNote {
    /// `database` (its password masked), `kept` or not; `demo` is how the demo was asked
    /// for after the program's name (`demo`, `demo --authority etcd`).
    pub fn new(database: &str, kept: bool, demo: &str) -> Self {
        Self {
            url: crate::redact::redact_url(database),
            kept,
            demo_command: format!("{} {demo}", program()),
        }
    }

    /// Where the database is, and how to look at it again.
    pub fn lines(&self) -> Vec<String> {
        let url = &self.url;
        let program = self
            .demo_command
            .split_whitespace()
            .next()
            .unwrap_or("fencewatch");
        if self.kept {
            vec![
                format!("database: kept at {url}"),
                format!("look again: {program} audit incidents --database {url}"),
                format!("        or: {program} audit timeline RESOURCE --database {url}"),
            ]
        } else {
            vec![
                format!(
                    "database: {url} was temporary and is deleted now; to keep one, run \
                     {} --database sqlite://demo.db",
                    self.demo_command
                ),
                format!("then look again: {program} audit incidents --database sqlite://demo.db"),
            ]
        }
    }
}

/// This program as it was started, so that a hint pasted into the same shell runs: a path
/// (`target/release/fencewatch`, from `cargo run`) as given, else `fencewatch`.
fn program() -> String {
    std::env::args()
        .next()
        .filter(|started_as| started_as.contains('/') && !started_as.contains(char::is_whitespace))
        .unwrap_or_else(|| "fencewatch".to_owned())
}

/// `writes: accepted 10, stale 2`: the outcomes that happened, with their totals.
pub fn writes_line(totals: &PerOutcome<u64>) -> String {
    let writes: Vec<String> = totals
        .iter()
        .filter(|(_, n)| **n > 0)
        .map(|(outcome, n)| format!("{outcome} {n}"))
        .collect();
    format!("writes: {}", writes.join(", "))
}

/// The incidents, oldest first, one line each after a count.
pub fn incident_lines(incidents: &[Overlap]) -> Vec<String> {
    let open = incidents
        .iter()
        .filter(|o| o.state == OverlapState::Open)
        .count();
    let mut lines = vec![format!(
        "incidents (ownership overlaps): {} ({open} still open)",
        incidents.len()
    )];
    let owner = |who: &Option<String>| who.clone().unwrap_or_else(|| "-".to_owned());
    for o in incidents {
        lines.push(format!(
            "  {} {} gen {} ({}) < {} ({}): {} refused, {}",
            o.first_seen.format("%H:%M:%S"),
            o.resource,
            o.stale_token,
            owner(&o.stale_owner),
            o.superseding_token,
            owner(&o.superseding_owner),
            o.rejected_writes,
            o.state.as_str(),
        ));
    }
    lines
}

/// Alert changes as the bus announces them, kept as firings with their resolution.
#[derive(Debug, Default)]
pub struct AlertLog {
    pub records: Vec<AlertRecord>,
}

impl AlertLog {
    pub fn observe(&mut self, alert: &AlertEvent, now: DateTime<Utc>) {
        let open = self.records.iter_mut().rev().find(|r| {
            r.rule == alert.rule && r.resource == alert.resource && r.resolved_at.is_none()
        });
        match (alert.state, open) {
            (AlertState::Firing, None) => self.records.push(AlertRecord {
                rule: alert.rule.clone(),
                resource: alert.resource.clone(),
                fired_at: now,
                resolved_at: None,
            }),
            (AlertState::Inactive | AlertState::Pending, Some(record)) => {
                record.resolved_at = Some(now)
            }
            _ => {}
        }
    }
}

impl Summary {
    pub fn new(
        seconds: f64,
        (workers, resources): (usize, usize),
        writes: PerOutcome<u64>,
        mut incidents: Vec<Overlap>,
        alerts: Vec<AlertRecord>,
        rules: RulesNote,
        database: DatabaseNote,
    ) -> Self {
        incidents.sort_by_key(|o| (o.first_seen, o.id));
        let open = incidents
            .iter()
            .filter(|o| o.state == OverlapState::Open)
            .count();
        Self {
            seconds,
            workers,
            resources,
            writes,
            overlaps: incidents.len(),
            open_overlaps: open,
            incidents,
            alerts_fired: alerts.len() as u64,
            alerts_resolved: alerts.iter().filter(|a| a.resolved_at.is_some()).count() as u64,
            alerts: alerts.iter().map(alert_name).collect(),
            alert_history: alerts,
            rules,
            database,
        }
    }

    /// The summary as a person reads it.
    pub fn text(&self) -> String {
        let mut lines = vec![format!(
            "demo ran {:.0}s with {} workers on {} resources",
            self.seconds, self.workers, self.resources
        )];
        lines.push(writes_line(&self.writes));
        lines.extend(incident_lines(&self.incidents));
        lines.push(format!(
            "alerts: {} fired, {} resolved",
            self.alerts_fired, self.alerts_resolved
        ));
        for a in &self.alert_history {
            let resolved = a.resolved_at.map_or_else(
                || "still firing".to_owned(),
                |at| format!("resolved {}", at.format("%H:%M:%S")),
            );
            lines.push(format!(
                "  {} fired {}, {resolved}",
                alert_name(a),
                a.fired_at.format("%H:%M:%S")
            ));
        }
        lines.extend(self.rules.lines());
        lines.extend(self.database.lines());
        lines.join("\n")
    }
}

/// The dashboard's header note in the demo: its first rule beside the built-in one it stands in
/// for (the summary says them all).
pub fn header_note(demo: &[Rule]) -> String {
    match (demo.first(), default_rules().first()) {
        (Some(demo), Some(built_in)) => format!(
            "demo alerts page above {} refused writes in {} (serve's built-in: {} in {})",
            demo.threshold,
            humantime::format_duration(demo.window),
            built_in.threshold,
            humantime::format_duration(built_in.window),
        ),
        _ => "demo".to_owned(),
    }
}

fn alert_name(alert: &AlertRecord) -> String {
    match &alert.resource {
        Some(resource) => format!("{} on {resource}", alert.rule),
        None => alert.rule.clone(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn alert(state: AlertState, resource: Option<&str>) -> AlertEvent {
        AlertEvent {
            rule: "StaleOwnerSpike".into(),
            resource: resource.map(str::to_owned),
            source: None,
            state,
            since: None,
            fired_at: None,
            value: 0,
            threshold: 2,
            window_seconds: 10.0,
            for_seconds: 1.0,
            keep_firing_for_seconds: 5.0,
            labels: std::collections::BTreeMap::new(),
            summary: String::new(),
        }
    }

    fn t(seconds: i64) -> DateTime<Utc> {
        DateTime::from_timestamp(1_764_000_000 + seconds, 0).unwrap()
    }

    #[test]
    fn a_firing_is_recorded_once_and_closed_when_it_resolves() {
        let mut log = AlertLog::default();
        log.observe(&alert(AlertState::Pending, None), t(0));
        assert!(log.records.is_empty(), "pending is not firing");
        log.observe(&alert(AlertState::Firing, None), t(1));
        log.observe(&alert(AlertState::Firing, None), t(2));
        log.observe(&alert(AlertState::Firing, Some("a")), t(2));
        log.observe(&alert(AlertState::Inactive, None), t(9));
        assert_eq!(log.records.len(), 2);
        assert_eq!(log.records[0].fired_at, t(1));
        assert_eq!(log.records[0].resolved_at, Some(t(9)));
        assert_eq!(log.records[1].resolved_at, None);
        log.observe(&alert(AlertState::Firing, None), t(20));
        assert_eq!(log.records.len(), 3, "a second firing is another record");

        let summary = Summary::new(
            30.0,
            (4, 3),
            PerOutcome {
                accepted: 10,
                ..PerOutcome::default()
            },
            Vec::new(),
            log.records,
            RulesNote::new(&[]),
            DatabaseNote {
                url: "sqlite://demo.db".into(),
                kept: true,
                demo_command: "target/release/fencewatch demo".into(),
            },
        );
        assert_eq!((summary.alerts_fired, summary.alerts_resolved), (3, 1));
        let text = summary.text();
        assert!(text.contains("writes: accepted 10\n"), "{text}");
        assert_eq!(
            header_note(&crate::live::alerts::AlertConfig::default().rules),
            "demo alerts page above 20 refused writes in 1m (serve's built-in: 20 in 1m)"
        );
        assert!(
            text.contains("serve's built-in rules")
                && text.contains("StaleOwnerSpike: more than 20 stale or superseded writes"),
            "{text}"
        );
        assert!(text.contains("StaleOwnerSpike on a fired"), "{text}");
        assert!(
            text.contains(
                "look again: target/release/fencewatch audit incidents --database sqlite://demo.db"
            ),
            "{text}"
        );
    }
}
