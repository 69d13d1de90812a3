//! The bounded bus the audit tail publishes to and every live subscriber reads: a subscriber
//! that falls behind loses its place rather than slowing the tail, and nothing here is on the
//! write path.

use crate::api::events::DaemonEvent;
use prometheus_client::metrics::counter::Counter;
use tokio::sync::broadcast;

/// A bounded broadcast: a subscriber that falls behind loses its place (and refills from the
/// audit) instead of slowing anyone down. What was skipped is counted.
#[derive(Debug, Clone)]
pub struct EventBus {
    sender: broadcast::Sender<DaemonEvent>,
    dropped: Counter,
}

impl EventBus {
    pub const CAPACITY: usize = 4096;

    pub fn new() -> Self {
        Self::with_capacity(Self::CAPACITY)
    }

    pub fn with_capacity(capacity: usize) -> Self {
        let (sender, _) = broadcast::channel(capacity.max(1));
        Self {
            sender,
            dropped: Counter::default(),
        }
    }

    /// Counts what subscribers skip in `dropped` (the exported metric).
    pub fn counting_into(mut self, dropped: Counter) -> Self {
        self.dropped = dropped;
        self
    }

    pub fn publish(&self, event: DaemonEvent) {
        // No subscriber is not an error: the event is in the audit anyway.
        let _ = self.sender.send(event);
    }

    pub fn subscribe(&self) -> broadcast::Receiver<DaemonEvent> {
        self.sender.subscribe()
    }

    /// Records that a subscriber fell behind by `count` events.
    pub fn count_dropped(&self, count: u64) {
        self.dropped.inc_by(count);
    }

    pub fn dropped(&self) -> u64 {
        self.dropped.get()
    }
}

impl Default for EventBus {
    fn default() -> Self {
        Self::new()
    }
}
