//! The live tail: follows the audit in id order and publishes each row once every lower id is
//! final, so a subscriber that resumes from an id misses nothing, on either backend and with
//! several daemons writing to one PostgreSQL database.
//!
//! Ids are taken from a sequence, so on PostgreSQL a row can commit after a row with a higher
//! id. The tail stops at the first missing id and waits until it is final: every write
//! transaction takes its transaction id before its audit id, so the owner of a missing id is
//! older than the snapshot taken after the gap was first seen; once that snapshot's xmax is
//! below the current xmin, the owner has ended and, if its row is still missing, it rolled
//! back. SQLite's single writer assigns ids in commit order, so a gap there only waits out a
//! timeout.

use super::{Event, EventBus, StatsWindow};
use crate::store::Store;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tokio::sync::{watch, Notify};

/// How often the tail looks when nobody wakes it (rows committed by other daemons).
const POLL: Duration = Duration::from_millis(100);
/// Rows read per query.
const PAGE: u32 = 1000;
/// A gap older than this is skipped even if not provably final: on SQLite (where gaps do not
/// occur) and on PostgreSQL when a foreign long transaction holds the snapshot xmin back.
const GAP_PATIENCE: Duration = Duration::from_secs(30);

/// The tail's handle: its progress and the means to wake it.
#[derive(Clone)]
pub struct TailHandle {
    /// The audit id up to which every row has been published (or is known not to exist).
    pub horizon: watch::Receiver<i64>,
    /// Nudged by writers after they commit, so local writes appear at once.
    pub wake: Arc<Notify>,
    pub stats: Arc<Mutex<StatsWindow>>,
}

struct Gap {
    /// The first missing id.
    id: i64,
    seen: Instant,
    /// `xmax` of the first snapshot taken after the gap was seen.
    xmax: Option<i64>,
}

/// Starts the tail from the current end of the audit.
pub async fn spawn_tail(
    store: Store,
    bus: EventBus,
) -> Result<(TailHandle, tokio::task::JoinHandle<()>), crate::store::StoreError> {
    let start = store.max_audit_id().await?;
    let totals = store.outcome_totals(start).await?;
    let stats = Arc::new(Mutex::new(StatsWindow::new(totals)));
    let (horizon_tx, horizon) = watch::channel(start);
    let wake = Arc::new(Notify::new());
    let handle = TailHandle {
        horizon,
        wake: wake.clone(),
        stats: stats.clone(),
    };
    let task = tokio::spawn(async move {
        let mut cursor = start;
        let mut gap: Option<Gap> = None;
        loop {
            tokio::select! {
                _ = wake.notified() => {}
                _ = tokio::time::sleep(POLL) => {}
            }
            match step(&store, &bus, &stats, &mut cursor, &mut gap).await {
                Ok(()) => {
                    horizon_tx.send_if_modified(|horizon| {
                        let moved = *horizon != cursor;
                        *horizon = cursor;
                        moved
                    });
                }
                Err(error) => {
                    tracing::warn!(%error, "the live tail cannot read the audit; retrying");
                    tokio::time::sleep(Duration::from_secs(1)).await;
                }
            }
        }
    });
    Ok((handle, task))
}

/// Reads what follows the cursor and publishes the part whose order is final.
async fn step(
    store: &Store,
    bus: &EventBus,
    stats: &Mutex<StatsWindow>,
    cursor: &mut i64,
    gap: &mut Option<Gap>,
) -> Result<(), crate::store::StoreError> {
    loop {
        // The snapshot first, then the rows: a transaction that ended before the snapshot has
        // its row visible to the read that follows.
        let snapshot = store.snapshot().await?;
        if let (Some(pending), Some(now)) = (gap.as_mut(), snapshot) {
            // This snapshot is later than the read that first saw the gap.
            pending.xmax.get_or_insert(now.xmax);
        }
        let rows = store.audit_after(*cursor, None, PAGE).await?;
        // Nothing is published before it is on disk.
        if !rows.is_empty() {
            store.settle().await?;
        }
        let full_page = rows.len() == PAGE as usize;
        for row in rows {
            let missing = *cursor + 1;
            if row.id != missing {
                match gap {
                    Some(pending) if pending.id == missing => {
                        let proven = matches!(
                            (snapshot, pending.xmax),
                            (Some(now), Some(xmax)) if now.xmin >= xmax
                        );
                        if !proven && pending.seen.elapsed() < GAP_PATIENCE {
                            return Ok(());
                        }
                        if !proven {
                            tracing::warn!(
                                from = missing,
                                to = row.id - 1,
                                "skipping audit ids not committed within the patience window"
                            );
                        }
                        *gap = None;
                    }
                    _ => {
                        *gap = Some(Gap {
                            id: missing,
                            seen: Instant::now(),
                            xmax: None,
                        });
                        return Ok(());
                    }
                }
            }
            *cursor = row.id;
            let second = chrono::Utc::now().timestamp();
            if let Ok(mut window) = stats.lock() {
                window.record(row.outcome, second);
            }
            bus.publish(Event::Write(Arc::new(row)));
        }
        if !full_page {
            return Ok(());
        }
    }
}
