//! `serve --watch [NAME=]URL`: the fence audit of each watched database (the user's own, with
//! `fencewatch fence install`) flows through this daemon's live side. One task per database
//! reads the audit by id every `POLL`, seals SQLite's new rows, records what the rows show
//! (their overlaps, their refusals counted for the alert rules) and how far it got in this
//! daemon's database in one transaction, then publishes each row as a `write` event with its
//! `source`, counts it in `/v1/stats` and `/metrics`, and now and then prunes the fence's
//! expired operation ids.
//!
//! The daemon's own rows are recorded in their write's transaction; a watched database's are
//! recorded when read, which is why they reach `/v1/overlaps` a poll after their commit rather
//! than with it. A watched database that stops answering is retried with backoff and resumed
//! from the stored position; the daemon's readiness does not depend on it.

mod late;

use super::bus::EventBus;
use super::order::FinalOrder;
use super::stats::StatsWindow;
use crate::api::events::{DaemonEvent, SourceStats};
use crate::domain::backoff::doubling;
use crate::domain::clock::SharedClock;
use crate::domain::fence_audit::FenceAuditRow;
use crate::domain::fence_overlaps::{summarize, ScopeOwners};
use crate::domain::source::SourceName;
use crate::metrics::{Metrics, WatchedSource};
use crate::owndb::{OpenOptions, OwnDb, OwnDbError};
use crate::redact::redact_url;
use crate::store::{Store, StoreError, WatchAdvance};
use late::Late;
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, AtomicI64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// How often a watched audit is read.
pub const POLL: Duration = Duration::from_millis(100);
/// Rows read per query.
const PAGE: u32 = 1000;
/// How often expired operation ids are pruned in the watched database and old counts here.
const PRUNE_EVERY: Duration = Duration::from_secs(60);
/// How long the counts the alert rules read are kept.
const COUNTS_KEPT_US: i64 = 24 * 3600 * 1_000_000;
/// Rows older than this (by their own time) count in the totals only, not in the rates: a first
/// watch takes in the whole audit, which must not read as a burst now.
const RATE_HORIZON_S: i64 = 300;

/// A database to watch: its name and URL. Shown only with the URL's password hidden.
#[derive(Clone)]
pub struct WatchTarget {
    pub name: SourceName,
    pub url: String,
}

impl std::fmt::Debug for WatchTarget {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WatchTarget")
            .field("name", &self.name.as_str())
            .field("url", &redact_url(&self.url))
            .finish()
    }
}

/// What the live side shows of one watched database.
pub struct WatchedState {
    pub name: Arc<str>,
    stats: Mutex<StatsWindow>,
    through_id: AtomicI64,
    up: AtomicBool,
}

/// Every watched database's state, for `/v1/stats`.
#[derive(Clone, Default)]
pub struct Watched(Arc<Vec<Arc<WatchedState>>>);

impl Watched {
    pub fn names(&self) -> impl Iterator<Item = &Arc<str>> {
        self.0.iter().map(|state| &state.name)
    }

    /// Each source's figures at second `now`.
    pub fn views(&self, now: i64, metrics: &Metrics) -> BTreeMap<String, SourceStats> {
        self.0
            .iter()
            .map(|state| {
                let view = match state.stats.lock() {
                    Ok(window) => window.view(now),
                    Err(poisoned) => poisoned.into_inner().view(now),
                };
                let open = metrics
                    .open_overlaps_by_source
                    .get_or_create(&WatchedSource(Some(state.name.clone())))
                    .get();
                let stats = SourceStats {
                    totals: view.totals,
                    rates: view.rates,
                    open_overlaps: u64::try_from(open).unwrap_or(0),
                    through_id: state.through_id.load(Ordering::Acquire),
                    up: state.up.load(Ordering::Acquire),
                };
                (state.name.to_string(), stats)
            })
            .collect()
    }
}

/// Starts one watcher per target.
pub fn spawn_watchers(
    targets: &[WatchTarget],
    store: &Store,
    bus: &EventBus,
    metrics: &Metrics,
) -> (Watched, Vec<tokio::task::JoinHandle<()>>) {
    let mut states = Vec::with_capacity(targets.len());
    let mut tasks = Vec::with_capacity(targets.len());
    for target in targets {
        let name: Arc<str> = Arc::from(target.name.as_str());
        metrics.watch(&name);
        metrics.set_watch_up(&name, false);
        let state = Arc::new(WatchedState {
            name: name.clone(),
            stats: Mutex::new(StatsWindow::new([])),
            through_id: AtomicI64::new(0),
            up: AtomicBool::new(false),
        });
        states.push(state.clone());
        let watcher = Watcher {
            url: target.url.clone(),
            shown_url: redact_url(&target.url),
            state,
            store: store.clone(),
            clock: store.clock().clone(),
            bus: bus.clone(),
            metrics: metrics.clone(),
        };
        tasks.push(tokio::spawn(watcher.run()));
    }
    (Watched(Arc::new(states)), tasks)
}

/// Why following a watched database stopped.
#[derive(Debug, thiserror::Error)]
enum WatchError {
    #[error(transparent)]
    Watched(#[from] OwnDbError),
    #[error("no fence is installed there (fencewatch fence install --database URL)")]
    NotInstalled,
}

/// How far a watcher got, between polls.
struct Progress {
    /// What this daemon's database says (`None`: never watched).
    position: Option<i64>,
    /// The id after which the next read starts: the position, once a read is taken in.
    cursor: i64,
    order: FinalOrder,
    late: Late,
    owners: ScopeOwners,
    /// Whether sealing failed last time (logged once until it works again).
    seal_failing: bool,
    /// Whether chaining pending refusals failed (logged once).
    drain_failing: bool,
}

/// One read: the final rows (ids looked for again first), the id they take the cursor to, and
/// whether more may follow at once.
struct Read {
    rows: Vec<FenceAuditRow>,
    to: i64,
    more: bool,
}

struct Watcher {
    url: String,
    shown_url: String,
    state: Arc<WatchedState>,
    store: Store,
    clock: SharedClock,
    bus: EventBus,
    metrics: Metrics,
}

impl Watcher {
    fn name(&self) -> &str {
        &self.state.name
    }

    /// Follows the database for as long as the daemon runs, reconnecting with backoff.
    async fn run(self) {
        let mut failures = 0u32;
        loop {
            let error = self.follow(&mut failures).await;
            self.set_up(false);
            failures = failures.saturating_add(1);
            let retry_in = doubling(
                failures,
                Duration::from_millis(200),
                Duration::from_secs(10),
            );
            tracing::warn!(
                source = self.name(),
                database = %self.shown_url,
                %error,
                ?retry_in,
                "cannot read the watched database's fence audit; retrying"
            );
            tokio::time::sleep(retry_in).await;
        }
    }

    fn set_up(&self, up: bool) {
        let was = self.state.up.swap(up, Ordering::AcqRel);
        self.metrics.set_watch_up(self.name(), up);
        if up && !was {
            tracing::info!(source = self.name(), database = %self.shown_url, "watching");
        }
    }

    /// Opens the database and follows its audit until it fails.
    async fn follow(&self, failures: &mut u32) -> WatchError {
        let options = OpenOptions {
            schema: None,
            max_connections: 2,
            acquire_timeout: Duration::from_secs(5),
        };
        let db = match OwnDb::open(&self.url, &options).await {
            Ok(db) => db,
            Err(error) => return error.into(),
        };
        let error = match db.installed_version().await {
            Ok(Some(_)) => self.follow_open(&db, failures).await,
            Ok(None) => WatchError::NotInstalled,
            Err(error) => error.into(),
        };
        db.close().await;
        error
    }

    /// Where this daemon's database says the source stands; retried while it cannot answer.
    async fn stored_position(&self) -> Option<i64> {
        loop {
            match self.store.watch_position(self.name()).await {
                Ok(position) => return position,
                Err(error) => {
                    tracing::warn!(source = self.name(), %error, "cannot read the watch position; retrying");
                    tokio::time::sleep(Duration::from_secs(1)).await;
                }
            }
        }
    }

    async fn follow_open(&self, db: &OwnDb, failures: &mut u32) -> WatchError {
        let position = self.stored_position().await;
        let mut progress = Progress {
            position,
            cursor: position.unwrap_or(0),
            order: FinalOrder::default(),
            late: Late::default(),
            owners: ScopeOwners::default(),
            seal_failing: false,
            drain_failing: false,
        };
        self.state
            .through_id
            .store(progress.cursor, Ordering::Release);
        // Ids below the stored position that are missing may be a transaction's still running
        // (read past before a restart, whose list of ids to look for again was lost with it).
        match db.missing_ids_before(progress.cursor, late::LATE_MAX).await {
            Ok(Some((ids, snapshot))) => self.look_again(&mut progress, ids, snapshot.xmax),
            Ok(None) => {}
            Err(error) => return error.into(),
        }
        let mut pruned: Option<Instant> = None;
        let mut more = false;
        loop {
            if !more {
                tokio::time::sleep(POLL).await;
            }
            let read = match self.read(db, &mut progress).await {
                Ok(read) => read,
                Err(error) => return error.into(),
            };
            *failures = 0;
            more = read.more;
            if !read.rows.is_empty() {
                more |= self.take_in(&mut progress, read).await;
            }
            if pruned.is_none_or(|at| at.elapsed() >= PRUNE_EVERY) {
                pruned = Some(Instant::now());
                self.prune(db).await;
            }
        }
    }

    /// Reads what follows the cursor (sealing SQLite's new rows) and the ids looked for again,
    /// and keeps what is final.
    async fn read(&self, db: &OwnDb, progress: &mut Progress) -> Result<Read, OwnDbError> {
        // Refusals of writers that rolled back, recorded apart, into the audit first. A fence
        // older than v3 has none; a watcher without the grant is told so once.
        if let Err(error) = db.drain_pending().await {
            if !progress.drain_failing {
                progress.drain_failing = true;
                tracing::warn!(source = self.name(), %error, "cannot chain the watched fence's pending refusals (grant EXECUTE on fencewatch.drain_pending() to the watcher)");
            }
        }
        // The snapshot first, then the rows: a transaction that ended before the snapshot has
        // its row visible to the read that follows.
        let snapshot = db.snapshot().await?;
        let mut rows = db.live_rows_after(progress.cursor, PAGE).await?;
        self.set_up(true);
        if rows.iter().any(|row| row.hash.is_none()) {
            match db.seal().await {
                Ok(_) => progress.seal_failing = false,
                Err(error) if !progress.seal_failing => {
                    progress.seal_failing = true;
                    tracing::warn!(source = self.name(), %error, "cannot seal the watched audit's new rows");
                }
                Err(_) => {}
            }
        }
        let ids: Vec<i64> = rows.iter().map(|row| row.id).collect();
        let now = Instant::now();
        let judged = progress
            .order
            .final_prefix(progress.cursor, &ids, snapshot, now);
        if let Some(snapshot) = snapshot {
            for skipped in judged.skipped {
                // This read's snapshot is later than the read that first saw them missing.
                self.look_again(progress, skipped, snapshot.xmax);
            }
        }
        let taken = judged.taken;
        // More may follow at once, unless the page stopped at a gap that must wait.
        let more = rows.len() == PAGE as usize && taken == rows.len();
        rows.truncate(taken);
        let to = rows.last().map_or(progress.cursor, |row| row.id);
        if let (false, Some(snapshot)) = (progress.late.is_empty(), snapshot) {
            let found = db.live_rows_by_id(&progress.late.due()).await?;
            let found_ids: Vec<i64> = found.iter().map(|row| row.id).collect();
            progress.late.settle(snapshot, &found_ids);
            rows.splice(0..0, found);
        }
        Ok(Read { rows, to, more })
    }

    /// Ids read past unproven, looked for again until found or proven never to come.
    fn look_again(&self, progress: &mut Progress, ids: impl IntoIterator<Item = i64>, xmax: i64) {
        let given_up = progress.late.add(ids, xmax);
        if given_up > 0 {
            tracing::warn!(
                source = self.name(),
                given_up,
                "more audit ids than a watcher looks for again are uncommitted; the oldest are \
                 given up (their rows, if they commit, are not taken in)"
            );
        }
    }

    /// Records a read in this daemon's database and publishes it; whether to read again at once.
    async fn take_in(&self, progress: &mut Progress, read: Read) -> bool {
        match self
            .record(progress.position, read.to, &read.rows, &mut progress.owners)
            .await
        {
            Ok(WatchAdvance::Recorded) => {
                for row in &read.rows {
                    progress.late.found(row.id);
                }
                progress.position = Some(read.to);
                progress.cursor = read.to;
                self.publish(&read.rows);
                self.state.through_id.store(read.to, Ordering::Release);
                false
            }
            Ok(WatchAdvance::Moved { position }) => {
                tracing::info!(
                    source = self.name(),
                    position,
                    "another daemon took this database's rows in first; continuing after them"
                );
                progress.position = Some(position);
                progress.cursor = position;
                progress.order.reset();
                true
            }
            Err(error) => {
                tracing::warn!(source = self.name(), %error, "cannot record the watched rows; retrying");
                tokio::time::sleep(Duration::from_secs(1)).await;
                false
            }
        }
    }

    /// Records what `rows` show, and the move to `to`, in this daemon's database.
    async fn record(
        &self,
        from: Option<i64>,
        to: i64,
        rows: &[FenceAuditRow],
        owners: &mut ScopeOwners,
    ) -> Result<WatchAdvance, StoreError> {
        let summary = summarize(rows, owners);
        self.store
            .record_watched(
                self.name(),
                from,
                to,
                &summary.sightings,
                &summary.counts,
                self.clock.now_us(),
            )
            .await
    }

    /// Each row as a `write` event with its source, counted in the stats and metrics.
    fn publish(&self, rows: &[FenceAuditRow]) {
        let now = self.clock.now().timestamp();
        for row in rows {
            let Some(entry) = row.to_audit_entry(Some(self.name())) else {
                continue;
            };
            self.metrics.count_watched(&self.state.name, entry.outcome);
            if let Ok(mut window) = self.state.stats.lock() {
                if now - row.at.timestamp() < RATE_HORIZON_S {
                    window.record(entry.outcome, now);
                } else {
                    window.record_total(entry.outcome);
                }
            }
            self.bus.publish(DaemonEvent::Write(Arc::new(entry)));
        }
    }

    /// Expired operation ids of the watched fence, and counts here no rule looks at any more.
    /// Failures are logged: nothing depends on them but the tables' size.
    async fn prune(&self, db: &OwnDb) {
        if let Err(error) = db.prune_operations().await {
            tracing::warn!(source = self.name(), %error, "cannot prune the watched fence's expired operation ids");
        }
        let before = self.clock.now_us().saturating_sub(COUNTS_KEPT_US);
        if let Err(error) = self.store.prune_watched_counts(before).await {
            tracing::warn!(%error, "cannot prune the counts of watched rows");
        }
    }
}
