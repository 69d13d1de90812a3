//! A resource's audit around an incident, loaded a page at a time in either direction, with
//! the history of the lease its writes name beside it.

use crate::api::events::WriteEvent;
use crate::domain::incident::IncidentReport;
use crate::domain::lease_history::{tenure_at, LeaseChange, LeaseEvent, Tenure};
use chrono::{DateTime, Utc};
use std::sync::Arc;

/// Rows asked for per page.
pub const PAGE: u32 = 100;
/// Rows kept at most: scrolling far drops the other end (it is reloaded on the way back).
pub const KEEP: usize = 2000;

/// Lease events asked for beside the rows: enough to reach back past the grant of every
/// generation on a page while a holder renews every second or so.
pub const LEASE_EVENTS: u32 = 500;

/// Which part of a lease's history the timeline wants: the newest events at or before
/// `until` (the newest of all when the rows reach the live end).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LeaseFetch {
    pub lease: String,
    pub until: Option<DateTime<Utc>>,
}

/// A lease's history as loaded, oldest first.
#[derive(Debug, Clone, PartialEq)]
pub struct LeaseTrail {
    pub fetch: LeaseFetch,
    pub events: Vec<LeaseEvent>,
}

/// A line of the lease's column: one event, or a run of renewals of one grant (a holder renews
/// several times a second; one line each would push the grants and expiries off the screen).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LeaseLine {
    /// The first event's time.
    pub at: DateTime<Utc>,
    pub change: LeaseChange,
    pub token: i64,
    pub holder: String,
    /// Events in the line: more than one only for renewals.
    pub count: usize,
    /// The grant's end as of the line's last event.
    pub expires_at: DateTime<Utc>,
}

impl LeaseTrail {
    pub fn lines(&self) -> Vec<LeaseLine> {
        let mut lines: Vec<LeaseLine> = Vec::new();
        for e in &self.events {
            if let Some(last) = lines.last_mut().filter(|last| {
                e.event == LeaseChange::Renewed
                    && last.change == LeaseChange::Renewed
                    && last.token == e.token
            }) {
                last.count += 1;
                last.expires_at = e.expires_at;
                continue;
            }
            lines.push(LeaseLine {
                at: e.at,
                change: e.event,
                token: e.token,
                holder: e.holder.clone(),
                count: 1,
                expires_at: e.expires_at,
            });
        }
        lines
    }
}

/// Where a timeline opens.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Anchor {
    /// An overlap: its first stale write (the first rejection of `stale_token` at or after
    /// `first_seen`).
    Overlap {
        /// The overlap's id: its report is asked for by it.
        id: i64,
        first_seen: DateTime<Utc>,
        stale_token: i64,
        superseding_token: i64,
    },
    /// One audit row.
    Write { id: i64 },
}

/// What the timeline asks the daemon for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Fetch {
    /// The rows around the anchor.
    Around(Anchor),
    /// Up to a page of rows below this id.
    Before(i64),
    /// Up to a page of rows above this id (0: from the start).
    After(i64),
    /// The newest page.
    Newest,
}

/// A page of rows, ascending by id, and whether it reaches either end of the audit.
#[derive(Debug, Clone, PartialEq)]
pub struct Page {
    pub rows: Vec<Arc<WriteEvent>>,
    pub fetch: Fetch,
    /// No older rows exist.
    pub at_start: bool,
    /// No newer rows exist (live writes are appended from here).
    pub at_end: bool,
    /// The row to select, for `Around`.
    pub focus: Option<i64>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Timeline {
    pub resource: String,
    pub anchor: Option<Anchor>,
    pub rows: Vec<Arc<WriteEvent>>,
    pub selected: usize,
    pub loading: bool,
    pub at_start: bool,
    pub at_end: bool,
    /// The audit id of the row the timeline opened on.
    pub focus: Option<i64>,
    /// The history of the lease the writes name, once loaded.
    pub lease: Option<LeaseTrail>,
    /// The history last asked for, so that it is asked for once.
    pub lease_asked: Option<LeaseFetch>,
    /// The incident's report (`GET /v1/overlaps/{id}/report`), once loaded: its facts head
    /// the timeline.
    pub report: Option<IncidentReport>,
    /// Whether the report was asked for.
    pub report_asked: bool,
    /// What became of the last `w` (where the report was written, or why it was not).
    pub saved: Option<String>,
}

impl Timeline {
    pub fn new(resource: String, anchor: Option<Anchor>) -> Self {
        Self {
            resource,
            anchor,
            rows: Vec::new(),
            selected: 0,
            loading: true,
            at_start: false,
            at_end: false,
            focus: None,
            lease: None,
            lease_asked: None,
            report: None,
            report_asked: false,
            saved: None,
        }
    }

    /// The lease the writes name (the incident's row's, else the newest row's that names one)
    /// and how far back to read it, if that is not what was last asked for.
    pub fn lease_request(&mut self) -> Option<LeaseFetch> {
        let names = |r: &&Arc<WriteEvent>| r.lease.is_some();
        let row = self
            .focus
            .and_then(|id| self.rows.iter().find(|r| r.id == id))
            .filter(names)
            .or_else(|| self.rows.iter().rev().find(names))?;
        let wanted = LeaseFetch {
            lease: row.lease.clone()?,
            until: if self.at_end {
                None
            } else {
                self.rows.last().map(|r| r.at)
            },
        };
        if self.lease_asked.as_ref() == Some(&wanted) {
            return None;
        }
        self.lease_asked = Some(wanted.clone());
        Some(wanted)
    }

    /// Takes a lease's history in (newest first, as the daemon sends it), if it is still the
    /// one wanted.
    pub fn apply_lease(&mut self, fetch: LeaseFetch, mut events: Vec<LeaseEvent>) {
        if self.lease_asked.as_ref() != Some(&fetch) {
            return;
        }
        events.sort_by_key(|e| (e.at, e.id));
        self.lease = Some(LeaseTrail { fetch, events });
    }

    /// Who held the selected write's generation at the write's time, by the lease's history.
    pub fn tenure(&self) -> Option<Tenure> {
        let row = self.selected_row()?;
        let trail = self.lease.as_ref()?;
        if row.lease.as_deref() != Some(trail.fetch.lease.as_str()) {
            return None;
        }
        tenure_at(&trail.events, row.token?, row.at)
    }

    /// The index of the last of `lines` that began at or before the selected row's time:
    /// where the lease's column is centred.
    pub fn lease_cursor(&self, lines: &[LeaseLine]) -> Option<usize> {
        let at = self.selected_row()?.at;
        lines.iter().rposition(|line| line.at <= at)
    }

    /// The overlap the timeline opened on, if its report is still to be asked for.
    pub fn report_request(&mut self) -> Option<i64> {
        let Some(Anchor::Overlap { id, .. }) = self.anchor else {
            return None;
        };
        if self.report_asked {
            return None;
        }
        self.report_asked = true;
        Some(id)
    }

    /// The two generations of the overlap the timeline opened on, if it did.
    pub fn generations(&self) -> Option<(i64, i64)> {
        match self.anchor {
            Some(Anchor::Overlap {
                stale_token,
                superseding_token,
                ..
            }) => Some((stale_token, superseding_token)),
            _ => None,
        }
    }

    pub fn selected_row(&self) -> Option<&WriteEvent> {
        self.rows.get(self.selected).map(|row| &**row)
    }

    /// Takes a page in: replaces the rows (`Around`, `Newest`, `After(0)`) or extends them.
    pub fn apply(&mut self, page: Page) {
        self.loading = false;
        match page.fetch {
            Fetch::Around(_) | Fetch::Newest | Fetch::After(0) => {
                self.rows = page.rows;
                self.at_start = page.at_start;
                self.at_end = page.at_end;
                self.selected = match (page.focus, &page.fetch) {
                    (Some(id), _) => self.rows.iter().position(|r| r.id >= id).unwrap_or(0),
                    (None, Fetch::Newest) => self.rows.len().saturating_sub(1),
                    _ => 0,
                };
                if page.focus.is_some() {
                    self.focus = page.focus;
                }
            }
            Fetch::Before(_) => {
                self.at_start = page.at_start;
                let first = self.rows.first().map_or(i64::MAX, |r| r.id);
                let mut rows: Vec<_> = page.rows.into_iter().filter(|r| r.id < first).collect();
                // Move up past the end of what was there into the new rows.
                let added = rows.len();
                rows.append(&mut self.rows);
                self.rows = rows;
                self.selected = (self.selected + added).saturating_sub(1);
                if self.rows.len() > KEEP {
                    self.rows.truncate(KEEP);
                    self.at_end = false;
                }
            }
            Fetch::After(_) => {
                self.at_end = page.at_end;
                let last = self.rows.last().map_or(0, |r| r.id);
                let had = self.rows.len();
                self.rows
                    .extend(page.rows.into_iter().filter(|r| r.id > last));
                if self.rows.len() > had {
                    self.selected = had;
                }
                self.trim_front();
            }
        }
    }

    fn trim_front(&mut self) {
        let excess = self.rows.len().saturating_sub(KEEP);
        if excess > 0 {
            self.rows.drain(..excess);
            self.selected = self.selected.saturating_sub(excess);
            self.at_start = false;
        }
    }

    /// A live write: appended when the timeline reaches the newest row.
    pub fn append_live(&mut self, row: &Arc<WriteEvent>) {
        if row.resource != self.resource || !self.at_end || self.rows.is_empty() {
            return;
        }
        if self.rows.last().is_some_and(|last| last.id >= row.id) {
            return;
        }
        let following = self.selected + 1 == self.rows.len();
        self.rows.push(row.clone());
        if following {
            self.selected = self.rows.len() - 1;
        }
        self.trim_front();
        // A generation the loaded history has not seen was granted since: ask again.
        let newer = |trail: &LeaseTrail| {
            row.token
                .is_some_and(|token| trail.events.iter().all(|e| e.token < token))
        };
        if self.lease.as_ref().is_some_and(newer) {
            self.lease_asked = None;
        }
    }

    /// Moves the selection by `delta` rows; asks for more rows past either end.
    pub fn scroll(&mut self, delta: isize) -> Option<Fetch> {
        if self.loading {
            return None;
        }
        let last = self.rows.len().saturating_sub(1);
        let wanted = self.selected as isize + delta;
        if wanted < 0 {
            self.selected = 0;
            if !self.at_start {
                self.loading = true;
                return Some(
                    self.rows
                        .first()
                        .map_or(Fetch::Newest, |r| Fetch::Before(r.id)),
                );
            }
        } else if wanted as usize > last {
            self.selected = last;
            if !self.at_end {
                self.loading = true;
                return Some(
                    self.rows
                        .last()
                        .map_or(Fetch::Newest, |r| Fetch::After(r.id)),
                );
            }
        } else {
            self.selected = wanted as usize;
        }
        None
    }

    pub fn home(&mut self) -> Option<Fetch> {
        self.selected = 0;
        (!self.at_start && !self.loading).then(|| {
            self.loading = true;
            Fetch::After(0)
        })
    }

    pub fn end(&mut self) -> Option<Fetch> {
        self.selected = self.rows.len().saturating_sub(1);
        (!self.at_end && !self.loading).then(|| {
            self.loading = true;
            Fetch::Newest
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tui::fixtures::{at, row};

    fn page(rows: Vec<Arc<WriteEvent>>, at_end: bool, focus: Option<i64>) -> Page {
        Page {
            rows,
            fetch: Fetch::Around(Anchor::Write { id: 2 }),
            at_start: true,
            at_end,
            focus,
        }
    }

    fn leased(id: i64, token: i64, lease: Option<&str>) -> Arc<WriteEvent> {
        let mut r = (*row(id, "accepted", "jobs", token, token, "w")).clone();
        r.lease = lease.map(str::to_owned);
        r.at = at(10 - id);
        Arc::new(r)
    }

    #[test]
    fn the_lease_the_writes_name_is_asked_for_once_up_to_the_last_row() {
        let mut timeline = Timeline::new("jobs".into(), None);
        timeline.apply(page(
            vec![
                leased(1, 1, None),
                leased(2, 1, Some("jobs-lease")),
                leased(3, 2, None),
            ],
            false,
            Some(2),
        ));
        let fetch = timeline.lease_request().unwrap();
        assert_eq!(fetch.lease, "jobs-lease");
        // Not at the live end: read back from the last row's time.
        assert_eq!(fetch.until, Some(at(7)));
        assert_eq!(timeline.lease_request(), None, "asked once");
        // A history for another question is not taken.
        let other = LeaseFetch {
            lease: "other".into(),
            until: None,
        };
        timeline.apply_lease(other, Vec::new());
        assert!(timeline.lease.is_none());
        timeline.apply_lease(fetch, Vec::new());
        assert!(timeline.lease.is_some());
    }

    #[test]
    fn runs_of_renewals_are_one_line_each_and_the_cursor_follows_the_selected_row() {
        use crate::domain::lease_history::LeaseChange::*;
        let event = |id, seconds, event, token, until| LeaseEvent {
            id,
            at: at(seconds),
            event,
            holder: format!("w{token}"),
            token,
            expires_at: at(until),
        };
        let trail = LeaseTrail {
            fetch: LeaseFetch {
                lease: "jobs".into(),
                until: None,
            },
            events: vec![
                event(1, 20, Acquired, 1, 19),
                event(2, 19, Renewed, 1, 18),
                event(3, 18, Renewed, 1, 17),
                event(4, 17, Renewed, 1, 16),
                event(5, 14, Expired, 1, 16),
                event(6, 14, Acquired, 2, 13),
                event(7, 13, Renewed, 2, 12),
            ],
        };
        let lines = trail.lines();
        let summary: Vec<_> = lines.iter().map(|l| (l.change, l.token, l.count)).collect();
        assert_eq!(
            summary,
            [
                (Acquired, 1, 1),
                (Renewed, 1, 3),
                (Expired, 1, 1),
                (Acquired, 2, 1),
                (Renewed, 2, 1)
            ]
        );
        // The run's line starts at its first renewal and ends where its last one left the grant.
        assert_eq!((lines[1].at, lines[1].expires_at), (at(19), at(16)));

        let mut timeline = Timeline::new("jobs".into(), None);
        timeline.apply(page(vec![leased(5, 1, Some("jobs"))], true, Some(5)));
        // Row 5 is at 5 s before now: past everything, so the last line.
        assert_eq!(timeline.lease_cursor(&lines), Some(4));
        let mut early = (*leased(5, 1, Some("jobs"))).clone();
        early.at = at(16);
        timeline.rows = vec![Arc::new(early)];
        assert_eq!(timeline.lease_cursor(&lines), Some(1));
    }

    #[test]
    fn a_live_write_of_a_generation_the_history_lacks_asks_for_it_again() {
        use crate::domain::lease_history::LeaseChange::Acquired;
        let mut timeline = Timeline::new("jobs".into(), None);
        timeline.apply(page(vec![leased(1, 1, Some("jobs"))], true, Some(1)));
        let fetch = timeline.lease_request().unwrap();
        assert_eq!(fetch.until, None, "at the live end: the newest history");
        let granted = LeaseEvent {
            id: 1,
            at: at(20),
            event: Acquired,
            holder: "w1".into(),
            token: 1,
            expires_at: at(0),
        };
        timeline.apply_lease(fetch, vec![granted]);
        timeline.append_live(&leased(2, 1, Some("jobs")));
        assert_eq!(timeline.lease_request(), None, "generation 1 is known");
        timeline.append_live(&leased(3, 2, Some("jobs")));
        assert!(timeline.lease_request().is_some(), "generation 2 is new");
    }

    #[test]
    fn an_etcd_locked_writes_holder_is_the_one_seen_holding() {
        use crate::domain::lease_history::{LeaseChange::Observed, Standing};
        let mut timeline = Timeline::new("jobs".into(), None);
        // Row 5 (at 5 s before now) by generation 20 of the lock.
        timeline.apply(page(vec![leased(5, 20, Some("etcd:jobs"))], true, Some(5)));
        let fetch = timeline.lease_request().unwrap();
        assert_eq!(fetch.lease, "etcd:jobs");
        let seen = |id, token: i64, first, last| LeaseEvent {
            id,
            at: at(first),
            event: Observed,
            holder: format!("jobs/{token:x}"),
            token,
            expires_at: at(last),
        };
        timeline.apply_lease(fetch, vec![seen(2, 20, 6, 1), seen(1, 10, 9, 7)]);
        let tenure = timeline.tenure().unwrap();
        assert_eq!(tenure.holder, "jobs/14");
        assert_eq!(tenure.standing, Standing::Seen { until: at(1) });
        let lines = timeline.lease.as_ref().unwrap().lines();
        assert_eq!(lines.len(), 2, "one line per holder seen");
        assert_eq!(timeline.lease_cursor(&lines), Some(1));
    }

    #[test]
    fn writes_naming_no_lease_ask_for_none() {
        let mut timeline = Timeline::new("jobs".into(), None);
        timeline.apply(page(
            vec![leased(1, 1, None), leased(2, 1, None)],
            true,
            None,
        ));
        assert_eq!(timeline.lease_request(), None);
        assert_eq!(timeline.tenure(), None);
    }
}
