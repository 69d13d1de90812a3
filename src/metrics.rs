//! Prometheus metrics. Labels are bounded: outcomes only, never keys, owners or operation ids.

use crate::domain::refusal::RefusalReason;
use crate::domain::Outcome;
use prometheus_client::encoding::text::encode;
use prometheus_client::encoding::{EncodeLabel, EncodeLabelSet, LabelSetEncoder};
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::{exponential_buckets, Histogram};
use prometheus_client::registry::Registry;
use std::sync::atomic::AtomicU64;
use std::sync::Arc;
use std::time::Duration;

mod exposition;
pub use exposition::{openmetrics_to_text, Exposition};

/// A write's outcome and, for a watched database's row (`serve --watch`), its source. The
/// daemon's own series carry no `source` label at all, so they read as they always did.
#[derive(Clone, Debug, Hash, PartialEq, Eq)]
pub struct OutcomeLabels {
    pub outcome: &'static str,
    pub source: Option<Arc<str>>,
}

impl EncodeLabelSet for OutcomeLabels {
    fn encode(&self, encoder: &mut LabelSetEncoder) -> Result<(), std::fmt::Error> {
        ("outcome", self.outcome).encode(encoder.encode_label())?;
        WatchedSource(self.source.clone()).encode(encoder)
    }
}

/// A `source` label only for a watched database's series.
#[derive(Clone, Debug, Hash, PartialEq, Eq, Default)]
pub struct WatchedSource(pub Option<Arc<str>>);

impl EncodeLabelSet for WatchedSource {
    fn encode(&self, encoder: &mut LabelSetEncoder) -> Result<(), std::fmt::Error> {
        match &self.0 {
            Some(source) => ("source", &**source).encode(encoder.encode_label()),
            None => Ok(()),
        }
    }
}

/// The `source` label of a watched database's own series.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct WatchLabels {
    pub source: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct SourceLabels {
    pub source: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct ReasonLabels {
    pub reason: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct KindLabels {
    pub kind: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct CheckpointLabels {
    pub outcome: &'static str,
}

/// The one series of a family that exists only on some daemons (see `Metrics::witness`).
#[derive(Clone, Debug, Hash, PartialEq, Eq, Default)]
pub struct NoLabels;

impl EncodeLabelSet for NoLabels {
    fn encode(&self, _encoder: &mut LabelSetEncoder) -> Result<(), std::fmt::Error> {
        Ok(())
    }
}

/// What one round of the daemon's witness did (`fencewatch_audit_checkpoints_total`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CheckpointRound {
    /// A checkpoint was signed.
    Signed,
    /// The audit was where the last checkpoint left it: nothing to sign.
    Unchanged,
    /// The audit no longer holds what the last checkpoint did: nothing was signed.
    Refused,
    /// The database (or the signature) failed; retried next round.
    Failed,
}

impl CheckpointRound {
    pub const ALL: [Self; 4] = [Self::Signed, Self::Unchanged, Self::Refused, Self::Failed];

    pub fn as_str(self) -> &'static str {
        match self {
            Self::Signed => "signed",
            Self::Unchanged => "unchanged",
            Self::Refused => "refused",
            Self::Failed => "failed",
        }
    }
}

/// The witness's series, handed to the daemon's signer.
#[derive(Clone)]
pub struct WitnessMetrics {
    rounds: Family<CheckpointLabels, Counter>,
    last_signed: Gauge<f64, AtomicU64>,
}

impl WitnessMetrics {
    pub fn count(&self, round: CheckpointRound) {
        self.rounds
            .get_or_create(&CheckpointLabels {
                outcome: round.as_str(),
            })
            .inc();
    }

    /// The time of the newest checkpoint signed with this daemon's key, in microseconds.
    pub fn signed_at(&self, at_us: i64) {
        self.last_signed.set(at_us as f64 / 1_000_000.0);
    }
}

/// Everything the daemon exports; cheap to clone (the metrics are shared).
#[derive(Clone)]
pub struct Metrics {
    registry: Arc<Registry>,
    /// Write attempts decided by this daemon, by outcome; and those of watched databases, by
    /// outcome and source.
    pub writes: Family<OutcomeLabels, Counter>,
    pub write_seconds: Histogram,
    /// Per write, how many writes shared its transaction (group commit).
    pub write_batch_size: Histogram,
    /// This daemon's own open overlaps (the unlabelled series of `open_overlaps_by_source`).
    pub open_overlaps: Gauge,
    /// Open overlaps, per watched source beside this daemon's own.
    pub open_overlaps_by_source: Family<WatchedSource, Gauge>,
    /// 1 while a watched database answers its watcher, 0 while it does not.
    pub watch_up: Family<WatchLabels, Gauge>,
    pub leases_granted: Counter,
    pub alerts_firing: Gauge,
    /// Live events a subscriber fell behind on (it refills writes from the audit).
    pub events_dropped: Counter,
    /// Audit rows the live tail published, by where it took them from: `feed` (handed over
    /// by this daemon's group commit) or `audit` (read back: other daemons' rows, gaps).
    pub live_rows: Family<SourceLabels, Counter>,
    /// What external lock services were caught doing wrong, by kind.
    pub authority_anomalies: Family<KindLabels, Counter>,
    /// Requests refused before the fence, by reason (the problem type they got).
    pub refusals: Family<ReasonLabels, Counter>,
    /// Closed incidents' pauses: the stale owner's silence before its first refusal.
    pub overlap_pause_seconds: Histogram,
    /// Closed incidents' zombie lifetimes: first refusal to last.
    pub overlap_zombie_lifetime_seconds: Histogram,
    /// Writes of stale owners accepted after their grant lapsed and before the successor's
    /// first write, counted as their incidents close.
    pub overlap_accepted_after_lapse: Counter,
    /// The witness's rounds by outcome; no series unless the daemon signs (`witness`).
    audit_checkpoints: Family<CheckpointLabels, Counter>,
    /// When the newest checkpoint was signed; no series unless the daemon signs.
    audit_checkpoint_last_signed: Family<NoLabels, Gauge<f64, AtomicU64>>,
    /// SQLite only: the WAL file's size, read at each scrape.
    pub sqlite_wal_bytes: Option<Gauge>,
}

impl Metrics {
    pub fn new() -> Self {
        Self::build(false)
    }

    /// As `new`, with the size of the database's WAL file (SQLite's).
    pub fn with_wal_file() -> Self {
        Self::build(true)
    }

    fn build(wal_file: bool) -> Self {
        let mut registry = Registry::with_prefix("fencewatch");
        let writes = Family::<OutcomeLabels, Counter>::default();
        for outcome in Outcome::ALL {
            // Every outcome is exported from the start, at zero.
            let _ = writes.get_or_create(&OutcomeLabels {
                outcome: outcome.as_str(),
                source: None,
            });
        }
        registry.register(
            "writes",
            "Write attempts decided, by outcome (and, for watched databases, source)",
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
        let open_overlaps_by_source = Family::<WatchedSource, Gauge>::default();
        let open_overlaps = open_overlaps_by_source
            .get_or_create(&WatchedSource(None))
            .clone();
        registry.register(
            "open_overlaps",
            "Ownership overlaps currently open (for watched databases, by source)",
            open_overlaps_by_source.clone(),
        );
        let watch_up = Family::<WatchLabels, Gauge>::default();
        registry.register(
            "watch_up",
            "Whether each watched database (serve --watch) answered its watcher's last read: 1 \
             or 0",
            watch_up.clone(),
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
        let authority_anomalies = Family::<KindLabels, Counter>::default();
        for anomaly in crate::domain::authority::Anomaly::ALL {
            let _ = authority_anomalies.get_or_create(&KindLabels {
                kind: anomaly.as_str(),
            });
        }
        registry.register(
            "authority_anomalies",
            "Anomalies of external lock services (generations gone backwards, one generation \
             presented by two owners), by kind",
            authority_anomalies.clone(),
        );
        // 50 ms to about 7 min: a GC pause to a stalled VM.
        let overlap_pause_seconds = Histogram::new(exponential_buckets(0.05, 2.0, 14));
        registry.register_with_unit(
            "overlap_pause",
            "Closed ownership overlaps: how long the stale owner was silent before its first \
             refused write",
            prometheus_client::registry::Unit::Seconds,
            overlap_pause_seconds.clone(),
        );
        let overlap_zombie_lifetime_seconds = Histogram::new(exponential_buckets(0.05, 2.0, 14));
        registry.register_with_unit(
            "overlap_zombie_lifetime",
            "Closed ownership overlaps: from the stale owner's first refused write to its last",
            prometheus_client::registry::Unit::Seconds,
            overlap_zombie_lifetime_seconds.clone(),
        );
        let overlap_accepted_after_lapse = Counter::default();
        registry.register(
            "overlap_accepted_after_lapse",
            "Writes of stale owners accepted after their grant lapsed and before the successor's \
             first write (the window the fence did not cover), counted as incidents close",
            overlap_accepted_after_lapse.clone(),
        );
        let refusals = Family::<ReasonLabels, Counter>::default();
        for reason in RefusalReason::ALL {
            let _ = refusals.get_or_create(&ReasonLabels {
                reason: reason.as_str(),
            });
        }
        registry.register(
            "refusals",
            "Requests refused before the fence (no or a wrong API key, a key's scopes, a foreign \
             origin or Host, an address over its budget of refusals), by reason",
            refusals.clone(),
        );
        let audit_checkpoints = Family::<CheckpointLabels, Counter>::default();
        registry.register(
            "audit_checkpoints",
            "Rounds of the daemon's witness (serve --audit-signing-key), by outcome: signed, \
             unchanged (nothing written since the last checkpoint), refused (the audit no longer \
             holds what the last checkpoint did) or failed (retried next round)",
            audit_checkpoints.clone(),
        );
        let audit_checkpoint_last_signed = Family::<NoLabels, Gauge<f64, AtomicU64>>::default();
        registry.register_with_unit(
            "audit_checkpoint_last_signed_timestamp",
            "When the newest checkpoint signed with the daemon's key was taken, in seconds since \
             the epoch (at start, the one it resumed from)",
            prometheus_client::registry::Unit::Seconds,
            audit_checkpoint_last_signed.clone(),
        );
        let sqlite_wal_bytes = wal_file.then(|| {
            let gauge = Gauge::default();
            registry.register_with_unit(
                "sqlite_wal",
                "Size of the SQLite WAL file: a few hundred MiB under load, 400 MiB at most, \
                 larger while readers keep a checkpoint from finishing",
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
            open_overlaps_by_source,
            watch_up,
            leases_granted,
            alerts_firing,
            events_dropped,
            live_rows,
            authority_anomalies,
            refusals,
            overlap_pause_seconds,
            overlap_zombie_lifetime_seconds,
            overlap_accepted_after_lapse,
            audit_checkpoints,
            audit_checkpoint_last_signed,
            sqlite_wal_bytes,
        }
    }

    /// The witness's series, exported from here on (its outcomes at zero): only a daemon that
    /// signs has them, so that a rule on a checkpoint's age never fires for one that does not.
    pub fn witness(&self) -> WitnessMetrics {
        for round in CheckpointRound::ALL {
            let _ = self.audit_checkpoints.get_or_create(&CheckpointLabels {
                outcome: round.as_str(),
            });
        }
        WitnessMetrics {
            rounds: self.audit_checkpoints.clone(),
            last_signed: self
                .audit_checkpoint_last_signed
                .get_or_create(&NoLabels)
                .clone(),
        }
    }

    /// The live tail's counter for rows taken from `source` (`feed` or `audit`).
    pub fn live_rows_from(&self, source: &'static str) -> Counter {
        self.live_rows
            .get_or_create(&SourceLabels { source })
            .clone()
    }

    pub fn record_write(&self, outcome: Outcome, took: Duration) {
        self.count(outcome);
        self.write_seconds.observe(took.as_secs_f64());
    }

    /// Counts an audited event under its outcome: a reset, which is no write to time.
    pub fn count(&self, outcome: Outcome) {
        self.writes
            .get_or_create(&OutcomeLabels {
                outcome: outcome.as_str(),
                source: None,
            })
            .inc();
    }

    /// Exports a watched source's series from the start, at zero.
    pub fn watch(&self, source: &Arc<str>) {
        for outcome in Outcome::ALL {
            let _ = self.writes.get_or_create(&OutcomeLabels {
                outcome: outcome.as_str(),
                source: Some(source.clone()),
            });
        }
        let _ = self
            .open_overlaps_by_source
            .get_or_create(&WatchedSource(Some(source.clone())));
        let _ = self.watch_up.get_or_create(&WatchLabels {
            source: source.to_string(),
        });
    }

    /// Counts a watched database's row under its outcome and source.
    pub fn count_watched(&self, source: &Arc<str>, outcome: Outcome) {
        self.writes
            .get_or_create(&OutcomeLabels {
                outcome: outcome.as_str(),
                source: Some(source.clone()),
            })
            .inc();
    }

    /// Whether a watched database answers.
    pub fn set_watch_up(&self, source: &str, up: bool) {
        self.watch_up
            .get_or_create(&WatchLabels {
                source: source.to_owned(),
            })
            .set(i64::from(up));
    }

    pub fn record_refusal(&self, reason: RefusalReason) {
        self.refusals
            .get_or_create(&ReasonLabels {
                reason: reason.as_str(),
            })
            .inc();
    }

    /// The OpenMetrics 1.0 exposition.
    pub fn render(&self) -> String {
        let mut text = String::new();
        if let Err(error) = encode(&mut text, &self.registry) {
            tracing::error!(%error, "failed to encode metrics");
        }
        text
    }

    /// Takes in a closed incident's figures; those the history could not tell are left out.
    pub fn observe_incident(&self, report: &crate::domain::incident::IncidentReport) {
        let seconds = |ms: i64| ms.max(0) as f64 / 1000.0;
        if let Some(ms) = report.pause_ms {
            self.overlap_pause_seconds.observe(seconds(ms));
        }
        if let Some(ms) = report.zombie_lifetime_ms {
            self.overlap_zombie_lifetime_seconds.observe(seconds(ms));
        }
        if let Some(count) = report.accepted_after_lapse {
            self.overlap_accepted_after_lapse
                .inc_by(u64::try_from(count).unwrap_or(0));
        }
    }

    /// The registry in `format`: the text format is derived from the OpenMetrics encoding, the
    /// only one prometheus-client writes, so that both always carry the same samples.
    pub fn render_as(&self, format: Exposition) -> String {
        match format {
            Exposition::OpenMetrics => self.render(),
            Exposition::Text => openmetrics_to_text(&self.render()),
        }
    }
}

impl Default for Metrics {
    fn default() -> Self {
        Self::new()
    }
}

#[cfg(test)]
mod tests;
