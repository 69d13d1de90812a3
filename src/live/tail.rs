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
//!
//! This daemon's own rows need no reading: group commit hands them over once durable
//! (`CommitFeed`), and the tail publishes them straight away when they continue its cursor.
//! The audit is read only for what the feed lacks: at the poll, and when the feed has held
//! rows beyond a missing id for longer than a short grace.

use super::bus::{Event, EventBus};
use super::feed::CommitFeed;
use super::stats::StatsWindow;
use crate::domain::clock::SharedClock;
use crate::domain::AuditEntry;
use crate::store::Store;
use prometheus_client::metrics::counter::Counter;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tokio::sync::watch;

/// How often the tail reads the audit when the feed has no gap to explain (rows committed by
/// other daemons, or outside group commit and not nudged).
const POLL: Duration = Duration::from_millis(100);
/// How long a gap in the feed may wait for its missing rows before the audit is read: rows of
/// consecutive batches can arrive out of order, a few microseconds apart.
const FEED_GRACE: Duration = Duration::from_millis(5);
/// Rows read per query.
const PAGE: u32 = 1000;
/// A gap older than this is skipped even if not provably final: on SQLite (where gaps do not
/// occur) and on PostgreSQL when a foreign long transaction holds the snapshot xmin back.
const GAP_PATIENCE: Duration = Duration::from_secs(30);

/// The tail's handle: its progress and the means to feed and wake it.
#[derive(Clone)]
pub struct TailHandle {
    /// The audit id up to which every row has been published (or is known not to exist).
    pub horizon: watch::Receiver<i64>,
    /// Where writers hand over what they committed, so local writes appear at once.
    pub feed: Arc<CommitFeed>,
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
    sources: TailSources,
) -> Result<(TailHandle, tokio::task::JoinHandle<()>), crate::store::StoreError> {
    let start = store.max_audit_id().await?;
    let totals = store.outcome_totals(start).await?;
    let stats = Arc::new(Mutex::new(StatsWindow::new(totals)));
    let (horizon_tx, horizon) = watch::channel(start);
    let feed = Arc::new(CommitFeed::new());
    let handle = TailHandle {
        horizon,
        feed: feed.clone(),
        stats: stats.clone(),
    };
    let task = tokio::spawn(async move {
        let publisher = Publisher {
            bus,
            stats,
            sources,
            clock: store.clock().clone(),
        };
        let mut cursor = start;
        let mut gap: Option<Gap> = None;
        let mut last_read = Instant::now();
        // Since when the feed has held rows beyond a missing one.
        let mut feed_gap_since: Option<Instant> = None;
        loop {
            let read_due = match feed_gap_since {
                Some(since) if !audit_waits_on(&gap, cursor) => {
                    (since + FEED_GRACE).min(last_read + POLL)
                }
                _ => last_read + POLL,
            };
            tokio::select! {
                _ = feed.woken() => {}
                _ = tokio::time::sleep_until(read_due.into()) => {}
            }
            let feed_gap = publisher.publish_fed(&feed, &mut cursor);
            let now = Instant::now();
            feed_gap_since = match (feed_gap, feed_gap_since) {
                (true, since) => Some(since.unwrap_or(now)),
                (false, _) => None,
            };
            let grace_over = !audit_waits_on(&gap, cursor)
                && feed_gap_since.is_some_and(|since| now >= since + FEED_GRACE);
            if grace_over || now >= last_read + POLL {
                last_read = now;
                match publisher.publish_read(&store, &mut cursor, &mut gap).await {
                    // A gap still there waits out another grace, not a busy loop.
                    Ok(()) => {
                        feed_gap_since = publisher.publish_fed(&feed, &mut cursor).then_some(now);
                    }
                    Err(error) => {
                        tracing::warn!(%error, "the live tail cannot read the audit; retrying");
                        tokio::time::sleep(Duration::from_secs(1)).await;
                    }
                }
            }
            horizon_tx.send_if_modified(|horizon| {
                let moved = *horizon != cursor;
                *horizon = cursor;
                moved
            });
        }
    });
    Ok((handle, task))
}

/// Whether the next id is a gap the audit is already waiting on (a foreign transaction not yet
/// ended): it is looked at again at the poll, as without the feed, not after the feed's grace.
fn audit_waits_on(gap: &Option<Gap>, cursor: i64) -> bool {
    gap.as_ref().is_some_and(|pending| pending.id == cursor + 1)
}

/// Counts of published rows by where the tail took them from (exported metrics).
#[derive(Clone, Default)]
pub struct TailSources {
    pub feed: Counter,
    pub audit: Counter,
}

/// Where published rows go: the bus and the rolling statistics.
struct Publisher {
    bus: EventBus,
    stats: Arc<Mutex<StatsWindow>>,
    sources: TailSources,
    clock: SharedClock,
}

impl Publisher {
    fn publish(&self, row: Arc<AuditEntry>, cursor: &mut i64) {
        *cursor = row.id;
        let second = self.clock.now().timestamp();
        if let Ok(mut window) = self.stats.lock() {
            window.record(row.outcome, second);
        }
        self.bus.publish(Event::Write(row));
    }

    /// Publishes what the feed holds that continues the cursor; whether a gap remains.
    fn publish_fed(&self, feed: &CommitFeed, cursor: &mut i64) -> bool {
        let taken = feed.take_after(*cursor);
        self.sources.feed.inc_by(taken.rows.len() as u64);
        for row in taken.rows {
            self.publish(row, cursor);
        }
        // Past ids known never to exist, too.
        *cursor = taken.through.max(*cursor);
        taken.gap
    }

    /// Reads what follows the cursor from the audit and publishes the part whose order is
    /// final.
    async fn publish_read(
        &self,
        store: &Store,
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
                self.sources.audit.inc();
                self.publish(Arc::new(row), cursor);
            }
            if !full_page {
                return Ok(());
            }
        }
    }
}
