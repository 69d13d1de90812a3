//! The live stream's events (`GET /v1/events`), typed: the bus carries [`DaemonEvent`], the
//! daemon writes it as SSE and the dashboard reads the same type back, so no two places can
//! disagree about an event's name or a field.
//!
//! Adding an event kind is one line in the `daemon_events!` list below (its variant, its data
//! type and its SSE name); every `match` on `DaemonEvent` elsewhere is exhaustive, so the
//! compiler points at each place that has to handle it, and `tests/api/openapi.rs` fails until
//! `docs/openapi.yaml` describes its data.

pub use super::per_outcome::PerOutcome;
use super::rates::known_windows;
pub use super::rates::{RateWindow, Rates, RatesByWindow};
use crate::domain::alert::AlertState;
use crate::domain::{AuditEntry, Overlap};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::sync::Arc;

/// A `write` event: the audit row itself, with its id as the SSE id.
pub type WriteEvent = AuditEntry;
/// An `alert` event, and an alert as `GET /v1/alerts` shows it.
pub type AlertEvent = AlertView;
/// A `stats` event, and `GET /v1/stats`.
pub type StatsEvent = StatsView;

/// Declares [`DaemonEvent`] and [`EventKind`] from one list of `Variant(DataType) = "name"`:
/// the name-to-variant and variant-to-data mappings are generated here and nowhere else.
macro_rules! daemon_events {
    ($($(#[$attr:meta])* $variant:ident($data:ty) = $name:literal,)+) => {
        /// One event of `GET /v1/events`, as the daemon publishes it and every client reads it.
        #[derive(Debug, Clone, PartialEq)]
        pub enum DaemonEvent {
            $($(#[$attr])* $variant(Arc<$data>),)+
        }

        /// What kind a [`DaemonEvent`] is: its SSE `event:` name.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
        pub enum EventKind {
            $($variant,)+
        }

        impl EventKind {
            pub const ALL: &'static [EventKind] = &[$(EventKind::$variant,)+];

            /// The SSE `event:` name.
            pub fn name(self) -> &'static str {
                match self {
                    $(EventKind::$variant => $name,)+
                }
            }
        }

        impl DaemonEvent {
            pub fn kind(&self) -> EventKind {
                match self {
                    $(DaemonEvent::$variant(_) => EventKind::$variant,)+
                }
            }

            /// The SSE `data:` line: the event's data as JSON.
            pub fn data(&self) -> Result<String, EventError> {
                match self {
                    $(DaemonEvent::$variant(data) => serde_json::to_string(&**data),)+
                }
                .map_err(|source| EventError::Encode {
                    kind: self.kind(),
                    source,
                })
            }

            fn decode(kind: EventKind, data: &str) -> Result<Self, EventError> {
                match kind {
                    $(EventKind::$variant => {
                        serde_json::from_str(data).map(|data| DaemonEvent::$variant(Arc::new(data)))
                    })+
                }
                .map_err(|source| EventError::Decode { kind, source })
            }
        }
    };
}

daemon_events! {
    /// An audit row, in id order once every lower id is final (a watched database's rows as
    /// they are taken in).
    Write(WriteEvent) = "write",
    /// An ownership overlap opened, grew or closed.
    Overlap(OverlapEvent) = "overlap",
    /// An alert changed state.
    Alert(AlertEvent) = "alert",
    /// The figures of `GET /v1/stats`, each second.
    Stats(StatsEvent) = "stats",
}

#[derive(Debug, thiserror::Error)]
pub enum EventError {
    #[error("unknown event type {0:?}")]
    UnknownKind(String),
    #[error("bad {kind} event: {source}")]
    Decode {
        kind: EventKind,
        source: serde_json::Error,
    },
    #[error("cannot encode a {kind} event: {source}")]
    Encode {
        kind: EventKind,
        source: serde_json::Error,
    },
}

impl EventKind {
    pub fn from_name(name: &str) -> Option<Self> {
        Self::ALL.iter().copied().find(|kind| kind.name() == name)
    }
}

impl std::fmt::Display for EventKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

impl DaemonEvent {
    /// Reads an SSE event back from its name and data.
    pub fn parse(kind: &str, data: &str) -> Result<Self, EventError> {
        let kind =
            EventKind::from_name(kind).ok_or_else(|| EventError::UnknownKind(kind.to_owned()))?;
        Self::decode(kind, data)
    }

    /// The SSE `id:`: the audit id of this daemon's own writes, where a client resumes with
    /// `Last-Event-ID`. A watched database's row has none, its id being that database's.
    pub fn sse_id(&self) -> Option<i64> {
        match self {
            DaemonEvent::Write(row) => row.source.is_none().then_some(row.id),
            DaemonEvent::Overlap(_) | DaemonEvent::Alert(_) | DaemonEvent::Stats(_) => None,
        }
    }
}

/// What happened to an overlap since it was last published.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum OverlapChange {
    Opened,
    Grew,
    Closed,
}

/// An `overlap` event: the overlap's state now, and the change that made it so. `change` is
/// absent where an overlap comes from `GET /v1/overlaps` rather than the stream.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct OverlapEvent {
    #[serde(flatten)]
    pub overlap: Overlap,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub change: Option<OverlapChange>,
}

/// An alert as the API and the live stream show it.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct AlertView {
    pub rule: String,
    /// The resource, for per-resource rules.
    pub resource: Option<String>,
    /// The watched database whose rows the instance counts (`serve --watch`); absent for the
    /// daemon's own.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source: Option<String>,
    pub state: AlertState,
    pub since: Option<String>,
    pub fired_at: Option<String>,
    /// The count last compared with the threshold.
    pub value: i64,
    pub threshold: u64,
    pub window_seconds: f64,
    pub for_seconds: f64,
    pub keep_firing_for_seconds: f64,
    pub labels: BTreeMap<String, String>,
    pub summary: String,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct StatsView {
    pub totals: PerOutcome<u64>,
    #[serde(deserialize_with = "known_windows")]
    pub rates: RatesByWindow,
    pub open_overlaps: u64,
    pub firing_alerts: u64,
    pub events_dropped: u64,
    /// The audit id up to which these figures are final.
    pub through_audit_id: i64,
    /// Each watched database (`serve --watch`), by source name; absent when none is watched.
    /// The figures above are the daemon's own.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub sources: BTreeMap<String, SourceStats>,
}

/// A watched database's figures in `/v1/stats`: its rows taken in since this daemon started
/// watching it.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct SourceStats {
    pub totals: PerOutcome<u64>,
    #[serde(deserialize_with = "known_windows")]
    pub rates: RatesByWindow,
    pub open_overlaps: u64,
    /// The watched database's audit id up to which every row has been taken in.
    pub through_id: i64,
    /// Whether the watched database answered the last read.
    pub up: bool,
}

/// One event of each kind as it goes on the wire, for tests on both sides of it.
#[cfg(test)]
pub(crate) mod fixtures {
    use super::EventKind;

    pub const WRITE: &str = r#"{"id":7,"at":"2025-11-30T03:39:58.123456Z","resource":"a/b","outcome":"stale","token":7,"highest_token":8,"revision":3,"idempotency_key":null,"expected_revision":null,"owner":"w-7","lease":null,"body_sha256":null,"body_len":null,"detail":"superseded","caller":null}"#;
    pub const WATCHED_WRITE: &str = r#"{"id":3,"at":"2025-11-30T03:39:58.000001Z","resource":"orders/eu","outcome":"accepted","token":8,"highest_token":8,"revision":1,"idempotency_key":null,"expected_revision":null,"owner":"new","lease":null,"body_sha256":null,"body_len":null,"detail":null,"caller":null,"source":"shop"}"#;
    pub const OVERLAP: &str = r#"{"id":1,"resource":"a/b","stale_token":7,"superseding_token":8,"stale_owner":"w-7","superseding_owner":null,"first_seen":"2025-11-30T03:39:50.000000Z","last_seen":"2025-11-30T03:39:51.000000Z","rejected_writes":2,"state":"open","closed_at":null,"change":"grew"}"#;
    pub const ALERT: &str = r#"{"rule":"StaleOwnerSpike","resource":null,"state":"firing","since":"2025-11-30T03:39:50.000000Z","fired_at":"2025-11-30T03:39:55.000000Z","value":25,"threshold":20,"window_seconds":60.0,"for_seconds":0.0,"keep_firing_for_seconds":0.0,"labels":{"severity":"page"},"summary":"25 stale writes in 1m"}"#;
    pub const STATS: &str = r#"{"totals":{"accepted":3,"idempotency_conflict":0,"invalid":0,"lease_expired":0,"replayed":0,"reset":0,"revision_conflict":0,"stale":1,"superseded":0,"unauthorized":0},"rates":{"10s":{"total":0.4,"by_outcome":{"accepted":0.3,"idempotency_conflict":0.0,"invalid":0.0,"lease_expired":0.0,"replayed":0.0,"reset":0.0,"revision_conflict":0.0,"stale":0.1,"superseded":0.0,"unauthorized":0.0}}},"open_overlaps":1,"firing_alerts":0,"events_dropped":0,"through_audit_id":9}"#;

    /// The wire form of one event of each kind: (SSE name, data).
    pub fn wire(kind: EventKind) -> (&'static str, &'static str) {
        match kind {
            EventKind::Write => ("write", WRITE),
            EventKind::Overlap => ("overlap", OVERLAP),
            EventKind::Alert => ("alert", ALERT),
            EventKind::Stats => ("stats", STATS),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::fixtures::*;
    use super::*;
    use crate::domain::Outcome;

    #[test]
    fn every_kind_reads_back_as_written_under_its_own_name() {
        let mut names = std::collections::BTreeSet::new();
        for &kind in EventKind::ALL {
            let (name, data) = wire(kind);
            assert_eq!(kind.name(), name);
            assert!(names.insert(name), "{name} names two kinds");
            assert_eq!(EventKind::from_name(name), Some(kind));
            let event = DaemonEvent::parse(name, data).unwrap_or_else(|e| panic!("{name}: {e}"));
            assert_eq!(event.kind(), kind);
            assert_eq!(
                event.data().unwrap(),
                data,
                "{name} round-trips byte for byte"
            );
            assert_eq!(
                DaemonEvent::parse(name, &event.data().unwrap()).unwrap(),
                event
            );
        }
    }

    #[test]
    fn the_data_reads_into_its_own_type() {
        let DaemonEvent::Overlap(overlap) = DaemonEvent::parse("overlap", OVERLAP).unwrap() else {
            panic!("not an overlap")
        };
        assert_eq!(overlap.change, Some(OverlapChange::Grew));
        let DaemonEvent::Stats(stats) = DaemonEvent::parse("stats", STATS).unwrap() else {
            panic!("not stats")
        };
        assert_eq!(*stats.totals.get(Outcome::Accepted), 3);
        assert_eq!(stats.rates[&RateWindow::TenSeconds].by_outcome.stale, 0.1);
    }

    #[test]
    fn only_the_daemons_own_writes_carry_an_sse_id() {
        let id = |name: &str, data: &str| DaemonEvent::parse(name, data).unwrap().sse_id();
        assert_eq!(id("write", WRITE), Some(7));
        assert_eq!(id("write", WATCHED_WRITE), None);
        for name in ["overlap", "alert", "stats"] {
            assert_eq!(id(name, wire(EventKind::from_name(name).unwrap()).1), None);
        }
    }

    #[test]
    fn unknown_kinds_and_bad_data_are_errors() {
        assert!(matches!(
            DaemonEvent::parse("write", "{}"),
            Err(EventError::Decode {
                kind: EventKind::Write,
                ..
            })
        ));
        assert!(matches!(
            DaemonEvent::parse("nope", "{}"),
            Err(EventError::UnknownKind(name)) if name == "nope"
        ));
        assert!(matches!(
            DaemonEvent::parse("stats", WRITE),
            Err(EventError::Decode {
                kind: EventKind::Stats,
                ..
            })
        ));
    }

    #[test]
    fn per_outcome_members_are_the_outcome_names_in_order() {
        let numbered = PerOutcome::from_fn(|outcome| {
            Outcome::ALL.iter().position(|o| *o == outcome).unwrap() as u64 + 1
        });
        let json = serde_json::to_value(numbered).unwrap();
        let members: Vec<&String> = json.as_object().unwrap().keys().collect();
        let mut names: Vec<&str> = Outcome::ALL.iter().map(|o| o.as_str()).collect();
        names.sort_unstable();
        assert_eq!(members, names);
        for (index, outcome) in Outcome::ALL.into_iter().enumerate() {
            assert_eq!(json[outcome.as_str()], index as u64 + 1);
            assert_eq!(*numbered.get(outcome), index as u64 + 1);
        }
        let listed: Vec<&str> = numbered.iter().map(|(o, _)| o.as_str()).collect();
        assert_eq!(listed, names, "iter() goes in the members' order");
        let text = serde_json::to_string(&numbered).unwrap();
        assert!(
            text.starts_with(r#"{"accepted":1,"idempotency_conflict":7,"#),
            "{text}"
        );
    }

    #[test]
    fn a_reader_takes_missing_outcomes_as_zero_and_skips_unknown_ones() {
        let read: PerOutcome<u64> =
            serde_json::from_str(r#"{"stale":2,"a_newer_outcome":5}"#).unwrap();
        assert_eq!(
            read,
            PerOutcome {
                stale: 2,
                ..PerOutcome::default()
            }
        );
        let mut sum = read;
        sum += &PerOutcome {
            stale: 1,
            accepted: 4,
            ..PerOutcome::default()
        };
        *sum.get_mut(Outcome::Reset) += 1;
        assert_eq!((sum.stale, sum.accepted, sum.reset), (3, 4, 1));
    }
}
