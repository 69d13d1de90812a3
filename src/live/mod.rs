//! The daemon's live side, shared by the HTTP handlers: the bus, the tail and what is derived
//! from them.

pub mod alerts;
mod bus;
mod feed;
mod incidents;
mod order;
mod stats;
mod tail;
pub mod watch;

pub use bus::EventBus;
pub use feed::{CommitFeed, Taken};

use crate::api::events::{AlertView, DaemonEvent, OverlapChange, OverlapEvent, StatsView};
use crate::domain::duration::saturating_micros;
use crate::domain::{AuditEntry, Holder, OverlapState};
use crate::metrics::{Metrics, WatchedSource};
use crate::store::{Store, StoreError, StoredAlert};
use alerts::{spawn_notifier, watch_alerts, AlertConfig, Evaluator};
use std::collections::{HashMap, VecDeque};
use std::sync::Arc;
use std::time::Duration;
use tail::{spawn_tail, TailHandle, TailSources};
use tokio::sync::broadcast::error::RecvError;

/// Rows fetched from the audit per replay query.
const REPLAY_PAGE: u32 = 500;

/// The live side's handle. Its parts stay private: callers get what they need of them through
/// the methods below, so the bus, the tail and the counters keep one owner.
#[derive(Clone)]
pub struct Live {
    store: Store,
    bus: EventBus,
    tail: TailHandle,
    config: LiveConfig,
    metrics: Metrics,
    /// The databases watched (`serve --watch`).
    watched: watch::Watched,
    /// Set when the daemon stops: live streams end so that graceful shutdown can finish.
    stopping: Arc<tokio::sync::watch::Sender<bool>>,
    subscribers: Arc<std::sync::atomic::AtomicUsize>,
    _tasks: Arc<TaskGuard>,
}

#[derive(Debug, Clone)]
pub struct LiveConfig {
    /// An open overlap closes after this long without a rejected write.
    pub overlap_quiet: Duration,
    /// Live event subscribers at once; more get `503` until one leaves.
    pub max_subscribers: usize,
    pub alerts: Arc<AlertConfig>,
    /// How notifications link back to this daemon.
    pub external_url: String,
    /// Databases whose fence audit to follow (`serve --watch`).
    pub watch: Vec<watch::WatchTarget>,
    /// How long the live tail waits for a read of the audit before it gives that connection up
    /// and reads again (`serve --db-timeout`).
    pub db_timeout: Duration,
}

impl Default for LiveConfig {
    fn default() -> Self {
        Self {
            overlap_quiet: Duration::from_secs(60),
            max_subscribers: 256,
            alerts: Arc::new(AlertConfig::default()),
            external_url: "http://127.0.0.1:7420".into(),
            watch: Vec::new(),
            db_timeout: Duration::from_secs(10),
        }
    }
}

/// How often overlaps are closed and their changes published.
const OVERLAP_WATCH: Duration = Duration::from_millis(500);
/// Changes (overlaps, alert states) are looked for this far behind the newest one seen, for
/// transactions that commit a little after they stamped their change (and for clock skew
/// between daemons); a change read twice is published once.
pub(crate) const CHANGE_MARGIN_US: i64 = 5_000_000;

/// Stops the background tasks when the last handle goes.
struct TaskGuard(Vec<tokio::task::JoinHandle<()>>);

impl Drop for TaskGuard {
    fn drop(&mut self) {
        for task in &self.0 {
            task.abort();
        }
    }
}

impl Live {
    pub async fn start(
        store: Store,
        config: LiveConfig,
        metrics: Metrics,
    ) -> Result<Live, StoreError> {
        Self::start_with(store, EventBus::new(), config, metrics).await
    }

    /// Starts over a given bus (tests use a small one to make subscribers fall behind).
    pub async fn start_with(
        store: Store,
        bus: EventBus,
        config: LiveConfig,
        metrics: Metrics,
    ) -> Result<Live, StoreError> {
        let bus = bus.counting_into(metrics.events_dropped.clone());
        let sources = TailSources {
            feed: metrics.live_rows_from("feed"),
            audit: metrics.live_rows_from("audit"),
        };
        let (tail, tail_task) =
            spawn_tail(store.clone(), bus.clone(), sources, config.db_timeout).await?;
        let (watched, watch_tasks) = watch::spawn_watchers(&config.watch, &store, &bus, &metrics);
        let open = OpenGauges {
            metrics: metrics.clone(),
            sources: watched.names().cloned().collect(),
        };
        open.set(&store).await?;
        let (closed_incidents, measurer_task) =
            incidents::spawn_measurer(store.clone(), metrics.clone());
        let overlap_task = tokio::spawn(watch_overlaps(
            store.clone(),
            bus.clone(),
            config.overlap_quiet,
            open,
            closed_incidents,
        ));
        let (notifier, notifier_task) = spawn_notifier(
            config.alerts.webhooks.clone(),
            config.alerts.alertmanager.clone(),
        );
        // Unique among daemons sharing the database: the process and when it started (the
        // system's time, even under a test clock, which two daemons in one test may share).
        let identity = Holder::parse(&format!(
            "fencewatch-{}-{}",
            std::process::id(),
            chrono::Utc::now().timestamp_micros()
        ))
        .map_err(|e| StoreError::Invariant(e.0))?;
        let evaluator_task = Evaluator {
            store: store.clone(),
            config: config.alerts.clone(),
            identity,
            notifier,
            external_url: config.external_url.clone(),
        }
        .spawn();
        let alert_task = tokio::spawn(watch_alerts(
            store.clone(),
            bus.clone(),
            config.alerts.clone(),
            metrics.alerts_firing.clone(),
        ));
        let mut tasks = vec![
            tail_task,
            overlap_task,
            measurer_task,
            notifier_task,
            evaluator_task,
            alert_task,
        ];
        tasks.extend(watch_tasks);
        Ok(Live {
            store,
            bus,
            tail,
            config,
            metrics,
            watched,
            stopping: Arc::new(tokio::sync::watch::channel(false).0),
            subscribers: Arc::new(std::sync::atomic::AtomicUsize::new(0)),
            _tasks: Arc::new(TaskGuard(tasks)),
        })
    }

    /// A place for one more subscriber, if the cap allows; released when the permit drops.
    pub fn admit(&self) -> Option<SubscriberPermit> {
        use std::sync::atomic::Ordering;
        let admitted = self
            .subscribers
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |now| {
                (now < self.config.max_subscribers).then_some(now + 1)
            })
            .is_ok();
        admitted.then(|| SubscriberPermit(self.subscribers.clone()))
    }

    /// Ends every live stream (they would otherwise hold graceful shutdown open forever).
    pub fn stop_streams(&self) {
        self.stopping.send_replace(true);
    }

    /// Where the service hands over what it commits, so that the tail publishes its own rows
    /// without reading them back.
    pub fn feed(&self) -> Arc<CommitFeed> {
        self.tail.feed.clone()
    }

    /// Every event as the bus carries it, with none of a [`Subscriber`]'s replay: for what
    /// follows the bus inside the process (the demo's alert log, tests of the tail).
    pub fn subscribe(&self) -> tokio::sync::broadcast::Receiver<DaemonEvent> {
        self.bus.subscribe()
    }

    /// The audit id up to which every row has been published (or is known not to exist).
    pub fn horizon(&self) -> tokio::sync::watch::Receiver<i64> {
        self.tail.horizon.clone()
    }

    /// Events skipped by subscribers that fell behind.
    pub fn events_dropped(&self) -> u64 {
        self.bus.dropped()
    }

    /// The daemon's metrics, which the live side counts into (`/metrics` renders them).
    pub fn metrics(&self) -> &Metrics {
        &self.metrics
    }

    /// Every alert rule of this daemon with its instances' states in `stored`.
    pub fn alert_views(&self, stored: &[StoredAlert]) -> Vec<AlertView> {
        alerts::views(&self.config.alerts, stored)
    }

    pub async fn stats_view(&self) -> StatsView {
        let now = self.store.clock().now().timestamp();
        let mut view = match self.tail.stats.lock() {
            Ok(window) => window.view(now),
            Err(poisoned) => poisoned.into_inner().view(now),
        };
        view.events_dropped = self.events_dropped();
        view.open_overlaps = u64::try_from(self.metrics.open_overlaps.get()).unwrap_or(0);
        view.firing_alerts = u64::try_from(self.metrics.alerts_firing.get()).unwrap_or(0);
        view.through_audit_id = *self.tail.horizon.borrow();
        view.sources = self.watched.views(now, &self.metrics);
        view
    }
}

fn gauge_value(count: u64) -> i64 {
    i64::try_from(count).unwrap_or(i64::MAX)
}

/// The open-overlap gauges: this daemon's own and each watched source's.
struct OpenGauges {
    metrics: Metrics,
    sources: Vec<Arc<str>>,
}

impl OpenGauges {
    async fn set(&self, store: &Store) -> Result<(), StoreError> {
        let counts = store.open_overlap_counts().await?;
        let count = |source: Option<&str>| {
            gauge_value(counts.get(&source.map(str::to_owned)).copied().unwrap_or(0))
        };
        self.metrics.open_overlaps.set(count(None));
        for source in &self.sources {
            self.metrics
                .open_overlaps_by_source
                .get_or_create(&WatchedSource(Some(source.clone())))
                .set(count(Some(source)));
        }
        Ok(())
    }
}

/// Closes quiet overlaps and publishes every overlap change, whichever daemon made it (or
/// whichever watched database showed it).
async fn watch_overlaps(
    store: Store,
    bus: EventBus,
    quiet: Duration,
    open: OpenGauges,
    closed_incidents: tokio::sync::mpsc::UnboundedSender<incidents::ClosedIncident>,
) {
    let quiet_us = saturating_micros(quiet);
    let clock = store.clock().clone();
    let mut since = clock.now_us();
    // What was last published of each overlap: (rejected writes, open), and when it changed.
    let mut published: HashMap<i64, ((i64, bool), i64)> = HashMap::new();
    let mut ticker = tokio::time::interval(OVERLAP_WATCH);
    ticker.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        ticker.tick().await;
        let now = clock.now_us();
        let result = async {
            let closed = store
                .close_quiet_overlaps(now.saturating_sub(quiet_us), now)
                .await?;
            // Each incident is measured once, by the daemon whose call closed it.
            for overlap in closed {
                let _ = closed_incidents.send((overlap, now));
            }
            let changed = store
                .overlaps_changed_since(since - CHANGE_MARGIN_US)
                .await?;
            for (overlap, updated) in changed {
                let version = (overlap.rejected_writes, overlap.state == OverlapState::Open);
                let previous = published.get(&overlap.id).map(|(version, _)| *version);
                if previous == Some(version) {
                    continue;
                }
                let change = match (overlap.state, previous) {
                    (OverlapState::Closed, _) => OverlapChange::Closed,
                    (OverlapState::Open, None) if overlap.rejected_writes == 1 => {
                        OverlapChange::Opened
                    }
                    (OverlapState::Open, _) => OverlapChange::Grew,
                };
                let id = overlap.id;
                bus.publish(DaemonEvent::Overlap(Arc::new(OverlapEvent {
                    overlap,
                    change: Some(change),
                })));
                published.insert(id, (version, updated));
                since = since.max(updated);
            }
            published.retain(|_, (_, updated)| *updated >= since - 2 * CHANGE_MARGIN_US);
            open.set(&store).await?;
            Ok::<_, StoreError>(())
        }
        .await;
        if let Err(error) = result {
            tracing::warn!(%error, "cannot watch ownership overlaps; retrying");
        }
    }
}

/// Holds one of the subscriber places while a stream is open.
pub struct SubscriberPermit(Arc<std::sync::atomic::AtomicUsize>);

impl Drop for SubscriberPermit {
    fn drop(&mut self) {
        self.0.fetch_sub(1, std::sync::atomic::Ordering::AcqRel);
    }
}

/// One live subscriber: a replay from the audit where it needs one, then the live stream,
/// with its place kept by write id.
pub struct Subscriber {
    live: Live,
    events: tokio::sync::broadcast::Receiver<DaemonEvent>,
    /// Rows read from the audit, waiting to be sent.
    backlog: VecDeque<AuditEntry>,
    /// The highest write id sent (or skipped as already known to the client).
    last_sent: i64,
    /// Replay from the audit up to here before taking live events again.
    replay_until: i64,
    ticker: tokio::time::Interval,
    stopping: tokio::sync::watch::Receiver<bool>,
}

impl Subscriber {
    /// Starts after `last_event_id`, or at the live edge without one.
    pub fn new(live: Live, last_event_id: Option<i64>) -> Self {
        // Subscribe before reading the horizon: every row past the horizon is then either in
        // the channel or, if the channel overflows, re-read from the audit.
        let events = live.bus.subscribe();
        let horizon = *live.tail.horizon.borrow();
        let last_sent = last_event_id.unwrap_or(horizon);
        let mut ticker = tokio::time::interval(Duration::from_secs(1));
        ticker.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        let stopping = live.stopping.subscribe();
        Self {
            live,
            events,
            backlog: VecDeque::new(),
            last_sent,
            replay_until: horizon,
            ticker,
            stopping,
        }
    }

    /// The next message; `None` when the stream must end (the client should reconnect).
    pub async fn next(&mut self) -> Option<DaemonEvent> {
        loop {
            if *self.stopping.borrow() {
                return None;
            }
            if let Some(row) = self.backlog.pop_front() {
                self.last_sent = row.id;
                return Some(DaemonEvent::Write(Arc::new(row)));
            }
            if self.last_sent < self.replay_until {
                match self
                    .live
                    .store
                    .audit_after(self.last_sent, Some(self.replay_until), REPLAY_PAGE)
                    .await
                {
                    Ok(rows) if rows.is_empty() => self.last_sent = self.replay_until,
                    Ok(rows) => self.backlog.extend(rows),
                    Err(error) => {
                        // End the stream: the client reconnects with its Last-Event-ID.
                        tracing::warn!(%error, "cannot replay the audit to a subscriber");
                        return None;
                    }
                }
                continue;
            }
            tokio::select! {
                received = self.events.recv() => match received {
                    // A watched database's row: its id is that database's, no place in this
                    // stream's order, and it is not replayed (`Last-Event-ID` is ours).
                    Ok(DaemonEvent::Write(row)) if row.source.is_some() => {
                        return Some(DaemonEvent::Write(row));
                    }
                    Ok(DaemonEvent::Write(row)) => {
                        if row.id > self.last_sent {
                            self.last_sent = row.id;
                            return Some(DaemonEvent::Write(row));
                        }
                    }
                    // Overlaps and alerts have no place in the write order: passed on as they come.
                    Ok(event) => return Some(event),
                    Err(RecvError::Lagged(skipped)) => {
                        // Too slow for the channel: count it, then take the writes from the audit.
                        self.live.bus.count_dropped(skipped);
                        self.replay_until = *self.live.tail.horizon.borrow();
                    }
                    Err(RecvError::Closed) => return None,
                },
                _ = self.ticker.tick() => {
                    return Some(DaemonEvent::Stats(Arc::new(self.live.stats_view().await)));
                }
                _ = self.stopping.changed() => return None,
            }
        }
    }
}
