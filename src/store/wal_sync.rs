//! Durability of SQLite group commits, taken off the writer's path.
//!
//! With `synchronous = FULL` a commit returns only after its WAL frames are fsynced, and the
//! one writer connection sits idle for the whole fsync. A group-commit batch instead commits
//! with `synchronous = NORMAL` (frames written to the OS, not yet synced) and this module syncs
//! the WAL file afterwards, from another thread, while the writer decides and commits the next
//! batch. Writers are answered only once a sync that began after their commit has finished, so
//! an acknowledged write is exactly as durable as under FULL; a sync covers every commit before
//! it, so concurrent batches share it.
//!
//! Readers could see a commit before it is synced. Anything the daemon shows from its reader
//! connections therefore waits first for every commit that had begun (`settle`): nothing shown
//! can vanish in a power loss that an acknowledged write survives.
//!
//! A failed sync is final: the kernel may have dropped the pages it could not write, so a later
//! sync that succeeds proves nothing. From then on every write and read is refused as
//! unavailable until the daemon restarts and reads back what is really on disk (as PostgreSQL
//! does after a failed fsync).

use super::{ObserveHook, StoreError};
use std::fs::File;
use std::io;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};
use tokio::sync::{watch, Mutex};

pub(crate) struct WalSync {
    wal: PathBuf,
    /// Commits that have begun: their frames may be visible to readers already.
    begun: AtomicU64,
    /// Commits whose COMMIT has returned: their frames are written, so a sync covers them.
    committed: watch::Sender<u64>,
    /// Commits whose frames a finished sync covered.
    durable: AtomicU64,
    /// Held by whichever task is syncing; the others wait for it and usually find their commit
    /// covered.
    syncing: Mutex<()>,
    failure: OnceLock<String>,
    /// Tests pause here, before a sync.
    hook: Option<ObserveHook>,
}

impl WalSync {
    /// For the database file at `database`; its WAL is the file beside it.
    pub(crate) fn new(database: &str) -> Self {
        Self::new_for_wal(PathBuf::from(format!("{database}-wal")))
    }

    /// A fresh one for the same WAL, pausing at `hook` before each sync.
    pub(crate) fn hooked(&self, hook: ObserveHook) -> Self {
        Self {
            hook: Some(hook),
            ..Self::new_for_wal(self.wal.clone())
        }
    }

    fn new_for_wal(wal: PathBuf) -> Self {
        Self {
            wal,
            begun: AtomicU64::new(0),
            committed: watch::Sender::new(0),
            durable: AtomicU64::new(0),
            syncing: Mutex::new(()),
            failure: OnceLock::new(),
            hook: None,
        }
    }

    /// The size of the WAL file now; 0 when there is none (the last connection to close
    /// checkpointed it into the database and removed it).
    pub(crate) async fn file_size(&self) -> io::Result<u64> {
        match tokio::fs::metadata(&self.wal).await {
            Ok(metadata) => Ok(metadata.len()),
            Err(error) if error.kind() == io::ErrorKind::NotFound => Ok(0),
            Err(error) => Err(error),
        }
    }

    /// Marks the start of a COMMIT; the ticket ends it when dropped, whether the commit
    /// succeeded or not.
    pub(crate) fn begin_commit(self: &Arc<Self>) -> Result<CommitTicket, StoreError> {
        self.refuse_if_failed()?;
        let seq = self.begun.fetch_add(1, Ordering::SeqCst) + 1;
        Ok(CommitTicket {
            sync: self.clone(),
            seq,
        })
    }

    /// Returns once the commit `seq` is on disk.
    pub(crate) async fn wait_durable(&self, seq: u64) -> Result<(), StoreError> {
        self.wait_durable_on(seq, Syncer::BlockingThread).await
    }

    async fn wait_durable_on(&self, seq: u64, syncer: Syncer) -> Result<(), StoreError> {
        if self.durable.load(Ordering::SeqCst) >= seq {
            return Ok(());
        }
        // The sender lives in `self`, so the channel cannot close while we wait.
        let _ = self
            .committed
            .subscribe()
            .wait_for(|committed| *committed >= seq)
            .await;
        loop {
            if self.durable.load(Ordering::SeqCst) >= seq {
                return Ok(());
            }
            let _leader = self.syncing.lock().await;
            self.refuse_if_failed()?;
            if self.durable.load(Ordering::SeqCst) >= seq {
                return Ok(());
            }
            // Everything committed before the sync starts is covered by it.
            let target = *self.committed.borrow();
            if let Some(hook) = &self.hook {
                hook().await;
            }
            let synced = match syncer {
                Syncer::BlockingThread => {
                    let wal = self.wal.clone();
                    tokio::task::spawn_blocking(move || sync(&wal))
                        .await
                        .unwrap_or_else(|panic| Err(io::Error::other(panic.to_string())))
                }
                Syncer::ThisThread => sync(&self.wal),
            };
            match synced {
                Ok(()) => {
                    self.durable.fetch_max(target, Ordering::SeqCst);
                }
                Err(error) => {
                    let message = format!(
                        "syncing {} failed ({error}); writes and reads are refused until the \
                         daemon restarts",
                        self.wal.display()
                    );
                    tracing::error!("{message}");
                    let _ = self.failure.set(message);
                    return self.refuse_if_failed();
                }
            }
        }
    }

    /// Waits until every commit a read may have seen so far is on disk.
    pub(crate) async fn settle(&self) -> Result<(), StoreError> {
        self.refuse_if_failed()?;
        let seen = self.begun.load(Ordering::SeqCst);
        self.wait_durable(seen).await
    }

    fn refuse_if_failed(&self) -> Result<(), StoreError> {
        match self.failure.get() {
            Some(message) => Err(StoreError::Unavailable(Arc::new(sqlx::Error::Io(
                io::Error::other(message.clone()),
            )))),
            None => Ok(()),
        }
    }
}

/// Who runs the fsync.
#[derive(Clone, Copy)]
enum Syncer {
    /// One of the runtime's blocking threads, so that the caller's thread goes on meanwhile.
    BlockingThread,
    /// The caller's thread, which blocks for the fsync: for a caller with nothing else to do,
    /// it saves handing the fsync to another thread and the answer back (two wake-ups).
    ThisThread,
}

/// fdatasync of the WAL, through a descriptor of our own: a sync is of the file, whichever
/// descriptor asks. No WAL means the last connection checkpointed it into the synced database
/// file and removed it, so there is nothing left to sync.
fn sync(wal: &std::path::Path) -> io::Result<()> {
    match File::open(wal) {
        Ok(file) => file.sync_data(),
        Err(error) if error.kind() == io::ErrorKind::NotFound => Ok(()),
        Err(error) => Err(error),
    }
}

/// One commit in flight; dropping it records that its COMMIT has returned.
pub(crate) struct CommitTicket {
    sync: Arc<WalSync>,
    seq: u64,
}

impl CommitTicket {
    /// What to wait on for this commit to be durable.
    pub(crate) fn durability(&self) -> Durability {
        Durability {
            sync: self.sync.clone(),
            seq: self.seq,
        }
    }
}

impl Drop for CommitTicket {
    fn drop(&mut self) {
        let seq = self.seq;
        self.sync
            .committed
            .send_modify(|committed| *committed = (*committed).max(seq));
    }
}

/// A committed batch's claim on a future sync.
pub(crate) struct Durability {
    sync: Arc<WalSync>,
    seq: u64,
}

impl Durability {
    pub(crate) async fn wait(self) -> Result<(), StoreError> {
        self.sync.wait_durable(self.seq).await
    }

    /// Whether every commit before this one is on disk: then nobody else waits for a sync.
    pub(crate) fn earlier_commits_durable(&self) -> bool {
        self.sync.durable.load(Ordering::SeqCst) + 1 >= self.seq
    }

    /// As `wait`, but a sync it leads runs on this thread, blocking it: only for a thread of
    /// its own that has nothing else to do meanwhile.
    pub(crate) async fn wait_on_this_thread(self) -> Result<(), StoreError> {
        self.sync
            .wait_durable_on(self.seq, Syncer::ThisThread)
            .await
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rstest::rstest;

    /// Both ways of syncing must keep the same promises.
    async fn wait(durability: Durability, syncer: Syncer) -> Result<(), StoreError> {
        durability
            .sync
            .wait_durable_on(durability.seq, syncer)
            .await
    }

    #[rstest]
    #[case::on_a_blocking_thread(Syncer::BlockingThread)]
    #[case::on_this_thread(Syncer::ThisThread)]
    #[tokio::test]
    async fn a_commit_is_durable_after_a_sync_that_began_after_it(#[case] syncer: Syncer) {
        let dir = tempfile::tempdir().expect("tempdir");
        let database = dir.path().join("x.db");
        std::fs::write(dir.path().join("x.db-wal"), b"frames").expect("wal");
        let sync = Arc::new(WalSync::new(&database.to_string_lossy()));
        let first = sync.begin_commit().expect("begin");
        let second = sync.begin_commit().expect("begin");
        let (first_durable, second_durable) = (first.durability(), second.durability());
        drop(first);
        wait(first_durable, syncer).await.expect("first synced");
        assert_eq!(sync.durable.load(Ordering::SeqCst), 1);
        // The second commit had begun but not returned: a reader waits for it.
        let settled = tokio::spawn({
            let sync = sync.clone();
            async move { sync.settle().await }
        });
        tokio::task::yield_now().await;
        assert!(!settled.is_finished());
        drop(second);
        settled.await.expect("join").expect("settled");
        wait(second_durable, syncer).await.expect("second synced");
        assert_eq!(sync.durable.load(Ordering::SeqCst), 2);
    }

    #[cfg(unix)]
    #[rstest]
    #[case::on_a_blocking_thread(Syncer::BlockingThread)]
    #[case::on_this_thread(Syncer::ThisThread)]
    #[tokio::test]
    async fn a_failed_sync_refuses_everything_after_it(#[case] syncer: Syncer) {
        let dir = tempfile::tempdir().expect("tempdir");
        let database = dir.path().join("x.db");
        // A WAL path that cannot be opened for any reason but absence: a symlink loop.
        let wal = dir.path().join("x.db-wal");
        std::os::unix::fs::symlink(&wal, &wal).expect("symlink");
        let sync = Arc::new(WalSync::new(&database.to_string_lossy()));
        let ticket = sync.begin_commit().expect("begin");
        let durability = ticket.durability();
        drop(ticket);
        let error = wait(durability, syncer).await.expect_err("the sync failed");
        assert!(matches!(error, StoreError::Unavailable(_)), "{error}");
        assert!(error.to_string().contains("until the daemon restarts"));
        assert!(
            sync.begin_commit().is_err(),
            "no commit after a failed sync"
        );
        assert!(sync.settle().await.is_err(), "no read after a failed sync");
    }

    #[tokio::test]
    async fn a_missing_wal_was_checkpointed_and_needs_no_sync() {
        let dir = tempfile::tempdir().expect("tempdir");
        let sync = Arc::new(WalSync::new(&dir.path().join("gone.db").to_string_lossy()));
        let ticket = sync.begin_commit().expect("begin");
        let durability = ticket.durability();
        drop(ticket);
        durability.wait().await.expect("nothing to sync");
    }
}
