//! The dashboard's state and how messages change it. Knows nothing of ratatui: the view is a
//! pure function of this model, and every rule here is tested by feeding it messages.

use crate::domain::Outcome;
use crate::events::StatsWindow;
use serde_json::Value;
use std::collections::{BTreeMap, VecDeque};
use std::time::Duration;

/// Rejected writes kept for the log.
pub const REJECTION_LOG: usize = 2000;
/// The chart's time windows, in seconds.
pub const WINDOWS: [u64; 4] = [30, 60, 120, 300];

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum View {
    Overview,
    Overlaps,
    Rejections,
    Alerts,
    /// A resource's writes around an incident.
    Timeline,
}

impl View {
    pub const TABS: [View; 4] = [
        View::Overview,
        View::Overlaps,
        View::Rejections,
        View::Alerts,
    ];

    pub fn title(self) -> &'static str {
        match self {
            View::Overview => "Overview",
            View::Overlaps => "Overlaps",
            View::Rejections => "Rejections",
            View::Alerts => "Alerts",
            View::Timeline => "Timeline",
        }
    }
}

#[derive(Debug, Clone, PartialEq)]
pub enum Connection {
    Connecting,
    Live,
    /// Lost; the next attempt is in `retry_in` (attempt counts from 1).
    Reconnecting {
        attempt: u32,
        retry_in: Duration,
        error: String,
    },
}

/// How the overlaps table is sorted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OverlapSort {
    LastSeen,
    Count,
    Resource,
}

impl OverlapSort {
    pub fn next(self) -> Self {
        match self {
            OverlapSort::LastSeen => OverlapSort::Count,
            OverlapSort::Count => OverlapSort::Resource,
            OverlapSort::Resource => OverlapSort::LastSeen,
        }
    }

    pub fn label(self) -> &'static str {
        match self {
            OverlapSort::LastSeen => "last seen",
            OverlapSort::Count => "count",
            OverlapSort::Resource => "resource",
        }
    }
}

/// Everything that can happen to the dashboard.
#[derive(Debug, Clone)]
pub enum Msg {
    /// A live event: `write`, `overlap`, `alert` or `stats`, with its JSON data.
    Event {
        kind: String,
        data: Value,
    },
    /// The initial state: open and recent overlaps, alerts, stats.
    Snapshot {
        overlaps: Vec<Value>,
        alerts: Vec<Value>,
        stats: Option<Value>,
    },
    Connected {
        replayed_from: Option<i64>,
    },
    Disconnected {
        attempt: u32,
        retry_in: Duration,
        error: String,
    },
    /// The audit rows of a resource, for the timeline.
    Timeline {
        resource: String,
        rows: Vec<Value>,
    },
    /// The clock, once per frame: seconds since the epoch.
    Tick {
        now: i64,
    },
    Key(crate::tui::keys::Action),
    /// Typed into the filter while it is being edited.
    FilterInput(char),
    FilterBackspace,
}

/// A request from the model to the outside world.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Command {
    Quit,
    FetchTimeline(String),
}

pub struct Model {
    pub view: View,
    /// The view to go back to from the timeline.
    pub previous: View,
    pub connection: Connection,
    /// Seconds since the epoch of the last event received.
    pub last_event: Option<i64>,
    pub now: i64,
    pub paused: bool,
    /// Events received while paused, applied on resume.
    pub held: VecDeque<(String, Value)>,
    pub help: bool,
    pub filter: String,
    pub editing_filter: bool,
    pub window_index: usize,
    pub sort: OverlapSort,
    pub selected: usize,
    /// Writes per second by outcome, from `write` events.
    pub rates: StatsWindow,
    /// Totals per outcome, from `stats` events.
    pub totals: BTreeMap<String, u64>,
    pub events_dropped: u64,
    pub overlaps: BTreeMap<i64, Value>,
    pub alerts: BTreeMap<(String, String), Value>,
    pub rejections: VecDeque<Value>,
    /// The highest write id seen: where a reconnect resumes.
    pub last_write_id: Option<i64>,
    /// Writes replayed from the audit after the last reconnect.
    pub missed: u64,
    pub replaying_from: Option<i64>,
    pub timeline: Option<(String, Vec<Value>)>,
    pub writes_seen: u64,
}

impl Default for Model {
    fn default() -> Self {
        Self::new()
    }
}

impl Model {
    pub fn new() -> Self {
        Self {
            view: View::Overview,
            previous: View::Overview,
            connection: Connection::Connecting,
            last_event: None,
            now: 0,
            paused: false,
            held: VecDeque::new(),
            help: false,
            filter: String::new(),
            editing_filter: false,
            window_index: 1,
            sort: OverlapSort::LastSeen,
            selected: 0,
            rates: StatsWindow::new([]),
            totals: BTreeMap::new(),
            events_dropped: 0,
            overlaps: BTreeMap::new(),
            alerts: BTreeMap::new(),
            rejections: VecDeque::new(),
            last_write_id: None,
            missed: 0,
            replaying_from: None,
            timeline: None,
            writes_seen: 0,
        }
    }

    pub fn window_seconds(&self) -> u64 {
        WINDOWS[self.window_index.min(WINDOWS.len() - 1)]
    }

    /// Applies a message; returns what the outside world must do, if anything.
    pub fn update(&mut self, msg: Msg) -> Option<Command> {
        match msg {
            Msg::Event { kind, data } => {
                self.last_event = Some(self.now);
                if self.paused {
                    self.held.push_back((kind, data));
                } else {
                    self.apply(&kind, data);
                }
            }
            Msg::Snapshot {
                overlaps,
                alerts,
                stats,
            } => {
                for overlap in overlaps {
                    self.apply("overlap", overlap);
                }
                for alert in alerts {
                    self.apply("alert", alert);
                }
                if let Some(stats) = stats {
                    self.apply("stats", stats);
                }
            }
            Msg::Connected { replayed_from } => {
                self.connection = Connection::Live;
                self.replaying_from = replayed_from;
                self.missed = 0;
            }
            Msg::Disconnected {
                attempt,
                retry_in,
                error,
            } => {
                self.connection = Connection::Reconnecting {
                    attempt,
                    retry_in,
                    error,
                };
            }
            Msg::Timeline { resource, rows } => {
                // Open at the incident: the first rejected write.
                self.selected = rows
                    .iter()
                    .position(|row| {
                        row["outcome"]
                            .as_str()
                            .and_then(Outcome::parse)
                            .is_some_and(Outcome::is_rejection)
                    })
                    .unwrap_or(0);
                self.timeline = Some((resource, rows));
            }
            Msg::Tick { now } => self.now = now,
            Msg::FilterInput(c) => {
                self.filter.push(c);
                self.selected = 0;
            }
            Msg::FilterBackspace => {
                self.filter.pop();
            }
            Msg::Key(action) => return self.act(action),
        }
        None
    }

    fn apply(&mut self, kind: &str, data: Value) {
        match kind {
            "write" => self.apply_write(data),
            "overlap" => {
                if let Some(id) = data["id"].as_i64() {
                    self.overlaps.insert(id, data);
                }
            }
            "alert" => {
                let rule = data["rule"].as_str().unwrap_or_default().to_owned();
                let resource = data["resource"].as_str().unwrap_or_default().to_owned();
                if !resource.is_empty() {
                    // A per-resource rule's "no instance yet" placeholder gives way to its first.
                    let placeholder = (rule.clone(), String::new());
                    if self
                        .alerts
                        .get(&placeholder)
                        .is_some_and(|a| a["state"] == "inactive")
                    {
                        self.alerts.remove(&placeholder);
                    }
                }
                self.alerts.insert((rule, resource), data);
            }
            "stats" => {
                if let Some(totals) = data["totals"].as_object() {
                    self.totals = totals
                        .iter()
                        .map(|(k, v)| (k.clone(), v.as_u64().unwrap_or(0)))
                        .collect();
                }
                self.events_dropped = data["events_dropped"].as_u64().unwrap_or(0);
            }
            _ => {}
        }
    }

    /// Constant work per write: a bucket increment and, for a rejection, one log entry.
    fn apply_write(&mut self, row: Value) {
        let id = row["id"].as_i64();
        if let (Some(id), Some(from)) = (id, self.replaying_from) {
            if id > from {
                self.missed += 1;
            }
        }
        if let Some(id) = id {
            self.last_write_id = Some(self.last_write_id.map_or(id, |last| last.max(id)));
        }
        self.writes_seen += 1;
        let outcome = row["outcome"].as_str().and_then(Outcome::parse);
        if let Some(outcome) = outcome {
            self.rates.record(outcome, self.now);
            if outcome.is_rejection() {
                self.rejections.push_front(row);
                self.rejections.truncate(REJECTION_LOG);
            }
        }
    }

    fn act(&mut self, action: crate::tui::keys::Action) -> Option<Command> {
        use crate::tui::keys::Action;
        if self.help && !matches!(action, Action::Help | Action::Quit | Action::Back) {
            return None;
        }
        match action {
            Action::Quit => return Some(Command::Quit),
            Action::Help => self.help = !self.help,
            Action::Back => {
                if self.help {
                    self.help = false;
                } else if self.editing_filter {
                    self.editing_filter = false;
                } else if self.view == View::Timeline {
                    self.view = self.previous;
                    self.timeline = None;
                    self.selected = 0;
                } else if !self.filter.is_empty() {
                    self.filter.clear();
                }
            }
            Action::NextView | Action::PreviousView => {
                let tabs = View::TABS;
                let current = tabs.iter().position(|v| *v == self.view).unwrap_or(0);
                let next = if action == Action::NextView {
                    (current + 1) % tabs.len()
                } else {
                    (current + tabs.len() - 1) % tabs.len()
                };
                self.view = tabs[next];
                self.selected = 0;
            }
            Action::Show(view) => {
                self.view = view;
                self.selected = 0;
            }
            Action::Pause => {
                self.paused = !self.paused;
                if !self.paused {
                    while let Some((kind, data)) = self.held.pop_front() {
                        self.apply(&kind, data);
                    }
                }
            }
            Action::ZoomIn => self.window_index = self.window_index.saturating_sub(1),
            Action::ZoomOut => self.window_index = (self.window_index + 1).min(WINDOWS.len() - 1),
            Action::Filter => self.editing_filter = true,
            Action::Sort => self.sort = self.sort.next(),
            Action::Up => self.selected = self.selected.saturating_sub(1),
            Action::Down => {
                self.selected = self
                    .selected
                    .saturating_add(1)
                    .min(self.rows().saturating_sub(1))
            }
            Action::Open => {
                let resource = match self.view {
                    View::Overlaps => self
                        .visible_overlaps()
                        .get(self.selected)
                        .and_then(|o| o["resource"].as_str())
                        .map(str::to_owned),
                    View::Rejections => self
                        .visible_rejections()
                        .get(self.selected)
                        .and_then(|r| r["resource"].as_str())
                        .map(str::to_owned),
                    _ => None,
                };
                if let Some(resource) = resource {
                    self.previous = self.view;
                    self.view = View::Timeline;
                    self.timeline = Some((resource.clone(), Vec::new()));
                    return Some(Command::FetchTimeline(resource));
                }
            }
        }
        None
    }

    fn rows(&self) -> usize {
        match self.view {
            View::Overlaps => self.visible_overlaps().len(),
            View::Rejections => self.visible_rejections().len(),
            View::Alerts => self.alerts.len(),
            View::Timeline => self.timeline.as_ref().map_or(0, |(_, rows)| rows.len()),
            View::Overview => 0,
        }
    }

    fn matches_filter(&self, fields: &[&Value]) -> bool {
        if self.filter.is_empty() {
            return true;
        }
        let needle = self.filter.to_lowercase();
        fields.iter().any(|field| match field {
            Value::String(text) => text.to_lowercase().contains(&needle),
            Value::Number(n) => n.to_string() == needle,
            _ => false,
        })
    }

    /// Overlaps that pass the filter, in the chosen order.
    pub fn visible_overlaps(&self) -> Vec<&Value> {
        let mut overlaps: Vec<&Value> = self
            .overlaps
            .values()
            .filter(|o| {
                self.matches_filter(&[
                    &o["resource"],
                    &o["stale_owner"],
                    &o["superseding_owner"],
                    &o["state"],
                ])
            })
            .collect();
        match self.sort {
            OverlapSort::LastSeen => {
                overlaps.sort_by(|a, b| b["last_seen"].as_str().cmp(&a["last_seen"].as_str()))
            }
            OverlapSort::Count => overlaps.sort_by(|a, b| {
                b["rejected_writes"]
                    .as_i64()
                    .cmp(&a["rejected_writes"].as_i64())
            }),
            OverlapSort::Resource => {
                overlaps.sort_by(|a, b| a["resource"].as_str().cmp(&b["resource"].as_str()))
            }
        }
        overlaps
    }

    /// Rejected writes that pass the filter (resource, owner or outcome), newest first.
    pub fn visible_rejections(&self) -> Vec<&Value> {
        self.rejections
            .iter()
            .filter(|r| self.matches_filter(&[&r["resource"], &r["owner"], &r["outcome"]]))
            .collect()
    }

    pub fn open_overlaps(&self) -> usize {
        self.overlaps
            .values()
            .filter(|o| o["state"] == "open")
            .count()
    }

    pub fn firing_alerts(&self) -> usize {
        self.alerts
            .values()
            .filter(|a| a["state"] == "firing")
            .count()
    }

    /// Seconds since the last event, if any.
    pub fn data_age(&self) -> Option<i64> {
        self.last_event.map(|at| (self.now - at).max(0))
    }

    /// Per-second counts of accepted and rejected writes over the chart's window, oldest first.
    pub fn series(&self) -> (Vec<u64>, Vec<u64>) {
        let seconds = self.window_seconds() as i64;
        let mut accepted = Vec::new();
        let mut rejected = Vec::new();
        for back in (0..seconds).rev() {
            let second = self.now - back;
            let mut ok = 0;
            let mut refused = 0;
            for outcome in Outcome::ALL {
                let count = self.rates.count_since(outcome, second, 1);
                if outcome.is_rejection() {
                    refused += count;
                } else {
                    ok += count;
                }
            }
            accepted.push(ok);
            rejected.push(refused);
        }
        (accepted, rejected)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tui::fixtures::{incident, write, NOW};
    use crate::tui::keys::Action;

    #[test]
    fn events_build_the_picture() {
        let model = incident();
        assert_eq!(model.connection, Connection::Live);
        assert_eq!(model.open_overlaps(), 1);
        assert_eq!(model.firing_alerts(), 1);
        assert_eq!(model.totals["accepted"], 1200);
        assert_eq!(model.rejections.len(), 2);
        assert_eq!(model.rejections[0]["outcome"], "superseded", "newest first");
        assert_eq!(model.last_write_id, Some(8));
        assert_eq!(model.data_age(), Some(2));
        let (accepted, rejected) = model.series();
        assert_eq!(accepted.len(), 60);
        assert_eq!(
            (accepted.iter().sum::<u64>(), rejected.iter().sum::<u64>()),
            (6, 2)
        );
    }

    #[test]
    fn an_overlap_event_replaces_its_earlier_state() {
        let mut model = incident();
        let mut grown = crate::tui::fixtures::overlap(1, "accounts/totals", 7, 8, 9, "closed");
        grown["change"] = "closed".into();
        model.update(Msg::Event {
            kind: "overlap".into(),
            data: grown,
        });
        assert_eq!(model.overlaps.len(), 2);
        assert_eq!(model.overlaps[&1]["rejected_writes"], 9);
        assert_eq!(model.open_overlaps(), 0);
    }

    #[test]
    fn pausing_holds_events_and_resuming_applies_them() {
        let mut model = incident();
        model.update(Msg::Key(Action::Pause));
        model.update(write(9, "stale", "accounts/totals", 6, 8, "worker-6"));
        assert!(model.paused);
        assert_eq!((model.rejections.len(), model.held.len()), (2, 1));
        model.update(Msg::Key(Action::Pause));
        assert_eq!((model.rejections.len(), model.held.len()), (3, 0));
    }

    #[test]
    fn filters_narrow_by_resource_owner_or_outcome() {
        let mut model = incident();
        model.update(Msg::Key(Action::Filter));
        for c in "billing".chars() {
            model.update(Msg::FilterInput(c));
        }
        assert_eq!(model.visible_rejections().len(), 1);
        assert_eq!(model.visible_overlaps().len(), 1);
        model.update(Msg::Key(Action::Back));
        assert!(!model.editing_filter);
        model.filter = "stale".into();
        assert_eq!(model.visible_rejections().len(), 1);
        model.filter = "worker-7".into();
        assert_eq!(model.visible_rejections()[0]["token"], 7);
        model.update(Msg::Key(Action::Back));
        assert!(model.filter.is_empty());
    }

    #[test]
    fn enter_drills_into_a_timeline_and_esc_comes_back() {
        let mut model = incident();
        model.update(Msg::Key(Action::Show(View::Overlaps)));
        model.update(Msg::Key(Action::Sort));
        assert_eq!(model.sort, OverlapSort::Count);
        let command = model.update(Msg::Key(Action::Open));
        assert_eq!(
            command,
            Some(Command::FetchTimeline("accounts/totals".into()))
        );
        assert_eq!(model.view, View::Timeline);
        model.update(Msg::Timeline {
            resource: "accounts/totals".into(),
            rows: vec![serde_json::json!({"id": 1})],
        });
        assert_eq!(model.timeline.as_ref().map(|(_, rows)| rows.len()), Some(1));
        model.update(Msg::Key(Action::Back));
        assert_eq!(model.view, View::Overlaps);
        assert!(model.timeline.is_none());
    }

    #[test]
    fn views_cycle_and_the_window_zooms_within_bounds() {
        let mut model = incident();
        for expected in [
            View::Overlaps,
            View::Rejections,
            View::Alerts,
            View::Overview,
        ] {
            model.update(Msg::Key(Action::NextView));
            assert_eq!(model.view, expected);
        }
        model.update(Msg::Key(Action::PreviousView));
        assert_eq!(model.view, View::Alerts);
        for _ in 0..10 {
            model.update(Msg::Key(Action::ZoomOut));
        }
        assert_eq!(model.window_seconds(), 300);
        for _ in 0..10 {
            model.update(Msg::Key(Action::ZoomIn));
        }
        assert_eq!(model.window_seconds(), 30);
        assert_eq!(model.update(Msg::Key(Action::Quit)), Some(Command::Quit));
    }

    #[test]
    fn a_reconnect_shows_the_retry_and_counts_what_was_missed() {
        let mut model = incident();
        model.update(Msg::Disconnected {
            attempt: 3,
            retry_in: Duration::from_secs(2),
            error: "refused".into(),
        });
        assert!(matches!(
            model.connection,
            Connection::Reconnecting { attempt: 3, .. }
        ));
        model.update(Msg::Connected {
            replayed_from: Some(8),
        });
        model.update(write(9, "accepted", "accounts/totals", 8, 8, "worker-8"));
        model.update(write(10, "accepted", "accounts/totals", 8, 8, "worker-8"));
        assert_eq!(
            (model.connection.clone(), model.missed),
            (Connection::Live, 2)
        );
    }

    /// A firehose leaves the model bounded: the log keeps its newest entries, counts are kept
    /// in fixed buckets.
    #[test]
    fn a_firehose_keeps_memory_bounded() {
        let mut model = incident();
        for id in 100..100_100 {
            let outcome = if id % 4 == 0 { "stale" } else { "accepted" };
            model.update(write(id, outcome, "hot", 1, 2, "w"));
        }
        assert_eq!(model.rejections.len(), REJECTION_LOG);
        assert_eq!(
            model.rejections[0]["id"], 100_096,
            "the newest rejection first"
        );
        assert_eq!(model.writes_seen, 100_008);
        assert_eq!(model.rates.count_since(Outcome::Stale, NOW, 1), 25_000);
    }

    #[test]
    fn the_help_overlay_swallows_other_keys() {
        let mut model = incident();
        model.update(Msg::Key(Action::Help));
        model.update(Msg::Key(Action::NextView));
        assert_eq!(model.view, View::Overview);
        model.update(Msg::Key(Action::Back));
        assert!(!model.help);
        let _ = NOW;
    }
}
