//! The dashboard's state and how messages change it. Knows nothing of the terminal: the view is a
//! pure function of this model, and every rule here is tested by feeding it messages.

pub mod chart;
mod lists;
pub mod timeline;

use crate::api::events::{
    AlertEvent, DaemonEvent, OverlapEvent, PerOutcome, StatsEvent, WriteEvent,
};
use crate::domain::alert::AlertState;
use crate::domain::incident::IncidentReport;
use crate::domain::lease_history::LeaseEvent;
use crate::domain::Outcome;
use chart::{Rates, Series};
use std::collections::{BTreeMap, VecDeque};
use std::sync::Arc;
use std::time::Duration;
use timeline::{Anchor, Fetch, LeaseFetch, Page, Timeline};

/// Rejected writes kept for the log.
pub const REJECTION_LOG: usize = 2000;
/// The chart's time windows, in seconds.
pub const WINDOWS: [u64; 4] = [30, 60, 120, 300];
/// Seconds a notice stays in the footer: long enough to read, short enough not to linger.
pub const NOTICE_SECONDS: i64 = 3;

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

    /// Whether the filter narrows what this view lists (elsewhere it is kept but unused).
    pub fn filtered(self) -> bool {
        matches!(self, View::Overview | View::Overlaps | View::Rejections)
    }

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

/// What the last key did, or why it did nothing: said briefly in the footer, for the keys
/// whose effect is otherwise hard to see.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Notice {
    /// `+` or `-` changed the window (on a wide screen the chart may look the same).
    Zoomed,
    /// `+` at the narrowest window.
    ClosestZoom,
    /// `-` at the widest window.
    WidestZoom,
    /// `/` on a view the filter does not narrow.
    NoFilterHere,
}

/// What a key asks of the dashboard; `keys` binds keys to these.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Action {
    Quit,
    Help,
    Back,
    NextView,
    PreviousView,
    Show(View),
    Pause,
    ZoomIn,
    ZoomOut,
    Filter,
    Sort,
    Up,
    Down,
    PageUp,
    PageDown,
    Home,
    End,
    Open,
    /// Writes the open incident's report to a file.
    SaveReport,
}

/// Everything that can happen to the dashboard.
#[derive(Debug, Clone)]
pub enum Msg {
    /// A live event.
    Event(DaemonEvent),
    /// The state at attach, consistent as of one audit id.
    Snapshot(Snapshot),
    Connected {
        replayed_from: Option<i64>,
    },
    Disconnected {
        attempt: u32,
        retry_in: Duration,
        error: String,
    },
    /// Rows for the open timeline.
    Timeline {
        resource: String,
        page: Page,
    },
    /// The history of the lease the open timeline's writes name, newest first.
    LeaseHistory {
        resource: String,
        fetch: LeaseFetch,
        events: Vec<LeaseEvent>,
    },
    /// The report of the incident the timeline opened on.
    Report {
        id: i64,
        report: Box<IncidentReport>,
    },
    /// What became of writing the report: the file's path, or why not.
    ReportSaved(Result<String, String>),
    /// The clock, once per frame: seconds since the epoch.
    Tick {
        now: i64,
    },
    Key(Action),
    /// Typed into the filter while it is being edited.
    FilterInput(char),
    FilterBackspace,
    /// Enter while editing: keep the filter and stop editing (Esc, `Action::Back`, clears it).
    FilterApply,
}

/// What the daemon showed at attach: totals through `stats.through_audit_id`, and the audit's
/// recent writes up to that same id.
#[derive(Debug, Clone, Default)]
pub struct Snapshot {
    pub stats: Option<Arc<StatsEvent>>,
    /// Recent writes up to the stats' audit id, oldest first.
    pub writes: Vec<Arc<WriteEvent>>,
    pub overlaps: Vec<OverlapEvent>,
    pub alerts: Vec<AlertEvent>,
}

/// A request from the model to the outside world.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Command {
    Quit,
    FetchTimeline {
        resource: String,
        fetch: Fetch,
    },
    FetchLeaseHistory {
        resource: String,
        fetch: LeaseFetch,
    },
    FetchReport {
        id: i64,
    },
    /// Writes `text` (the report in Markdown) to `path`.
    SaveReport {
        path: String,
        text: String,
    },
}

/// Rows a page key moves.
pub const PAGE_ROWS: isize = 10;

pub struct Model {
    pub view: View,
    /// The view to go back to from the timeline.
    pub previous: View,
    pub connection: Connection,
    /// Seconds since the epoch of the last event received.
    pub last_event: Option<i64>,
    pub now: i64,
    /// The second the charts stopped at, while paused.
    pub paused_at: Option<i64>,
    /// Events received while paused, applied on resume.
    pub held: VecDeque<DaemonEvent>,
    pub help: bool,
    pub filter: String,
    pub editing_filter: bool,
    /// The latest notice and the second it stops showing.
    pub notice: Option<(Notice, i64)>,
    pub window_index: usize,
    pub sort: OverlapSort,
    pub selected: usize,
    /// Writes per second, by each write's own time.
    pub rates: Rates,
    /// Totals per outcome, from the latest stats.
    pub totals: PerOutcome<u64>,
    pub events_dropped: u64,
    pub overlaps: BTreeMap<i64, OverlapEvent>,
    /// By rule, source (`""`: the daemon's own) and resource.
    pub alerts: BTreeMap<(String, String, String), AlertEvent>,
    /// The databases the daemon watches (`serve --watch`), from the latest stats.
    pub sources: Vec<String>,
    pub rejections: VecDeque<Arc<WriteEvent>>,
    /// The highest write id applied: where a reconnect resumes, and below which a write is
    /// already counted.
    pub last_write_id: Option<i64>,
    /// Writes replayed from the audit after the last reconnect.
    pub missed: u64,
    pub replaying_from: Option<i64>,
    pub timeline: Option<Timeline>,
    pub writes_seen: u64,
    /// The second the dashboard was first live: the charts hold no data from before it but
    /// what the daemon's snapshot replayed.
    pub attached_at: Option<i64>,
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
            paused_at: None,
            held: VecDeque::new(),
            help: false,
            filter: String::new(),
            editing_filter: false,
            notice: None,
            window_index: 1,
            sort: OverlapSort::LastSeen,
            selected: 0,
            rates: Rates::default(),
            totals: PerOutcome::default(),
            events_dropped: 0,
            overlaps: BTreeMap::new(),
            alerts: BTreeMap::new(),
            sources: Vec::new(),
            rejections: VecDeque::new(),
            last_write_id: None,
            missed: 0,
            replaying_from: None,
            timeline: None,
            writes_seen: 0,
            attached_at: None,
        }
    }

    pub fn paused(&self) -> bool {
        self.paused_at.is_some()
    }

    pub fn window_seconds(&self) -> u64 {
        WINDOWS[self.window_index.min(WINDOWS.len() - 1)]
    }

    /// The second at the charts' right edge: now, or when the view was paused.
    pub fn chart_now(&self) -> i64 {
        self.paused_at.unwrap_or(self.now)
    }

    /// The chart over `columns` columns, the newest second at the right.
    pub fn series(&self, columns: usize) -> Series {
        self.rates
            .series(self.chart_now(), self.window_seconds(), columns)
    }

    /// Seconds before the charts' right edge that the dashboard has data for: since it was
    /// first live, or since the oldest write it holds if the snapshot reached further back.
    /// `None` before either. A chart wider than this shows empty seconds it knows nothing of.
    pub fn charted_seconds(&self) -> Option<u64> {
        let since = match (self.attached_at, self.rates.oldest_second()) {
            (Some(attached), Some(oldest)) => attached.min(oldest),
            (since, None) | (None, since) => since?,
        };
        Some(self.chart_now().saturating_sub(since).max(0) as u64)
    }

    /// The notice to show now, if one is still fresh.
    pub fn notice(&self) -> Option<Notice> {
        self.notice
            .filter(|(_, until)| self.now < *until)
            .map(|(notice, _)| notice)
    }

    fn notify(&mut self, notice: Notice) {
        self.notice = Some((notice, self.now + NOTICE_SECONDS));
    }

    /// Whether the filter narrows the current view: the footer then says it is on.
    pub fn filter_applies(&self) -> bool {
        !self.filter.is_empty() && self.view.filtered()
    }

    /// Applies a message; returns what the outside world must do, if anything.
    pub fn update(&mut self, msg: Msg) -> Option<Command> {
        match msg {
            Msg::Event(event) => {
                self.last_event = Some(self.now);
                if self.paused() {
                    self.held.push_back(event);
                } else {
                    self.apply(event);
                    // A live write may show a generation granted since the history was read.
                    let timeline = self.timeline.as_mut().filter(|t| t.lease.is_some());
                    if let Some(timeline) = timeline {
                        let resource = timeline.resource.clone();
                        return timeline
                            .lease_request()
                            .map(|fetch| Command::FetchLeaseHistory { resource, fetch });
                    }
                }
            }
            Msg::Snapshot(snapshot) => self.apply_snapshot(snapshot),
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
            Msg::Timeline { resource, page } => {
                if let Some(timeline) = self.timeline.as_mut().filter(|t| t.resource == resource) {
                    timeline.apply(page);
                    // An incident's report first, once; then the lease's history, which the
                    // rows name (and how far back).
                    if let Some(id) = timeline.report_request() {
                        return Some(Command::FetchReport { id });
                    }
                    return timeline
                        .lease_request()
                        .map(|fetch| Command::FetchLeaseHistory { resource, fetch });
                }
            }
            Msg::LeaseHistory {
                resource,
                fetch,
                events,
            } => {
                if let Some(timeline) = self.timeline.as_mut().filter(|t| t.resource == resource) {
                    timeline.apply_lease(fetch, events);
                }
            }
            Msg::Report { id, report } => {
                if let Some(timeline) = self.timeline.as_mut() {
                    if matches!(timeline.anchor, Some(Anchor::Overlap { id: open, .. }) if open == id)
                    {
                        timeline.report = Some(*report);
                        let resource = timeline.resource.clone();
                        return timeline
                            .lease_request()
                            .map(|fetch| Command::FetchLeaseHistory { resource, fetch });
                    }
                }
            }
            Msg::ReportSaved(result) => {
                if let Some(timeline) = self.timeline.as_mut() {
                    timeline.saved = Some(match result {
                        Ok(path) => format!("report written to {path}"),
                        Err(error) => format!("report not written: {error}"),
                    });
                }
            }
            Msg::Tick { now } => {
                self.now = now;
                if self.attached_at.is_none() && self.connection == Connection::Live {
                    self.attached_at = Some(now);
                }
            }
            Msg::FilterInput(c) => {
                self.filter.push(c);
                self.selected = 0;
            }
            Msg::FilterBackspace => {
                self.filter.pop();
                self.selected = 0;
            }
            Msg::FilterApply => self.editing_filter = false,
            Msg::Key(action) => return self.act(action),
        }
        None
    }

    fn apply_snapshot(&mut self, snapshot: Snapshot) {
        for overlap in snapshot.overlaps {
            self.apply_overlap(overlap);
        }
        for alert in snapshot.alerts {
            self.apply_alert(alert);
        }
        if let Some(stats) = snapshot.stats {
            self.apply_stats(&stats);
        }
        // The audit up to the stats' id: the rejections and charts the totals include.
        for row in snapshot.writes {
            self.apply_write(row);
        }
    }

    fn apply(&mut self, event: DaemonEvent) {
        match event {
            DaemonEvent::Write(row) => self.apply_write(row),
            DaemonEvent::Overlap(overlap) => self.apply_overlap((*overlap).clone()),
            DaemonEvent::Alert(alert) => self.apply_alert((*alert).clone()),
            DaemonEvent::Stats(stats) => self.apply_stats(&stats),
        }
    }

    fn apply_overlap(&mut self, overlap: OverlapEvent) {
        self.overlaps.insert(overlap.overlap.id, overlap);
    }

    fn apply_alert(&mut self, alert: AlertEvent) {
        let resource = alert.resource.clone().unwrap_or_default();
        let source = alert.source.clone().unwrap_or_default();
        if !resource.is_empty() {
            // A per-resource rule's "no instance yet" placeholder gives way to its first.
            let placeholder = (alert.rule.clone(), String::new(), String::new());
            if self
                .alerts
                .get(&placeholder)
                .is_some_and(|a| a.state == AlertState::Inactive)
            {
                self.alerts.remove(&placeholder);
            }
        }
        self.alerts
            .insert((alert.rule.clone(), source, resource), alert);
    }

    /// The totals shown are the daemon's own and every watched database's together, as the
    /// charts and the rejection log take in rows of both.
    fn apply_stats(&mut self, stats: &StatsEvent) {
        let mut totals = stats.totals;
        for source in stats.sources.values() {
            totals += &source.totals;
        }
        self.totals = totals;
        self.sources = stats.sources.keys().cloned().collect();
        self.events_dropped = stats.events_dropped;
    }

    /// Constant work per write: a bucket increment and, for a rejection, one log entry. A
    /// write already applied (a snapshot overlapping a replay) is skipped.
    fn apply_write(&mut self, row: Arc<WriteEvent>) {
        // A watched database's row has that database's id: outside the daemon's order, never
        // replayed, so never a repeat.
        if row.source.is_none() {
            if self.last_write_id.is_some_and(|last| row.id <= last) {
                return;
            }
            if self.replaying_from.is_some_and(|from| row.id > from) {
                self.missed += 1;
            }
            self.last_write_id = Some(row.id);
        }
        self.writes_seen += 1;
        let rejected = row.outcome.is_rejection();
        // An operator's reset is no write: on neither line of the chart.
        if row.outcome != Outcome::Reset {
            self.rates.record(row.at.timestamp(), rejected);
        }
        if let Some(timeline) = self.timeline.as_mut().filter(|_| row.source.is_none()) {
            timeline.append_live(&row);
        }
        if rejected {
            self.rejections.push_front(row);
            self.rejections.truncate(REJECTION_LOG);
        }
    }

    fn fetch(&self, fetch: Option<Fetch>) -> Option<Command> {
        let resource = self.timeline.as_ref()?.resource.clone();
        fetch.map(|fetch| Command::FetchTimeline { resource, fetch })
    }

    fn act(&mut self, action: Action) -> Option<Command> {
        if self.help && !matches!(action, Action::Help | Action::Quit | Action::Back) {
            return None;
        }
        // A notice answers the key before it; the next key replaces or clears it.
        self.notice = None;
        match action {
            Action::Quit => return Some(Command::Quit),
            Action::Help => self.help = !self.help,
            Action::Back => {
                if self.help {
                    self.help = false;
                } else if self.editing_filter {
                    // Esc while typing cancels: the filter is cleared, as Esc after Enter does.
                    self.editing_filter = false;
                    self.filter.clear();
                    self.selected = 0;
                } else if self.view == View::Timeline {
                    self.view = self.previous;
                    self.timeline = None;
                    self.selected = 0;
                } else if self.filter_applies() {
                    self.filter.clear();
                    self.selected = 0;
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
                self.timeline = None;
                self.selected = 0;
            }
            Action::Show(view) => {
                self.view = view;
                self.timeline = None;
                self.selected = 0;
            }
            Action::Pause => {
                if self.paused() {
                    self.paused_at = None;
                    while let Some(event) = self.held.pop_front() {
                        self.apply(event);
                    }
                } else {
                    self.paused_at = Some(self.now);
                }
            }
            Action::ZoomIn => match self.window_index.checked_sub(1) {
                Some(closer) => {
                    self.window_index = closer;
                    self.notify(Notice::Zoomed);
                }
                None => self.notify(Notice::ClosestZoom),
            },
            Action::ZoomOut => {
                if self.window_index + 1 < WINDOWS.len() {
                    self.window_index += 1;
                    self.notify(Notice::Zoomed);
                } else {
                    self.notify(Notice::WidestZoom);
                }
            }
            Action::Filter => {
                if self.view.filtered() {
                    self.editing_filter = true;
                } else {
                    self.notify(Notice::NoFilterHere);
                }
            }
            Action::Sort => self.sort = self.sort.next(),
            Action::Up => return self.move_by(-1),
            Action::Down => return self.move_by(1),
            Action::PageUp => return self.move_by(-PAGE_ROWS),
            Action::PageDown => return self.move_by(PAGE_ROWS),
            Action::Home => {
                if let Some(timeline) = self.timeline.as_mut() {
                    let fetch = timeline.home();
                    return self.fetch(fetch);
                }
                self.selected = 0;
            }
            Action::End => {
                if let Some(timeline) = self.timeline.as_mut() {
                    let fetch = timeline.end();
                    return self.fetch(fetch);
                }
                self.selected = self.rows().saturating_sub(1);
            }
            Action::Open => return self.open(),
            Action::SaveReport => {
                let report = self.timeline.as_ref()?.report.as_ref()?;
                return Some(Command::SaveReport {
                    path: format!("incident-{}.md", report.incident),
                    text: crate::domain::incident_render::markdown(report),
                });
            }
        }
        None
    }

    fn move_by(&mut self, delta: isize) -> Option<Command> {
        if let Some(timeline) = self.timeline.as_mut() {
            let fetch = timeline.scroll(delta);
            return self.fetch(fetch);
        }
        let last = self.rows().saturating_sub(1);
        self.selected = self.selected.saturating_add_signed(delta).min(last);
        None
    }

    /// Enter: the timeline of the selected overlap (at its first stale write) or rejection. A
    /// watched database's are in that database's audit, not the daemon's: nothing opens
    /// (`fencewatch audit timeline --database URL` reads them there).
    fn open(&mut self) -> Option<Command> {
        let (resource, anchor) = match self.view {
            View::Overlaps => {
                let o = &self.visible_overlaps().get(self.selected)?.overlap;
                if o.source.is_some() {
                    return None;
                }
                (
                    o.resource.clone(),
                    Anchor::Overlap {
                        id: o.id,
                        first_seen: o.first_seen,
                        stale_token: o.stale_token,
                        superseding_token: o.superseding_token,
                    },
                )
            }
            View::Rejections => {
                let r = self.visible_rejections().get(self.selected).copied()?;
                if r.source.is_some() {
                    return None;
                }
                (r.resource.clone(), Anchor::Write { id: r.id })
            }
            _ => return None,
        };
        self.previous = self.view;
        self.view = View::Timeline;
        self.timeline = Some(Timeline::new(resource.clone(), Some(anchor.clone())));
        Some(Command::FetchTimeline {
            resource,
            fetch: Fetch::Around(anchor),
        })
    }

    fn rows(&self) -> usize {
        match self.view {
            View::Overlaps => self.visible_overlaps().len(),
            View::Rejections => self.visible_rejections().len(),
            View::Alerts => self.alerts.len(),
            View::Timeline => self.timeline.as_ref().map_or(0, |t| t.rows.len()),
            View::Overview => 0,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tui::fixtures::{incident, row, write, NOW};

    #[test]
    fn events_build_the_picture() {
        let model = incident();
        assert_eq!(model.connection, Connection::Live);
        assert_eq!(model.open_overlaps(), 1);
        assert_eq!(model.firing_alerts(), 1);
        assert_eq!(model.total(Outcome::Accepted), 1200);
        assert_eq!(model.rejections.len(), 2);
        assert_eq!(
            model.rejections[0].outcome,
            Outcome::Superseded,
            "newest first"
        );
        assert_eq!(model.last_write_id, Some(8));
        assert_eq!(model.data_age(), Some(2));
        let series = model.series(60);
        assert_eq!(series.accepted.len(), 60);
        assert_eq!((series.total_accepted, series.total_rejected), (6, 2));
        // The writes were 2 s old: two columns from the right edge.
        assert_eq!(series.accepted[57], 6);
        assert_eq!(series.rejection_percent(), Some(25.0));
    }

    /// A watched database's row has that database's id: it neither counts as a repeat of the
    /// daemon's ids nor moves where a reconnect resumes; its overlap and rejection open no
    /// timeline (the daemon's audit does not hold them), and its alert keeps apart from the
    /// daemon's of the same rule and resource.
    #[test]
    fn a_watched_databases_rows_stand_apart_from_the_daemons_order() {
        let mut model = incident();
        for msg in crate::tui::fixtures::watched_messages() {
            model.update(msg);
        }
        assert_eq!(model.last_write_id, Some(8), "id 3 of shop is no daemon id");
        assert_eq!(model.rejections[0].source.as_deref(), Some("shop"));
        assert_eq!(model.sources, ["shop"]);
        assert_eq!(
            model.total(Outcome::Accepted),
            1240,
            "the daemon's and shop's"
        );
        assert!(model.shows_sources());
        model.update(Msg::Key(Action::Show(View::Rejections)));
        assert_eq!(model.update(Msg::Key(Action::Open)), None);
        assert_eq!(model.view, View::Rejections);
        model.update(Msg::Key(Action::Show(View::Overlaps)));
        let shop = model
            .visible_overlaps()
            .iter()
            .position(|o| o.overlap.source.is_some())
            .unwrap();
        model.selected = shop;
        assert_eq!(model.update(Msg::Key(Action::Open)), None);
        let mut own = model
            .alerts
            .values()
            .find(|a| a.source.is_some())
            .cloned()
            .unwrap();
        own.source = None;
        model.update(Msg::Event(DaemonEvent::Alert(Arc::new(own))));
        assert_eq!(
            model
                .alerts
                .values()
                .filter(|a| a.resource.as_deref() == Some("orders/eu"))
                .count(),
            2
        );
    }

    #[test]
    fn a_reset_is_neither_a_write_nor_a_rejection() {
        let mut model = incident();
        let before = model.series(60);
        let rejections = model.rejections.len();
        model.update(write(9, "reset", "accounts/totals", 5, 5, "ops"));
        let after = model.series(60);
        assert_eq!(
            (after.total_accepted, after.total_rejected),
            (before.total_accepted, before.total_rejected)
        );
        assert_eq!(model.rejections.len(), rejections);
        assert_eq!(model.last_write_id, Some(9), "seen all the same");
    }

    #[test]
    fn an_overlap_event_replaces_its_earlier_state() {
        let mut model = incident();
        let grown = crate::tui::fixtures::overlap(1, "accounts/totals", 7, 8, 9, "closed");
        model.update(Msg::Event(DaemonEvent::Overlap(Arc::new(grown))));
        assert_eq!(model.overlaps.len(), 2);
        assert_eq!(model.overlaps[&1].overlap.rejected_writes, 9);
        assert_eq!(model.open_overlaps(), 0);
    }

    #[test]
    fn pausing_freezes_the_charts_and_holds_events() {
        let mut model = incident();
        model.update(Msg::Key(Action::Pause));
        let frozen = model.series(60);
        model.update(Msg::Tick { now: NOW + 30 });
        model.update(write(9, "stale", "accounts/totals", 6, 8, "worker-6"));
        assert!(model.paused());
        assert_eq!((model.rejections.len(), model.held.len()), (2, 1));
        assert_eq!(
            model.series(60),
            frozen,
            "the chart does not move while paused"
        );
        model.update(Msg::Key(Action::Pause));
        assert_eq!((model.rejections.len(), model.held.len()), (3, 0));
        // The held write counts at its own second, not at the resume.
        let resumed = model.series(60);
        assert_eq!(resumed.rejected[59], 0);
        assert_eq!(resumed.total_rejected, 3);
    }

    #[test]
    fn a_replayed_stream_draws_the_same_charts_as_the_live_one() {
        let rows: Vec<_> = (1..=50)
            .map(|id| {
                let mut r = (*row(
                    id,
                    if id % 5 == 0 { "stale" } else { "accepted" },
                    "a",
                    1,
                    2,
                    "w",
                ))
                .clone();
                r.at = chrono::DateTime::from_timestamp(NOW - 50 + id, 0).unwrap_or_default();
                Arc::new(r)
            })
            .collect();
        let mut live = Model::new();
        for r in &rows {
            live.update(Msg::Tick {
                now: r.at.timestamp(),
            });
            live.update(Msg::Event(DaemonEvent::Write(r.clone())));
        }
        // Disconnected after 20, reconnected at the end and replayed from the audit.
        let mut replayed = Model::new();
        for r in &rows[..20] {
            replayed.update(Msg::Tick {
                now: r.at.timestamp(),
            });
            replayed.update(Msg::Event(DaemonEvent::Write(r.clone())));
        }
        replayed.update(Msg::Tick { now: NOW });
        replayed.update(Msg::Connected {
            replayed_from: Some(20),
        });
        for r in &rows[15..] {
            replayed.update(Msg::Event(DaemonEvent::Write(r.clone())));
        }
        live.update(Msg::Tick { now: NOW });
        for columns in [30, 78, 156] {
            assert_eq!(live.series(columns), replayed.series(columns));
        }
        assert_eq!(replayed.missed, 30);
        assert_eq!(live.writes_seen, replayed.writes_seen, "overlap skipped");
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
        assert_eq!(model.visible_rejections()[0].token, Some(7));
        model.update(Msg::Key(Action::Back));
        assert!(model.filter.is_empty());
    }

    /// Enter keeps the filter on the views it narrows (and says so there), Esc clears it,
    /// whether typing or after; where it narrows nothing, `/` says so instead of editing.
    #[test]
    fn a_filter_is_applied_by_enter_and_cleared_by_esc_where_it_narrows() {
        let mut model = incident();
        model.update(Msg::Key(Action::Show(View::Rejections)));
        model.update(Msg::Key(Action::Filter));
        for c in "bill".chars() {
            model.update(Msg::FilterInput(c));
        }
        model.update(Msg::FilterApply);
        assert!(!model.editing_filter);
        assert_eq!(model.filter, "bill");
        assert!(model.filter_applies());
        assert_eq!(model.visible_rejections().len(), 1);
        model.update(Msg::Key(Action::Show(View::Overview)));
        assert!(model.filter_applies(), "the latest rejections are filtered");
        model.update(Msg::Key(Action::Show(View::Alerts)));
        assert!(!model.filter_applies(), "alerts are not filtered");
        model.update(Msg::Key(Action::Back));
        assert_eq!(
            model.filter, "bill",
            "Esc clears only where the filter is on"
        );
        model.update(Msg::Key(Action::Filter));
        assert!(!model.editing_filter);
        assert_eq!(model.notice(), Some(Notice::NoFilterHere));
        model.update(Msg::Key(Action::Show(View::Overlaps)));
        model.update(Msg::Key(Action::Back));
        assert!(model.filter.is_empty());
        // Typing, Esc cancels: nothing is left filtered.
        model.update(Msg::Key(Action::Filter));
        model.update(Msg::FilterInput('x'));
        model.update(Msg::Key(Action::Back));
        assert!(!model.editing_filter && model.filter.is_empty());
    }

    /// Zooming says so, and `+` at the closest zoom and `-` at the widest say that they did
    /// nothing, for a few seconds; the next key clears the notice.
    #[test]
    fn zooming_past_either_end_leaves_a_notice() {
        let mut model = incident();
        model.update(Msg::Key(Action::ZoomIn));
        assert_eq!(model.window_seconds(), 30);
        assert_eq!(model.notice(), Some(Notice::Zoomed));
        model.update(Msg::Key(Action::ZoomIn));
        assert_eq!(model.window_seconds(), 30);
        assert_eq!(model.notice(), Some(Notice::ClosestZoom));
        model.update(Msg::Tick {
            now: NOW + NOTICE_SECONDS - 1,
        });
        assert_eq!(model.notice(), Some(Notice::ClosestZoom));
        model.update(Msg::Tick {
            now: NOW + NOTICE_SECONDS,
        });
        assert_eq!(model.notice(), None, "gone after {NOTICE_SECONDS} s");
        for _ in 0..WINDOWS.len() {
            model.update(Msg::Key(Action::ZoomOut));
        }
        assert_eq!(model.window_seconds(), 300);
        assert_eq!(model.notice(), Some(Notice::WidestZoom));
        model.update(Msg::Key(Action::Sort));
        assert_eq!(model.notice(), None, "the next key clears it");
    }

    /// A rejection's `owner` is its own writer's; the holder of the higher generation comes
    /// from the overlap of the same resource and generation, while it names that generation.
    #[test]
    fn the_holder_of_the_higher_generation_comes_from_the_overlap() {
        let mut model = incident();
        let stale = row(7, "stale", "accounts/totals", 7, 8, "worker-7");
        assert_eq!(stale.owner.as_deref(), Some("worker-7"));
        assert_eq!(model.holder_of(&stale), Some("worker-8"));
        let elsewhere = row(9, "stale", "other", 7, 8, "worker-7");
        assert_eq!(model.holder_of(&elsewhere), None);
        // The overlap moved on to generation 9: it no longer says who held 8.
        let moved = crate::tui::fixtures::overlap(1, "accounts/totals", 7, 9, 5, "open");
        model.update(Msg::Event(DaemonEvent::Overlap(Arc::new(moved))));
        assert_eq!(model.holder_of(&stale), None);
    }

    /// The charts know how much of their width they have data for: since the dashboard was
    /// live, or since the oldest write the snapshot brought if that is older.
    #[test]
    fn the_charts_know_how_long_their_data_covers() {
        let mut model = Model::new();
        assert_eq!(model.charted_seconds(), None);
        model.update(Msg::Tick { now: NOW - 100 });
        model.update(Msg::Connected {
            replayed_from: None,
        });
        assert_eq!(model.charted_seconds(), None, "live from the next tick");
        model.update(Msg::Tick { now: NOW - 40 });
        model.update(Msg::Tick { now: NOW });
        assert_eq!(model.charted_seconds(), Some(40));
        let mut old = (*row(1, "accepted", "a", 1, 1, "w")).clone();
        old.at = chrono::DateTime::from_timestamp(NOW - 90, 0).unwrap_or_default();
        model.update(Msg::Event(DaemonEvent::Write(Arc::new(old))));
        assert_eq!(model.charted_seconds(), Some(90));
        model.update(Msg::Key(Action::Pause));
        model.update(Msg::Tick { now: NOW + 30 });
        assert_eq!(model.charted_seconds(), Some(90), "as of the pause");
    }

    #[test]
    fn enter_opens_the_overlap_at_its_first_stale_write() {
        let mut model = incident();
        model.update(Msg::Key(Action::Show(View::Overlaps)));
        model.update(Msg::Key(Action::Sort));
        assert_eq!(model.sort, OverlapSort::Count);
        let command = model.update(Msg::Key(Action::Open));
        let Some(Command::FetchTimeline { resource, fetch }) = command else {
            panic!("no fetch: {command:?}")
        };
        assert_eq!(resource, "accounts/totals");
        assert!(matches!(
            fetch,
            Fetch::Around(Anchor::Overlap {
                stale_token: 7,
                superseding_token: 8,
                ..
            })
        ));
        assert_eq!(model.view, View::Timeline);
        let rows: Vec<_> = (1..=30)
            .map(|id| {
                row(
                    id,
                    if id == 20 { "stale" } else { "accepted" },
                    "accounts/totals",
                    8,
                    8,
                    "w",
                )
            })
            .collect();
        model.update(Msg::Timeline {
            resource: "accounts/totals".into(),
            page: Page {
                rows,
                fetch: fetch.clone(),
                at_start: false,
                at_end: true,
                focus: Some(20),
            },
        });
        let timeline = model.timeline.as_ref().unwrap();
        assert_eq!(timeline.selected_row().map(|r| r.id), Some(20));
        // Scrolling past the top asks for the page before; live writes append at the end.
        model.update(Msg::Key(Action::PageUp));
        let command = model.update(Msg::Key(Action::PageUp));
        assert_eq!(
            command,
            Some(Command::FetchTimeline {
                resource: "accounts/totals".into(),
                fetch: Fetch::Before(1)
            })
        );
        model.update(write(31, "accepted", "accounts/totals", 8, 8, "w"));
        model.update(write(32, "accepted", "elsewhere", 8, 8, "w"));
        assert_eq!(model.timeline.as_ref().unwrap().rows.len(), 31);
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
        model.update(write(8, "accepted", "accounts/totals", 8, 8, "worker-8"));
        model.update(write(9, "accepted", "accounts/totals", 8, 8, "worker-8"));
        model.update(write(10, "accepted", "accounts/totals", 8, 8, "worker-8"));
        assert_eq!(
            (model.connection.clone(), model.missed),
            (Connection::Live, 2)
        );
    }

    /// A firehose leaves the model bounded: the log keeps its newest entries, counts are kept
    /// in per-second buckets.
    #[test]
    fn a_firehose_keeps_memory_bounded() {
        let mut model = incident();
        for id in 100..100_100 {
            let outcome = if id % 4 == 0 { "stale" } else { "accepted" };
            model.update(write(id, outcome, "hot", 1, 2, "w"));
        }
        assert_eq!(model.rejections.len(), REJECTION_LOG);
        assert_eq!(
            model.rejections[0].id, 100_096,
            "the newest rejection first"
        );
        assert_eq!(model.writes_seen, 100_008);
        assert_eq!(model.series(60).total_rejected, 25_002);
    }

    #[test]
    fn the_help_overlay_swallows_other_keys() {
        let mut model = incident();
        model.update(Msg::Key(Action::Help));
        model.update(Msg::Key(Action::NextView));
        assert_eq!(model.view, View::Overview);
        model.update(Msg::Key(Action::Back));
        assert!(!model.help);
    }
}
