//! Group commit: concurrent fenced writes queue here and are taken in batches, each batch
//! decided in arrival order and committed in one transaction (`Store::apply_batch`); only then
//! is each writer answered.
//!
//! Batches form by themselves: a worker takes whatever has queued while the previous commit was
//! in flight, so a lone writer goes straight through (a batch of one, no waiting) and a crowd
//! shares one fsync. SQLite has one writer, so it gets one worker; PostgreSQL gets one per two
//! cores (`postgres_workers`), so that where there are cores for it a batch can form while
//! others commit. On SQLite the fsync itself is off the worker's path: a
//! batch's writers wait for it in a task of their own while the worker commits the next batch.
//!
//! On PostgreSQL a writer that finds nothing queued and no batch in flight commits its write
//! itself, on its own task (`Leader`): a lone writer's batch of one then costs no hand-off to a
//! worker and back, which on a lone connection were a large part of each write's time
//! (docs/performance.md). Writers arriving meanwhile queue for the workers as before.

use crate::domain::{FencedWrite, LeasePolicy, WriteResult};
use crate::live::CommitFeed;
use crate::store::{CommitPath, Store, StoreError, MAX_BATCH};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::{mpsc, oneshot, Mutex};

/// Writes that may wait for a worker; beyond it, writers wait to enqueue (back-pressure).
const QUEUE_DEPTH: usize = 4 * MAX_BATCH;

/// Concurrent batches on PostgreSQL: enough to keep a batch forming while others commit, few
/// enough to leave connections for reads and the lease authority.
const MAX_POSTGRES_WORKERS: u32 = 4;

/// PostgreSQL workers for this machine: one per two cores. Batches in flight at once compete
/// for the same CPUs as the backends running them, and each splits the queue into smaller
/// batches, so more statements per write (measured against more workers: docs/performance.md,
/// "Tried, kept or not").
fn postgres_workers(cores: usize, writer_connections: u32) -> u32 {
    let by_cores = u32::try_from(cores / 2).unwrap_or(u32::MAX);
    by_cores
        .min(writer_connections / 2)
        .clamp(1, MAX_POSTGRES_WORKERS)
}

struct Job {
    write: FencedWrite,
    reply: Reply,
}

/// The queue in front of the write path; cheap to clone. Workers stop once every handle is
/// dropped and the queue is drained.
#[derive(Clone)]
pub struct GroupCommit {
    queue: mpsc::Sender<Job>,
    feed: Feed,
    /// PostgreSQL: what a lone writer needs to commit its write itself.
    leader: Option<Arc<Leader>>,
}

/// A lone writer's way past the queue (PostgreSQL).
struct Leader {
    store: Store,
    policy: LeasePolicy,
    abandon_after: Duration,
    /// Batches being committed, by workers or by writers themselves.
    in_flight: Arc<AtomicUsize>,
}

/// Counts a batch in flight until dropped, however its commit ends (a cancelled writer, a
/// panic).
struct InFlight(Arc<AtomicUsize>);

impl InFlight {
    fn enter(count: &Arc<AtomicUsize>) -> Self {
        count.fetch_add(1, Ordering::SeqCst);
        Self(count.clone())
    }

    /// Enters only where nothing else is in flight.
    fn enter_alone(count: &Arc<AtomicUsize>) -> Option<Self> {
        count
            .compare_exchange(0, 1, Ordering::SeqCst, Ordering::SeqCst)
            .ok()
            .map(|_| Self(count.clone()))
    }
}

impl Drop for InFlight {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::SeqCst);
    }
}

/// Where a batch's audit rows go once durable, if anywhere (the live side's feed).
type Feed = Option<Arc<CommitFeed>>;

impl GroupCommit {
    /// Starts the workers: PostgreSQL's on the current runtime, SQLite's on a thread of its own.
    /// A PostgreSQL batch still unanswered after `abandon_after` is abandoned with its
    /// connection (its writers learn that its outcome is unknown), so that a server that stopped
    /// answering cannot hold the queue until TCP gives up. SQLite's is not: its commit in
    /// flight must be seen to its end before the WAL sync may count it written.
    pub fn start(store: Store, policy: LeasePolicy, abandon_after: Duration, feed: Feed) -> Self {
        let path = store.commit_path();
        let workers = match path {
            CommitPath::OneWriter => 1,
            CommitPath::Sessions { connections } => postgres_workers(
                std::thread::available_parallelism().map_or(1, |n| n.get()),
                connections,
            ),
        };
        let (queue, jobs) = mpsc::channel(QUEUE_DEPTH);
        let jobs = Arc::new(Mutex::new(jobs));
        let in_flight = Arc::new(AtomicUsize::new(0));
        if path == CommitPath::OneWriter {
            let answers = tokio::runtime::Handle::current();
            match spawn_dedicated(store.clone(), policy, jobs.clone(), answers, feed.clone()) {
                Ok(()) => {
                    return Self {
                        queue,
                        feed,
                        leader: None,
                    }
                }
                Err(error) => {
                    tracing::warn!(%error, "no thread of its own for the SQLite writer; sharing the runtime");
                }
            }
        }
        let sessions = matches!(path, CommitPath::Sessions { .. });
        let leader = sessions.then(|| {
            Arc::new(Leader {
                store: store.clone(),
                policy,
                abandon_after,
                in_flight: in_flight.clone(),
            })
        });
        let abandon_after = sessions.then_some(abandon_after);
        for _ in 0..workers {
            tokio::spawn(work(
                store.clone(),
                policy,
                abandon_after,
                jobs.clone(),
                None,
                feed.clone(),
                in_flight.clone(),
            ));
        }
        Self {
            queue,
            feed,
            leader,
        }
    }

    /// Queues `write` and waits for its batch to commit; on PostgreSQL, with nothing queued
    /// and nothing in flight, commits it itself.
    pub async fn write(&self, write: FencedWrite) -> Result<WriteResult, StoreError> {
        let nothing_queued = self.queue.capacity() == self.queue.max_capacity();
        if let (Some(leader), true) = (&self.leader, nothing_queued) {
            if let Some(alone) = InFlight::enter_alone(&leader.in_flight) {
                let result = leader.commit_alone(write, &self.feed).await;
                drop(alone);
                return result;
            }
        }
        let (reply, answer) = oneshot::channel();
        self.queue
            .send(Job { write, reply })
            .await
            .map_err(|_| StoreError::QueueClosed)?;
        // A dropped reply means the batch's task died (a panic): nothing was committed.
        answer.await.map_err(|_| StoreError::BatchLost)?
    }
}

impl Leader {
    /// A batch of one, committed on the writer's own task, with what a worker's commit does
    /// for it: the bound on an unanswered database, the live feed.
    async fn commit_alone(
        &self,
        write: FencedWrite,
        feed: &Feed,
    ) -> Result<WriteResult, StoreError> {
        let applying = self
            .store
            .apply_batch_committed(std::slice::from_ref(&write), self.policy);
        let mut committed = crate::store::within(self.abandon_after, applying).await?;
        let dead = committed.take_dead_audit_ids();
        let feed = feed.as_ref();
        if let (false, Some(feed)) = (dead.is_empty(), feed) {
            feed.push_dead(dead);
        }
        let mut results = committed.durable().await?;
        if let Some(feed) = feed {
            feed.push(results.iter().map(|result| result.entry.clone()));
        }
        results
            .pop()
            .ok_or_else(|| StoreError::Invariant("a batch of one gave no result".into()))
    }
}

/// SQLite's one worker runs on a thread of its own: each statement is a hand-off to the
/// connection's thread and back, and on the shared runtime every hand-back queued behind HTTP
/// tasks (measured: docs/performance.md, "Tried, kept or not").
fn spawn_dedicated(
    store: Store,
    policy: LeasePolicy,
    jobs: Jobs,
    answers: tokio::runtime::Handle,
    feed: Feed,
) -> std::io::Result<()> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    std::thread::Builder::new()
        .name("group-commit".into())
        .spawn(move || {
            let own_thread = OwnThread {
                queue: jobs.clone(),
                answers,
            };
            let in_flight = Arc::new(AtomicUsize::new(0));
            runtime.block_on(work(
                store,
                policy,
                None,
                jobs,
                Some(own_thread),
                feed,
                in_flight,
            ))
        })?;
    Ok(())
}

/// What a worker on a thread of its own (rather than on the shared runtime, which must never
/// block) needs besides the store. Its batches' writers wait for their sync and are answered on
/// the shared runtime (`answers`): this thread is the write path's one serial stage, and each
/// answer it sent itself was a cross-thread wake-up.
#[derive(Clone)]
struct OwnThread {
    /// Its own queue, to see whether anything waits.
    queue: Jobs,
    answers: tokio::runtime::Handle,
}

type Jobs = Arc<Mutex<mpsc::Receiver<Job>>>;

async fn work(
    store: Store,
    policy: LeasePolicy,
    abandon_after: Option<Duration>,
    jobs: Jobs,
    own_thread: Option<OwnThread>,
    feed: Feed,
    in_flight: Arc<AtomicUsize>,
) {
    loop {
        let mut batch = Vec::with_capacity(MAX_BATCH);
        // One worker at a time takes what has queued; the others are committing meanwhile.
        let taken = jobs.lock().await.recv_many(&mut batch, MAX_BATCH).await;
        if taken == 0 {
            return;
        }
        let counted = InFlight::enter(&in_flight);
        // Its own task, so that a panic fails this batch's writers and not the worker.
        let store = store.clone();
        let committing = commit(
            store,
            policy,
            abandon_after,
            batch,
            own_thread.clone(),
            feed.clone(),
        );
        if let Err(error) = tokio::spawn(committing).await {
            tracing::error!(%error, "a write batch failed without an answer");
        }
        drop(counted);
    }
}

/// Applies a batch and hands its answers to a task of their own that waits for the batch to be
/// durable, so the worker takes the next batch while this one is synced. A worker on a thread
/// of its own with nothing else waiting (a lone writer) syncs in place instead: blocking its
/// thread costs nobody anything then, and it saves handing the fsync to another thread and back.
async fn commit(
    store: Store,
    policy: LeasePolicy,
    abandon_after: Option<Duration>,
    batch: Vec<Job>,
    own_thread: Option<OwnThread>,
    feed: Feed,
) {
    let (writes, replies): (Vec<FencedWrite>, Vec<_>) =
        batch.into_iter().map(|job| (job.write, job.reply)).unzip();
    let applying = store.apply_batch_committed(&writes, policy);
    let applied = match abandon_after {
        Some(limit) => crate::store::within(limit, applying).await,
        None => applying.await,
    };
    match applied {
        Ok(mut committed) => {
            let dead = committed.take_dead_audit_ids();
            if let (false, Some(feed)) = (dead.is_empty(), feed.as_ref()) {
                feed.push_dead(dead);
            }
            // Nothing waiting: no write queued, and no earlier batch whose writers, once
            // answered, would send more while this thread is blocked.
            let nothing_waiting = committed.alone_in_waiting()
                && own_thread
                    .as_ref()
                    .is_some_and(|own| own.queue.try_lock().is_ok_and(|jobs| jobs.is_empty()));
            if nothing_waiting {
                answer(committed.durable_on_this_thread().await, replies, &feed);
            } else {
                let answering = async move { answer(committed.durable().await, replies, &feed) };
                match own_thread {
                    Some(own) => own.answers.spawn(answering),
                    None => tokio::spawn(answering),
                };
            }
        }
        // Something in the batch broke a statement: isolate it by applying each write alone,
        // in order, so one bad write cannot fail its neighbours.
        Err(error @ (StoreError::Internal(_) | StoreError::Invariant(_))) if writes.len() > 1 => {
            tracing::warn!(%error, writes = writes.len(), "a write batch failed; applying its writes one by one");
            for (write, reply) in writes.iter().zip(replies) {
                let result = store.apply_write(write, policy).await;
                if let (Ok(done), Some(feed)) = (&result, feed.as_ref()) {
                    feed.push([done.entry.clone()]);
                }
                let _ = reply.send(result);
            }
        }
        Err(error) => {
            for reply in replies {
                let _ = reply.send(Err(error.clone()));
            }
        }
    }
}

type Reply = oneshot::Sender<Result<WriteResult, StoreError>>;

/// Answers a batch's writers once it is durable, or with the failure that left it unknown. The
/// live tail gets the batch's rows first, so a writer that watches the stream sees its write
/// soon after its answer.
fn answer(durable: Result<Vec<WriteResult>, StoreError>, replies: Vec<Reply>, feed: &Feed) {
    match durable {
        Ok(results) => {
            if let Some(feed) = feed.as_ref() {
                feed.push(results.iter().map(|result| result.entry.clone()));
            }
            for (reply, result) in replies.into_iter().zip(results) {
                // A writer that went away still had its write committed; nobody to tell.
                let _ = reply.send(Ok(result));
            }
        }
        // Committed but perhaps not on disk: the writers learn the outcome is unknown, as
        // after a timeout, and a retry with the same idempotency key finds out.
        Err(error) => {
            for reply in replies {
                let _ = reply.send(Err(error.clone()));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::postgres_workers;

    #[test]
    fn postgres_gets_a_worker_per_two_cores_within_its_connections() {
        assert_eq!(postgres_workers(1, 16), 1);
        assert_eq!(postgres_workers(2, 16), 1);
        assert_eq!(postgres_workers(4, 16), 2);
        assert_eq!(postgres_workers(64, 16), 4);
        assert_eq!(postgres_workers(64, 4), 2);
        assert_eq!(postgres_workers(8, 1), 1);
    }
}
