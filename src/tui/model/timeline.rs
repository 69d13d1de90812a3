//! A resource's audit around an incident, loaded a page at a time in either direction.

use crate::api::events::WriteEvent;
use chrono::{DateTime, Utc};
use std::sync::Arc;

/// Rows asked for per page.
pub const PAGE: u32 = 100;
/// Rows kept at most: scrolling far drops the other end (it is reloaded on the way back).
pub const KEEP: usize = 2000;

/// Where a timeline opens.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Anchor {
    /// An overlap: its first stale write (the first rejection of `stale_token` at or after
    /// `first_seen`).
    Overlap {
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
        }
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
