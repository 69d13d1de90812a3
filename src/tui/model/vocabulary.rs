//! What the dashboard's model speaks: its views, the messages that change it, the actions keys
//! map to, and the commands it hands back for the loop to run.

use super::timeline::{Fetch, LeaseFetch, Page};
use crate::api::events::DaemonEvent;
use crate::client::Attach;
use crate::domain::incident::IncidentReport;
use crate::domain::lease_history::LeaseEvent;
use std::time::Duration;

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

/// Where the dashboard's link to the daemon's event stream stands.
#[derive(Debug, Clone, PartialEq)]
pub enum ConnectionState {
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
    /// The state at attach, consistent as of one audit id (boxed: the other messages are small).
    Attached(Box<Attach>),
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
