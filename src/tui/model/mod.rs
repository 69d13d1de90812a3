//! The dashboard's state and how messages change it. Knows nothing of the terminal: the view is a
//! pure function of this model, and every rule here is tested by feeding it messages.

mod actions;
pub mod chart;
mod lists;
pub mod timeline;
mod vocabulary;

pub use vocabulary::{Action, Command, ConnectionState, Msg, Notice, OverlapSort, View};

use crate::api::events::{
    AlertEvent, DaemonEvent, OverlapEvent, PerOutcome, StatsEvent, WriteEvent,
};
use crate::client::Attach;
use crate::domain::alert::AlertState;
use crate::domain::Outcome;
use chart::{Series, WritesBySecond};
use std::collections::{BTreeMap, VecDeque};
use std::sync::Arc;
use timeline::{Anchor, Fetch, Timeline};

/// Rejected writes kept for the log.
pub const REJECTION_LOG: usize = 2000;
/// The chart's time windows, in seconds.
pub const WINDOWS: [u64; 4] = [30, 60, 120, 300];
/// Seconds a notice stays in the footer: long enough to read, short enough not to linger.
pub const NOTICE_SECONDS: i64 = 3;

/// Rows a page key moves.
pub const PAGE_ROWS: isize = 10;

pub struct Model {
    pub view: View,
    /// The view to go back to from the timeline.
    pub previous: View,
    pub connection: ConnectionState,
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
    pub writes_by_second: WritesBySecond,
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
            connection: ConnectionState::Connecting,
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
            writes_by_second: WritesBySecond::default(),
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
        self.writes_by_second
            .series(self.chart_now(), self.window_seconds(), columns)
    }

    /// Seconds before the charts' right edge that the dashboard has data for: since it was
    /// first live, or since the oldest write it holds if the snapshot reached further back.
    /// `None` before either. A chart wider than this shows empty seconds it knows nothing of.
    pub fn charted_seconds(&self) -> Option<u64> {
        let since = match (self.attached_at, self.writes_by_second.oldest_second()) {
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
            Msg::Attached(attach) => self.apply_attach(*attach),
            Msg::Connected { replayed_from } => {
                self.connection = ConnectionState::Live;
                self.replaying_from = replayed_from;
                self.missed = 0;
            }
            Msg::Disconnected {
                attempt,
                retry_in,
                error,
            } => {
                self.connection = ConnectionState::Reconnecting {
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
                if self.attached_at.is_none() && self.connection == ConnectionState::Live {
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

    fn apply_attach(&mut self, attach: Attach) {
        for overlap in attach.overlaps {
            // Read whole at attach, not changed by an event.
            self.apply_overlap(OverlapEvent {
                overlap,
                change: None,
            });
        }
        for alert in attach.alerts {
            self.apply_alert(alert);
        }
        self.apply_stats(&attach.stats);
        // The audit up to the stats' id: the rejections and charts the totals include.
        for row in attach.writes {
            self.apply_write(Arc::new(row));
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
            self.writes_by_second.record(row.at.timestamp(), rejected);
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
}

#[cfg(test)]
mod tests;
