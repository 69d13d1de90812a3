//! Group commit: concurrent fenced writes queue here and are taken in batches, each batch
//! decided in arrival order and committed in one transaction (`Store::apply_batch`); only then
//! is each writer answered.
//!
//! Batches form by themselves: a worker takes whatever has queued while the previous commit was
//! in flight, so a lone writer goes straight through (a batch of one, no waiting) and a crowd
//! shares one fsync. SQLite has one writer, so it gets one worker; PostgreSQL gets several, so a
//! batch can form while others commit.

use crate::store::{Backend, FencedWrite, LeasePolicy, Store, StoreError, WriteResult, MAX_BATCH};
use std::sync::Arc;
use tokio::sync::{mpsc, oneshot, Mutex};

/// Writes that may wait for a worker; beyond it, writers wait to enqueue (back-pressure).
const QUEUE_DEPTH: usize = 4 * MAX_BATCH;

/// Concurrent batches on PostgreSQL: enough to keep a batch forming while others commit, few
/// enough to leave connections for reads and the lease authority.
const MAX_POSTGRES_WORKERS: u32 = 4;

struct Job {
    write: FencedWrite,
    reply: oneshot::Sender<Result<WriteResult, StoreError>>,
}

/// The queue in front of the write path; cheap to clone. Workers stop once every handle is
/// dropped and the queue is drained.
#[derive(Clone)]
pub struct GroupCommit {
    queue: mpsc::Sender<Job>,
}

impl GroupCommit {
    /// Starts the workers on the current runtime.
    pub fn start(store: Store, policy: LeasePolicy) -> Self {
        let workers = match store.backend() {
            Backend::Sqlite => 1,
            Backend::Postgres => (store.writer_connections() / 2).clamp(1, MAX_POSTGRES_WORKERS),
        };
        let (queue, jobs) = mpsc::channel(QUEUE_DEPTH);
        let jobs = Arc::new(Mutex::new(jobs));
        for _ in 0..workers {
            tokio::spawn(work(store.clone(), policy, jobs.clone()));
        }
        Self { queue }
    }

    /// Queues `write` and waits for its batch to commit.
    pub async fn write(&self, write: FencedWrite) -> Result<WriteResult, StoreError> {
        let (reply, answer) = oneshot::channel();
        self.queue
            .send(Job { write, reply })
            .await
            .map_err(|_| StoreError::Unavailable(sqlx::Error::PoolClosed))?;
        // A dropped reply means the batch's task died (a panic): nothing was committed.
        answer
            .await
            .map_err(|_| StoreError::Unavailable(sqlx::Error::WorkerCrashed))?
    }
}

async fn work(store: Store, policy: LeasePolicy, jobs: Arc<Mutex<mpsc::Receiver<Job>>>) {
    loop {
        let mut batch = Vec::with_capacity(MAX_BATCH);
        // One worker at a time takes what has queued; the others are committing meanwhile.
        let taken = jobs.lock().await.recv_many(&mut batch, MAX_BATCH).await;
        if taken == 0 {
            return;
        }
        // Its own task, so that a panic fails this batch's writers and not the worker.
        let store = store.clone();
        if let Err(error) = tokio::spawn(commit(store, policy, batch)).await {
            tracing::error!(%error, "a write batch failed without an answer");
        }
    }
}

async fn commit(store: Store, policy: LeasePolicy, batch: Vec<Job>) {
    let (writes, replies): (Vec<FencedWrite>, Vec<_>) =
        batch.into_iter().map(|job| (job.write, job.reply)).unzip();
    match store.apply_batch(&writes, policy).await {
        Ok(results) => {
            for (reply, result) in replies.into_iter().zip(results) {
                // A writer that went away still had its write committed; nobody to tell.
                let _ = reply.send(Ok(result));
            }
        }
        // Something in the batch broke a statement: isolate it by applying each write alone,
        // in order, so one bad write cannot fail its neighbours.
        Err(StoreError::Internal(error)) if writes.len() > 1 => {
            tracing::warn!(%error, writes = writes.len(), "a write batch failed; applying its writes one by one");
            for (write, reply) in writes.iter().zip(replies) {
                let _ = reply.send(store.apply_write(write, policy).await);
            }
        }
        Err(error) => {
            for reply in replies {
                let _ = reply.send(Err(error.for_each_writer()));
            }
        }
    }
}
