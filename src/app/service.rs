//! The use cases, between the HTTP edge and the store: what the daemon does, each bounded by
//! the database timeout, counted, and published to the live side once committed.

use crate::app::group_commit::GroupCommit;
use crate::app::refusals::{Refusal, RefusalLedger};
use crate::authority::{Authorities, AuthorityError};
use crate::domain::authority::ExternalLock;
use crate::domain::lease_history::LeaseEvent;
use crate::domain::refusal::{RefusalSample, Spend};
use crate::domain::{
    AuditEntry, FencedWrite, FencingToken, Holder, LeaseName, LeasePolicy, Overlap, RefusedAttempt,
    Reset, ResetDone, ResourceKey, Ttl, WriteResult,
};
use crate::live::CommitFeed;
use crate::metrics::Metrics;
use crate::store::{
    AcquireResult, AuditQuery, LeaseHistoryQuery, LeaseState, OverlapQuery, ReleaseResult,
    RenewResult, Store, StoreError, StoredAlert, StoredValue,
};
use std::sync::Arc;
use std::time::{Duration, Instant};

mod checked;

pub use checked::WriteError;

#[derive(Debug, Clone)]
pub struct Limits {
    /// The largest value a write may carry.
    pub max_value_bytes: usize,
    /// How writes that name a lease are judged.
    pub leases: LeasePolicy,
    /// How long a client may take to send a request's body, from its headers.
    pub body_read_timeout: Duration,
    /// How long a request waits for the database before it is answered 503.
    pub db_timeout: Duration,
}

impl Default for Limits {
    fn default() -> Self {
        Self {
            max_value_bytes: 1024 * 1024,
            leases: LeasePolicy::default(),
            body_read_timeout: Duration::from_secs(10),
            db_timeout: crate::store::DEFAULT_DB_TIMEOUT,
        }
    }
}

/// What `/readyz` answers: ready, or which dependency failed or kept silent.
#[derive(Debug)]
pub enum Readiness {
    Ready,
    DatabaseFailed(StoreError),
    DatabaseSilent(Duration),
    AuthorityFailed(AuthorityError),
    AuthoritySilent(Duration),
}

#[derive(Clone)]
pub struct FenceService {
    store: Store,
    /// Where fenced writes queue to be committed in batches.
    commits: GroupCommit,
    limits: Limits,
    /// Where audit rows go once durable, so the live tail publishes them at once.
    feed: Option<Arc<CommitFeed>>,
    metrics: Metrics,
    /// External lock services writes may name as their authority (`serve --etcd`).
    authorities: Arc<Authorities>,
    /// Requests refused before the fence, counted until their interval's rows are written.
    refusals: Arc<RefusalLedger>,
}

/// What a service is wired to besides its store, all there before it starts.
#[derive(Default)]
pub struct Wiring {
    /// Where every audit row it commits goes once durable (group commit's batches whole, before
    /// their writers are answered): the live side's feed.
    pub feed: Option<Arc<CommitFeed>>,
    /// Where it counts.
    pub metrics: Metrics,
    /// External lock services writes may name (`serve --etcd`, `--zookeeper`).
    pub authorities: Authorities,
}

impl FenceService {
    /// Starts the group-commit workers and the task that writes refusals, so it must run on a
    /// tokio runtime; what they publish to and count into is given, never patched in later.
    pub fn start(store: Store, limits: Limits, wiring: Wiring) -> Self {
        let Wiring {
            feed,
            metrics,
            authorities,
        } = wiring;
        let refusals = Arc::new(RefusalLedger::new(store.clone()));
        RefusalLedger::spawn_flusher(&refusals, limits.db_timeout);
        Self {
            commits: GroupCommit::start(
                store.clone(),
                limits.leases,
                limits.db_timeout,
                feed.clone(),
            ),
            store,
            limits,
            feed,
            metrics,
            authorities: Arc::new(authorities),
            refusals,
        }
    }

    /// A service publishing to nothing, counting into metrics of its own, with no external
    /// lock service: for tools and tests that drive the fence without the live side.
    pub fn new(store: Store, limits: Limits) -> Self {
        Self::start(store, limits, Wiring::default())
    }

    pub fn limits(&self) -> &Limits {
        &self.limits
    }

    pub fn store(&self) -> &Store {
        &self.store
    }

    /// Whether the database, and each lock service writes may name, answers within `wait`.
    pub async fn readiness(&self, wait: Duration) -> Readiness {
        match tokio::time::timeout(wait, self.store.ping()).await {
            Err(_) => return Readiness::DatabaseSilent(wait),
            Ok(Err(error)) => return Readiness::DatabaseFailed(error),
            Ok(Ok(())) => {}
        }
        match tokio::time::timeout(wait, self.authorities.ready()).await {
            Err(_) => Readiness::AuthoritySilent(wait),
            Ok(Err(error)) => Readiness::AuthorityFailed(error),
            Ok(Ok(())) => Readiness::Ready,
        }
    }

    /// Waits until everything a read may have seen is durable (`Store::settle`).
    pub async fn settle(&self) -> Result<(), StoreError> {
        self.bounded(self.store.settle()).await
    }

    pub async fn overlaps(&self, query: &OverlapQuery) -> Result<Vec<Overlap>, StoreError> {
        self.bounded(self.store.overlaps(query)).await
    }

    /// The report of overlap `id` (`GET /v1/overlaps/{id}/report`); `None` if there is none.
    pub async fn incident_report(
        &self,
        id: i64,
    ) -> Result<Option<crate::domain::incident::IncidentReport>, StoreError> {
        let now = self.store.clock().now();
        self.bounded(crate::app::incident::report(&self.store, id, now))
            .await
    }

    pub async fn alert_states(&self) -> Result<Vec<StoredAlert>, StoreError> {
        self.bounded(self.store.alert_states()).await
    }

    /// The size of SQLite's write-ahead log; `None` on PostgreSQL.
    pub async fn wal_bytes(&self) -> Option<std::io::Result<u64>> {
        self.store.wal_bytes().await
    }

    /// Waits for `operation` at most `db_timeout`. A database that stops answering without
    /// closing anything (a stalled network, a frozen server) would otherwise hold the request
    /// until TCP gives up, minutes later. The operation is abandoned, not undone: a write may
    /// still commit, which is why its 503 says the outcome is unknown.
    async fn bounded<T>(
        &self,
        operation: impl std::future::Future<Output = Result<T, StoreError>>,
    ) -> Result<T, StoreError> {
        crate::store::within(self.limits.db_timeout, operation).await
    }

    /// Commits `write` by group commit, as it stands: only `write` (`checked`), which gives it
    /// the view of any lock it names, may call this.
    async fn commit(&self, write: &FencedWrite) -> Result<WriteResult, StoreError> {
        let started = Instant::now();
        let result = self.bounded(self.commits.write(write.clone())).await;
        if let Ok(done) = &result {
            self.metrics
                .record_write(done.entry.outcome, started.elapsed());
            self.metrics
                .write_batch_size
                .observe(done.batch_size as f64);
        }
        result
    }

    pub async fn refuse(&self, attempt: &RefusedAttempt) -> Result<AuditEntry, StoreError> {
        let started = Instant::now();
        let result = self.bounded(self.store.record_refused(attempt)).await;
        if let Ok(entry) = &result {
            self.metrics.record_write(entry.outcome, started.elapsed());
            if let Some(feed) = &self.feed {
                feed.push([entry.clone()]);
            }
        }
        result
    }

    /// Sets a resource's highest accepted generation by an operator's hand, audited (outcome
    /// `reset`); `None` when the resource was never written.
    pub async fn reset(&self, reset: &Reset) -> Result<Option<ResetDone>, StoreError> {
        let result = self.bounded(self.store.reset_highest(reset)).await;
        if let Ok(Some(done)) = &result {
            self.metrics.count(done.entry.outcome);
            if let Some(feed) = &self.feed {
                feed.push([done.entry.clone()]);
            }
        }
        result
    }

    /// Counts a request refused before the fence, in memory and in the metrics: no
    /// transaction, no row lock, no row of its own (`app::refusals`). Says whether its address
    /// was within its budget of refusals.
    pub fn refused_before_fence(
        &self,
        refusal: Refusal,
        sample: impl FnOnce() -> RefusalSample,
    ) -> Spend {
        let (spend, reason) = self.refusals.count(refusal, sample);
        self.metrics.record_refusal(reason);
        spend
    }

    /// Writes the refusals counted so far (the daemon does at each interval, and at exit).
    pub async fn flush_refusals(&self) -> Result<usize, StoreError> {
        self.refusals.flush(self.limits.db_timeout).await
    }

    pub async fn read(&self, key: &ResourceKey) -> Result<Option<StoredValue>, StoreError> {
        self.bounded(self.store.read_value(key)).await
    }

    pub async fn audit(&self, query: &AuditQuery) -> Result<Vec<AuditEntry>, StoreError> {
        self.bounded(self.store.audit_page(query)).await
    }

    pub async fn acquire_lease(
        &self,
        name: &LeaseName,
        holder: &Holder,
        ttl: Ttl,
    ) -> Result<AcquireResult, StoreError> {
        let result = self
            .bounded(self.store.acquire_lease(name, holder, ttl))
            .await;
        if let Ok(AcquireResult::Granted(_)) = &result {
            self.metrics.leases_granted.inc();
        }
        result
    }

    pub async fn renew_lease(
        &self,
        name: &LeaseName,
        holder: &Holder,
        token: FencingToken,
        ttl: Option<Ttl>,
    ) -> Result<RenewResult, StoreError> {
        self.bounded(self.store.renew_lease(name, holder, token, ttl))
            .await
    }

    pub async fn release_lease(
        &self,
        name: &LeaseName,
        holder: &Holder,
        token: FencingToken,
    ) -> Result<ReleaseResult, StoreError> {
        self.bounded(self.store.release_lease(name, holder, token))
            .await
    }

    pub async fn lease(&self, name: &LeaseName) -> Result<Option<LeaseState>, StoreError> {
        self.bounded(self.store.lease(name)).await
    }

    /// A page of a lease's history, newest first; `None` if the lease was never acquired. Both
    /// reads share one bound.
    pub async fn lease_history(
        &self,
        name: &LeaseName,
        query: &LeaseHistoryQuery,
    ) -> Result<Option<Vec<LeaseEvent>>, StoreError> {
        self.bounded(async {
            // An external lock's history: its holders as writes observed them.
            if let Some(lock) = ExternalLock::from_lease(name).and_then(Result::ok) {
                let events = self.store.authority_history_page(&lock, query).await?;
                if events.is_empty() && !self.store.authority_observed(&lock).await? {
                    return Ok(None);
                }
                return Ok(Some(events));
            }
            let events = self.store.lease_history_page(name, query).await?;
            if events.is_empty() && self.store.lease(name).await?.is_none() {
                return Ok(None);
            }
            Ok(Some(events))
        })
        .await
    }
}
