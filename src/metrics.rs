//! Prometheus metrics. Labels are bounded: outcomes only, never keys, owners or operation ids.

use crate::domain::Outcome;
use crate::store::Backend;
use prometheus_client::encoding::text::encode;
use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::{exponential_buckets, Histogram};
use prometheus_client::registry::Registry;
use std::sync::Arc;
use std::time::Duration;

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct OutcomeLabels {
    pub outcome: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct SourceLabels {
    pub source: &'static str,
}

/// Everything the daemon exports; cheap to clone (the metrics are shared).
#[derive(Clone)]
pub struct Metrics {
    registry: Arc<Registry>,
    /// Write attempts decided by this daemon, by outcome.
    pub writes: Family<OutcomeLabels, Counter>,
    pub write_seconds: Histogram,
    /// Per write, how many writes shared its transaction (group commit).
    pub write_batch_size: Histogram,
    pub open_overlaps: Gauge,
    pub leases_granted: Counter,
    pub alerts_firing: Gauge,
    /// Live events a subscriber fell behind on (it refills writes from the audit).
    pub events_dropped: Counter,
    /// Audit rows the live tail published, by where it took them from: `feed` (handed over
    /// by this daemon's group commit) or `audit` (read back: other daemons' rows, gaps).
    pub live_rows: Family<SourceLabels, Counter>,
    /// SQLite only: the WAL file's size, read at each scrape.
    pub sqlite_wal_bytes: Option<Gauge>,
}

impl Metrics {
    pub fn new() -> Self {
        Self::build(None)
    }

    /// As `new`, with what only `backend` has: on SQLite, the WAL file's size.
    pub fn for_backend(backend: Backend) -> Self {
        Self::build(Some(backend))
    }

    fn build(backend: Option<Backend>) -> Self {
        let mut registry = Registry::with_prefix("fencewatch");
        let writes = Family::<OutcomeLabels, Counter>::default();
        for outcome in Outcome::ALL {
            // Every outcome is exported from the start, at zero.
            let _ = writes.get_or_create(&OutcomeLabels {
                outcome: outcome.as_str(),
            });
        }
        registry.register(
            "writes",
            "Write attempts decided, by outcome",
            writes.clone(),
        );
        // 0.25 ms to about 4 s.
        let write_seconds = Histogram::new(exponential_buckets(0.00025, 2.0, 15));
        registry.register_with_unit(
            "write_duration",
            "Time to decide, apply and audit a write",
            prometheus_client::registry::Unit::Seconds,
            write_seconds.clone(),
        );
        // 1 to 256, the largest batch.
        let write_batch_size = Histogram::new(exponential_buckets(1.0, 2.0, 9));
        registry.register(
            "write_batch_size",
            "Writes committed in the same transaction as each write (group commit)",
            write_batch_size.clone(),
        );
        let open_overlaps = Gauge::default();
        registry.register(
            "open_overlaps",
            "Ownership overlaps currently open",
            open_overlaps.clone(),
        );
        let leases_granted = Counter::default();
        registry.register(
            "leases_granted",
            "Lease generations granted",
            leases_granted.clone(),
        );
        let alerts_firing = Gauge::default();
        registry.register(
            "alerts_firing",
            "Alerts currently firing",
            alerts_firing.clone(),
        );
        let events_dropped = Counter::default();
        registry.register(
            "events_dropped",
            "Live events skipped by subscribers that fell behind",
            events_dropped.clone(),
        );
        let live_rows = Family::<SourceLabels, Counter>::default();
        for source in ["feed", "audit"] {
            let _ = live_rows.get_or_create(&SourceLabels { source });
        }
        registry.register(
            "live_rows",
            "Audit rows published to the live stream, by where the tail took them from",
            live_rows.clone(),
        );
        let sqlite_wal_bytes = (backend == Some(Backend::Sqlite)).then(|| {
            let gauge = Gauge::default();
            registry.register_with_unit(
                "sqlite_wal",
                "Size of the SQLite WAL file: checkpointed at about 40 MiB, larger while readers \
                 keep a checkpoint from finishing, cut back to 64 MiB when it starts over",
                prometheus_client::registry::Unit::Bytes,
                gauge.clone(),
            );
            gauge
        });
        Self {
            registry: Arc::new(registry),
            writes,
            write_seconds,
            write_batch_size,
            open_overlaps,
            leases_granted,
            alerts_firing,
            events_dropped,
            live_rows,
            sqlite_wal_bytes,
        }
    }

    /// The live tail's counter for rows taken from `source` (`feed` or `audit`).
    pub fn live_rows_from(&self, source: &'static str) -> Counter {
        self.live_rows
            .get_or_create(&SourceLabels { source })
            .clone()
    }

    pub fn record_write(&self, outcome: Outcome, took: Duration) {
        self.writes
            .get_or_create(&OutcomeLabels {
                outcome: outcome.as_str(),
            })
            .inc();
        self.write_seconds.observe(took.as_secs_f64());
    }

    /// The text exposition (OpenMetrics, which Prometheus reads).
    pub fn render(&self) -> String {
        let mut text = String::new();
        if let Err(error) = encode(&mut text, &self.registry) {
            tracing::error!(%error, "failed to encode metrics");
        }
        text
    }
}

impl Default for Metrics {
    fn default() -> Self {
        Self::new()
    }
}
