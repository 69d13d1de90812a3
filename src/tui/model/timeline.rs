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
mod tests;
