//! Each closed incident measured for the overlap histograms (`Metrics::observe_incident`), off
//! the overlap watcher's loop, so that publishing overlap changes never waits on it, and paced:
//! after each measurement it rests a few times as long as the measurement took, as PostgreSQL's
//! vacuum cost delay does. A daemon started after a quiet period closes every overlap left open
//! at once; measured back to back, their audit reads took a core from the writes
//! ([performance.md](../../docs/performance.md#the-audit-at-10-million-rows)).

use crate::domain::Overlap;
use crate::metrics::Metrics;
use crate::store::Store;
use std::time::Instant;
use tokio::sync::mpsc;
use tokio::task::JoinHandle;

/// Rest after a measurement, as a multiple of its time: at most a quarter of a core.
const REST_FACTOR: u32 = 3;

/// An overlap closed by this daemon, with when.
pub type ClosedIncident = (Overlap, i64);

/// Where the overlap watcher hands the overlaps its calls close, and the task measuring them.
pub fn spawn_measurer(
    store: Store,
    metrics: Metrics,
) -> (mpsc::UnboundedSender<ClosedIncident>, JoinHandle<()>) {
    let (closed, mut incidents) = mpsc::unbounded_channel::<ClosedIncident>();
    let task = tokio::spawn(async move {
        while let Some((overlap, closed_at_us)) = incidents.recv().await {
            let started = Instant::now();
            let at = chrono::DateTime::from_timestamp_micros(closed_at_us).unwrap_or_default();
            match crate::app::incident::facts(&store, &overlap, at).await {
                Ok((facts, _)) => metrics.observe_incident(&facts),
                Err(error) => {
                    tracing::warn!(%error, id = overlap.id, "cannot measure a closed overlap");
                }
            }
            tokio::time::sleep(started.elapsed() * REST_FACTOR).await;
        }
    });
    (closed, task)
}
