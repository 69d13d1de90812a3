//! Requests refused before the fence, counted in memory (`domain::refusal`) and written as
//! aggregated rows every `REFUSAL_FLUSH_EVERY`, by a task of their own: a refusal costs a map
//! update under a short lock, never a transaction, a row lock or a row of its own. The rows are
//! bounded per interval (`domain::refusal::MAX_NAMED_REFUSAL_ROWS`) and kept
//! `REFUSAL_RETENTION`, whatever the audit's retention (`spawn_pruner`).

use crate::domain::duration::saturating_micros;
use crate::domain::refusal::{
    RefusalBudget, RefusalCount, RefusalReason, RefusalSample, RefusalSource, RefusalTally, Spend,
};
use crate::store::{Store, StoreError};
use std::net::IpAddr;
use std::sync::{Arc, Mutex, Weak};
use std::time::Duration;

/// The interval of one row: refusals of one source and reason within it add up in one row.
pub const REFUSAL_INTERVAL: Duration = Duration::from_secs(60);
/// How long refusals are counted in memory before they are added to their rows.
pub const REFUSAL_FLUSH_EVERY: Duration = Duration::from_secs(10);
/// How often rows past `REFUSAL_RETENTION` are deleted (and once at start).
const REFUSAL_PRUNE_EVERY: Duration = Duration::from_secs(10 * 60);
/// How long refusal rows are kept, whatever the audit's retention: they are a record of
/// attacks and mistakes, not of writes.
pub const REFUSAL_RETENTION: Duration = Duration::from_secs(72 * 60 * 60);
/// Sources (key names or addresses) counted apart in an interval; more share one row.
pub const MAX_REFUSAL_SOURCES: usize = 4096;
/// Refusals an address may have at once, and how many more it gets each second: enough for a
/// client with a mistyped key to see its 401s, not for a flood to.
pub const REFUSAL_BURST: u32 = 100;
pub const REFUSALS_PER_SECOND: u32 = 20;
/// Addresses whose budget is kept apart; more share one.
pub const MAX_BUDGETED_ADDRESSES: usize = 4096;

struct Counts {
    tally: RefusalTally,
    budget: RefusalBudget,
}

/// The daemon's refusals since they were last written, and each address's budget.
pub struct RefusalLedger {
    counts: Mutex<Counts>,
    store: Store,
}

/// One request refused before the fence.
pub struct Refusal {
    pub source: RefusalSource,
    /// The client's address, which the budget charges; `None` when not known.
    pub address: Option<IpAddr>,
    pub reason: RefusalReason,
}

impl RefusalLedger {
    pub fn new(store: Store) -> Self {
        Self {
            counts: Mutex::new(Counts {
                tally: RefusalTally::new(REFUSAL_INTERVAL, MAX_REFUSAL_SOURCES),
                budget: RefusalBudget::new(
                    REFUSAL_BURST,
                    REFUSALS_PER_SECOND,
                    MAX_BUDGETED_ADDRESSES,
                ),
            }),
            store,
        }
    }

    /// Counts `refusal` and says whether it was within its address's budget; over it, it is
    /// counted as `too-many-requests`. A refusal naming a recognised key's caller is counted
    /// but never charged: whoever holds a valid key is never limited here.
    pub fn count(
        &self,
        refusal: Refusal,
        sample: impl FnOnce() -> RefusalSample,
    ) -> (Spend, RefusalReason) {
        let now_us = self.store.clock().now_us();
        let mut counts = self
            .counts
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        let spend = match refusal.source {
            RefusalSource::Caller(_) => Spend::Within,
            _ => counts.budget.spend(refusal.address, now_us),
        };
        let reason = match spend {
            Spend::Within => refusal.reason,
            Spend::Exhausted { .. } => RefusalReason::TooManyRequests,
        };
        counts.tally.count(now_us, refusal.source, reason, sample);
        (spend, reason)
    }

    /// Writes what was counted since the last flush, waiting at most `wait`; on failure, keeps
    /// it for the next one.
    pub async fn flush(&self, wait: Duration) -> Result<usize, StoreError> {
        let drained = self.lock().tally.drain();
        if drained.is_empty() {
            return Ok(0);
        }
        match crate::store::within(wait, self.store.record_refusals(&drained)).await {
            Ok(()) => Ok(drained.len()),
            Err(error) => {
                self.restore(drained);
                Err(error)
            }
        }
    }

    fn restore(&self, counts: Vec<RefusalCount>) {
        self.lock().tally.restore(counts);
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Counts> {
        self.counts
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Writes the counts every `REFUSAL_FLUSH_EVERY`, each flush bounded by `wait`, until the
    /// ledger is dropped.
    pub fn spawn_flusher(ledger: &Arc<Self>, wait: Duration) -> tokio::task::JoinHandle<()> {
        let ledger: Weak<Self> = Arc::downgrade(ledger);
        tokio::spawn(async move {
            let mut ticker = tokio::time::interval(REFUSAL_FLUSH_EVERY);
            ticker.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            ticker.tick().await;
            loop {
                ticker.tick().await;
                let Some(ledger) = ledger.upgrade() else {
                    return;
                };
                match ledger.flush(wait).await {
                    Ok(0) => {}
                    Ok(rows) => tracing::debug!(rows, "wrote the refusals of an interval"),
                    Err(error) => {
                        tracing::warn!(%error, "failed to write refusals; kept for the next try")
                    }
                }
            }
        })
    }
}

/// Deletes refusal rows older than `REFUSAL_RETENTION` at once and every
/// `REFUSAL_PRUNE_EVERY` after, by the database's clock, until aborted.
pub fn spawn_pruner(store: Store) -> tokio::task::JoinHandle<()> {
    tokio::spawn(async move {
        let retention_us = saturating_micros(REFUSAL_RETENTION);
        loop {
            let pruned = match store.retention_clock_us().await {
                Ok(now_us) => {
                    store
                        .prune_refusals(now_us.saturating_sub(retention_us))
                        .await
                }
                Err(error) => Err(error),
            };
            match pruned {
                Ok(0) => {}
                Ok(rows) => tracing::debug!(rows, "pruned refusal rows past their retention"),
                Err(error) => tracing::warn!(%error, "failed to prune refusal rows"),
            }
            tokio::time::sleep(REFUSAL_PRUNE_EVERY).await;
        }
    })
}
