//! The live stream's events (`GET /v1/events`), typed: the daemon serializes these and the
//! dashboard deserializes the same types, so the two cannot disagree about a field.

use crate::domain::{AuditEntry, Overlap};
use serde::{Deserialize, Serialize};
use std::sync::Arc;

use crate::domain::alert::AlertState;
use std::collections::BTreeMap;

/// An `alert` event, and an alert as `GET /v1/alerts` shows it.
pub type AlertEvent = AlertView;
/// A `stats` event, and `GET /v1/stats`.
pub type StatsEvent = StatsView;

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

/// Writes per second over one window, per outcome and in all.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Rates {
    pub total: f64,
    pub by_outcome: BTreeMap<String, f64>,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct StatsView {
    pub totals: BTreeMap<String, u64>,
    pub rates: BTreeMap<String, Rates>,
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
    pub totals: BTreeMap<String, u64>,
    pub rates: BTreeMap<String, Rates>,
    pub open_overlaps: u64,
    /// The watched database's audit id up to which every row has been taken in.
    pub through_id: i64,
    /// Whether the watched database answered the last read.
    pub up: bool,
}

/// A `write` event: the audit row itself, with its id as the SSE id.
pub type WriteEvent = AuditEntry;

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

/// One event of the stream, as either side holds it.
#[derive(Debug, Clone, PartialEq)]
pub enum DaemonEvent {
    Write(Arc<WriteEvent>),
    Overlap(Arc<OverlapEvent>),
    Alert(Arc<AlertEvent>),
    Stats(Arc<StatsEvent>),
}

#[derive(Debug, thiserror::Error)]
pub enum EventError {
    #[error("unknown event type {0:?}")]
    UnknownKind(String),
    #[error("bad {kind} event: {source}")]
    Data {
        kind: &'static str,
        source: serde_json::Error,
    },
}

impl DaemonEvent {
    /// The SSE `event:` name.
    pub fn kind(&self) -> &'static str {
        match self {
            DaemonEvent::Write(_) => "write",
            DaemonEvent::Overlap(_) => "overlap",
            DaemonEvent::Alert(_) => "alert",
            DaemonEvent::Stats(_) => "stats",
        }
    }

    /// The SSE `data:` line.
    pub fn data(&self) -> Result<String, serde_json::Error> {
        match self {
            DaemonEvent::Write(row) => serde_json::to_string(&**row),
            DaemonEvent::Overlap(overlap) => serde_json::to_string(&**overlap),
            DaemonEvent::Alert(alert) => serde_json::to_string(&**alert),
            DaemonEvent::Stats(stats) => serde_json::to_string(&**stats),
        }
    }

    /// Reads an SSE event back from its name and data.
    pub fn parse(kind: &str, data: &str) -> Result<Self, EventError> {
        fn read<T: serde::de::DeserializeOwned>(
            kind: &'static str,
            data: &str,
        ) -> Result<Arc<T>, EventError> {
            serde_json::from_str(data)
                .map(Arc::new)
                .map_err(|source| EventError::Data { kind, source })
        }
        Ok(match kind {
            "write" => DaemonEvent::Write(read("write", data)?),
            "overlap" => DaemonEvent::Overlap(read("overlap", data)?),
            "alert" => DaemonEvent::Alert(read("alert", data)?),
            "stats" => DaemonEvent::Stats(read("stats", data)?),
            other => return Err(EventError::UnknownKind(other.to_owned())),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_event_reads_back_as_written() {
        let row = r#"{"id":7,"at":"2025-11-30T03:39:58.123456Z","resource":"a/b","outcome":"stale","token":7,"highest_token":8,"revision":3,"idempotency_key":null,"expected_revision":null,"owner":"w-7","lease":null,"body_sha256":null,"body_len":null,"detail":"superseded","caller":null}"#;
        let overlap = r#"{"id":1,"resource":"a/b","stale_token":7,"superseding_token":8,"stale_owner":"w-7","superseding_owner":null,"first_seen":"2025-11-30T03:39:50.000000Z","last_seen":"2025-11-30T03:39:51.000000Z","rejected_writes":2,"state":"open","closed_at":null,"change":"grew"}"#;
        let stats = r#"{"totals":{"accepted":3},"rates":{},"open_overlaps":1,"firing_alerts":0,"events_dropped":0,"through_audit_id":9}"#;
        for (kind, data) in [("write", row), ("overlap", overlap), ("stats", stats)] {
            let event = DaemonEvent::parse(kind, data).unwrap();
            assert_eq!(event.kind(), kind);
            assert_eq!(event.data().unwrap(), data, "{kind} round-trips");
        }
        let DaemonEvent::Overlap(o) = DaemonEvent::parse("overlap", overlap).unwrap() else {
            panic!("not an overlap")
        };
        assert_eq!(o.change, Some(OverlapChange::Grew));
        assert!(DaemonEvent::parse("write", "{}").is_err());
        assert!(matches!(
            DaemonEvent::parse("nope", "{}"),
            Err(EventError::UnknownKind(_))
        ));
    }
}
