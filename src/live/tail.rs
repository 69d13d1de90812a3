//! The live tail: follows the audit in id order and publishes each row once every lower id is
//! final, so a subscriber that resumes from an id misses nothing, on either backend and with
//! several daemons writing to one PostgreSQL database.
//!
//! Ids are taken from a sequence, so on PostgreSQL a row can commit after a row with a higher
//! id; which rows are final is `live/order.rs`'s judgement.
//!
//! This daemon's own rows need no reading: group commit hands them over once durable
//! (`CommitFeed`), and the tail publishes them straight away when they continue its cursor.
//! The audit is read only for what the feed lacks: at the poll, and when the feed has held
//! rows beyond a missing id for longer than a short grace.

use super::bus::EventBus;
use super::feed::CommitFeed;
use super::order::FinalOrder;
use super::stats::StatsWindow;
use crate::api::events::DaemonEvent;
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

/// The tail's handle: its progress and the means to feed and wake it.
#[derive(Clone)]
pub struct TailHandle {
    /// The audit id up to which every row has been published (or is known not to exist).
    pub horizon: watch::Receiver<i64>,
    /// Where writers hand over what they committed, so local writes appear at once.
    pub feed: Arc<CommitFeed>,
    pub stats: Arc<Mutex<StatsWindow>>,
}

/// Starts the tail from the current end of the audit.
pub async fn spawn_tail(
    store: Store,
    bus: EventBus,
    sources: TailSources,
    db_timeout: Duration,
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
        let mut order = FinalOrder::default();
        let mut last_read = Instant::now();
        // Since when the feed has held rows beyond a missing one.
        let mut feed_gap_since: Option<Instant> = None;
        loop {
            let read_due = match feed_gap_since {
                Some(since) if !order.waits_on(cursor + 1) => {
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
            let grace_over = !order.waits_on(cursor + 1)
                && feed_gap_since.is_some_and(|since| now >= since + FEED_GRACE);
            if grace_over || now >= last_read + POLL {
                last_read = now;
                // Bounded: a connection that stopped answering without closing (a stalled
                // network) would hold the stream up until TCP gives up; given up, it is
                // dropped and the next read takes another.
                let read = publisher.publish_read(&store, &mut cursor, &mut order);
                match crate::store::within(db_timeout, read).await {
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
        self.bus.publish(DaemonEvent::Write(row));
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
        order: &mut FinalOrder,
    ) -> Result<(), crate::store::StoreError> {
        loop {
            // The snapshot first, then the rows: a transaction that ended before the snapshot has
            // its row visible to the read that follows.
            let snapshot = store.snapshot().await?;
            let rows = store.audit_after(*cursor, None, PAGE).await?;
            // Nothing is published before it is on disk.
            if !rows.is_empty() {
                store.settle().await?;
            }
            let ids: Vec<i64> = rows.iter().map(|row| row.id).collect();
            let judged = order.final_prefix(*cursor, &ids, snapshot, Instant::now());
            for skipped in &judged.skipped {
                tracing::warn!(
                    from = skipped.start,
                    to = skipped.end - 1,
                    "skipping audit ids not committed within the patience window"
                );
            }
            let more = rows.len() == PAGE as usize && judged.taken == rows.len();
            for row in rows.into_iter().take(judged.taken) {
                self.sources.audit.inc();
                self.publish(Arc::new(row), cursor);
            }
            if !more {
                return Ok(());
            }
        }
    }
}
