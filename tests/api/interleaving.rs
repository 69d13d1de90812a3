//! The article's race, forced: two independent clients on one resource; the older observes the
//! resource, is paused, and resumes only after the newer one's write has committed.

use crate::both_backends;
use crate::helpers::RawPool;
use crate::helpers::{Backend, TestDb};
use crate::on_raw;
use crate::test_db;
use fencewatch::domain::{Decision, FencedWrite, FencingToken, LeasePolicy, ResourceKey};
use fencewatch::store::{ObserveHook, Store};
use rstest_reuse::apply;
use sqlx::Row;
use std::sync::Arc;
use tokio::sync::{oneshot, Mutex};

fn write(token: i64, body: &'static str) -> FencedWrite {
    write_for("accounts/totals", token, body)
}

/// A well-formed write straight to the store.
pub fn write_for(key: &str, token: i64, body: &'static str) -> FencedWrite {
    FencedWrite::new(
        ResourceKey::parse(key).unwrap(),
        FencingToken::new(token).unwrap(),
        body,
    )
}

/// A pause point: the first time it is reached it reports so and waits to be released.
struct Pause {
    reached: Mutex<Option<oneshot::Sender<()>>>,
    release: Mutex<Option<oneshot::Receiver<()>>>,
}

fn pause_point() -> (Arc<Pause>, oneshot::Receiver<()>, oneshot::Sender<()>) {
    let (reached_tx, reached_rx) = oneshot::channel();
    let (release_tx, release_rx) = oneshot::channel();
    let pause = Arc::new(Pause {
        reached: Mutex::new(Some(reached_tx)),
        release: Mutex::new(Some(release_rx)),
    });
    (pause, reached_rx, release_tx)
}

impl Pause {
    async fn wait(&self) {
        if let Some(reached) = self.reached.lock().await.take() {
            let _ = reached.send(());
            if let Some(release) = self.release.lock().await.take() {
                let _ = release.await;
            }
        }
    }
}

/// How the older client writes.
#[derive(Clone, Copy, Debug)]
enum OlderWriter {
    /// fencewatch's store.
    Store,
    /// A deliberately broken read-then-write: check the token with one statement, then update
    /// unconditionally with another. Kept here only, to show the test catches the race.
    ReadThenWrite,
}

struct Observed {
    value: Vec<u8>,
    highest_token: i64,
    revision: i64,
    older_applied: bool,
}

async fn run_interleaving(db: &TestDb, older: OlderWriter) -> Observed {
    let newer_client = db.store().await;
    newer_client
        .unchecked_writes()
        .apply_write(&write(7, "old worker started"), LeasePolicy::default())
        .await
        .unwrap();

    let (pause, reached, release) = pause_point();
    let older_task = match older {
        OlderWriter::Store => {
            let hook_pause = pause.clone();
            let hook: ObserveHook = Arc::new(move || {
                let pause = hook_pause.clone();
                Box::pin(async move { pause.wait().await })
            });
            let older_client = db.store().await.with_observe_hook(hook);
            tokio::spawn(async move {
                let result = older_client
                    .unchecked_writes()
                    .apply_write(&write(7, "old worker resumed"), LeasePolicy::default())
                    .await
                    .unwrap();
                assert!(
                    result.observations >= 2,
                    "the older write must have decided again"
                );
                matches!(result.decision, Decision::Accept { .. })
            })
        }
        OlderWriter::ReadThenWrite => {
            let pool = db.raw_pool().await;
            tokio::spawn(
                async move { read_then_write(&pool, 7, b"old worker resumed", &pause).await },
            )
        }
    };
    reached
        .await
        .expect("the older client reached its pause point");

    // The newer owner writes and commits while the older one is paused after its read.
    let newer = newer_client
        .unchecked_writes()
        .apply_write(&write(8, "replacement completed"), LeasePolicy::default())
        .await
        .unwrap();
    assert!(matches!(newer.decision, Decision::Accept { .. }));

    release.send(()).expect("the older client is waiting");
    let older_applied = older_task.await.unwrap();
    let stored = newer_client
        .read_value(&ResourceKey::parse("accounts/totals").unwrap())
        .await
        .unwrap()
        .unwrap();
    Observed {
        value: stored.value,
        highest_token: stored.highest_token,
        revision: stored.revision,
        older_applied,
    }
}

async fn read_then_write(pool: &RawPool, token: i64, body: &[u8], pause: &Pause) -> bool {
    let highest: i64 = on_raw!(pool, h => sqlx::query("SELECT highest_token FROM resources WHERE key = 'accounts/totals'")
            .fetch_one(h)
            .await
            .unwrap()
            .get(0));
    pause.wait().await;
    if token < highest {
        return false;
    }
    on_raw!(pool, h => sqlx::query("UPDATE resources SET highest_token = $1, value = $2, revision = revision + 1 WHERE key = 'accounts/totals'")
        .bind(token)
        .bind(body)
        .execute(h)
        .await
        .unwrap().rows_affected());
    true
}

/// The invariant: an older generation never overwrites an accepted newer one.
fn invariant_holds(observed: &Observed) -> bool {
    !observed.older_applied
        && observed.value == b"replacement completed"
        && observed.highest_token == 8
        && observed.revision == 2
}

#[apply(both_backends)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_older_write_changes_nothing_after_the_newer_commits(#[case] backend: Backend) {
    let db = test_db!(backend);
    let observed = run_interleaving(&db, OlderWriter::Store).await;
    assert!(
        invariant_holds(&observed),
        "value {:?}, highest {}, revision {}",
        String::from_utf8_lossy(&observed.value),
        observed.highest_token,
        observed.revision
    );

    // The older attempt is in the audit as stale, decided on the state the newer one left.
    let store: Store = db.store().await;
    let page = store
        .audit_page(&fencewatch::store::AuditQuery {
            limit: 10,
            ..Default::default()
        })
        .await
        .unwrap();
    let outcomes: Vec<_> = page
        .iter()
        .rev()
        .map(|e| (e.token, e.outcome.as_str(), e.highest_token))
        .collect();
    assert_eq!(
        outcomes,
        [
            (Some(7), "accepted", 7),
            (Some(8), "accepted", 8),
            (Some(7), "stale", 8)
        ]
    );
}

/// The same interleaving against a read-then-write implementation breaks the invariant, so the
/// test above is known to catch the race it is about.
#[apply(both_backends)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_same_interleaving_catches_a_read_then_write_fence(#[case] backend: Backend) {
    let db = test_db!(backend);
    let observed = run_interleaving(&db, OlderWriter::ReadThenWrite).await;
    assert!(observed.older_applied);
    assert!(!invariant_holds(&observed));
    assert_eq!(
        (observed.value.as_slice(), observed.highest_token),
        (&b"old worker resumed"[..], 7)
    );
}
