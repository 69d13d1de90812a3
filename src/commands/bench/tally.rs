//! What each client counts while it runs, and the summary of all clients of one path.

use super::PathResult;
use anyhow::Context;
use hdrhistogram::Histogram;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

/// Three significant figures: a latency is known to 0.1 %, in a few kilobytes per client.
const SIGNIFICANT_FIGURES: u8 = 3;

pub(super) struct Tally {
    /// Latencies in microseconds.
    latencies: Histogram<u64>,
    pub(super) accepted: u64,
    pub(super) rejected: u64,
    pub(super) errors: u64,
}

impl Tally {
    pub(super) fn new() -> anyhow::Result<Self> {
        Ok(Self {
            latencies: Histogram::new(SIGNIFICANT_FIGURES)
                .context("cannot make a latency histogram")?,
            accepted: 0,
            rejected: 0,
            errors: 0,
        })
    }

    pub(super) fn record(&mut self, took: Duration, rejected: bool) {
        let micros = u64::try_from(took.as_micros()).unwrap_or(u64::MAX);
        // `record` grows the histogram to fit; only a value past what any histogram can hold is
        // clamped (`saturating_record` alone would clamp to the histogram's current range).
        if self.latencies.record(micros).is_err() {
            self.latencies.saturating_record(micros);
        }
        if rejected {
            self.rejected += 1;
        } else {
            self.accepted += 1;
        }
    }
}

/// Adds up the clients' tallies of one path.
pub(super) fn summarise(
    path: &str,
    clients: usize,
    tallies: Vec<Tally>,
    elapsed: Duration,
) -> anyhow::Result<PathResult> {
    let mut all = Tally::new()?;
    for tally in tallies {
        all.latencies
            .add(&tally.latencies)
            .context("cannot add up the latencies")?;
        all.accepted += tally.accepted;
        all.rejected += tally.rejected;
        all.errors += tally.errors;
    }
    let requests = all.latencies.len();
    let seconds = elapsed.as_secs_f64();
    let millis = |quantile: f64| all.latencies.value_at_quantile(quantile) as f64 / 1000.0;
    Ok(PathResult {
        path: path.to_owned(),
        clients,
        requests,
        seconds,
        per_second: requests as f64 / seconds.max(f64::EPSILON),
        p50_ms: millis(0.50),
        p99_ms: millis(0.99),
        p999_ms: millis(0.999),
        accepted: all.accepted,
        rejected: all.rejected,
        errors: all.errors,
    })
}

/// Lets the clients run for `duration`, stops them and collects what they counted.
pub(super) async fn finish(
    tasks: Vec<tokio::task::JoinHandle<Tally>>,
    stop: &AtomicBool,
    duration: Duration,
) -> anyhow::Result<Vec<Tally>> {
    tokio::time::sleep(duration).await;
    stop.store(true, Ordering::Relaxed);
    let mut tallies = Vec::new();
    for task in tasks {
        tallies.push(task.await.context("a client failed")?);
    }
    Ok(tallies)
}
