//! Where a resource's audit chain has its head: in `chain_heads` while the resource has never
//! been written, in the resource's row from the batch that creates it. The chain must stay
//! whole across that move, however writers interleave, and across the migration that moved
//! the existing heads.

use crate::both_backends;
use crate::helpers::Backend;
use crate::helpers::RawPool;
use crate::interleaving::write_for;
use crate::on_raw;
use crate::test_db;
use chrono::{SubsecRound, Utc};
use fencewatch::domain::chain::{row_hash, GENESIS};
use fencewatch::domain::{
    AuditEntry, Decision, FencedWrite, LeasePolicy, Outcome, RefusedAttempt, ResourceKey, Revision,
};
use fencewatch::store::{ObserveHook, Store};
use rstest::rstest;
use rstest_reuse::apply;
use sha2::Digest;
use sqlx::Row;
use std::sync::Arc;
use tokio::sync::{oneshot, Mutex};

const KEY: &str = "chains/x";

fn refused(key: &str) -> RefusedAttempt {
    RefusedAttempt {
        key: ResourceKey::parse(key).unwrap(),
        outcome: Outcome::Invalid,
        token: None,
        idempotency_key: None,
        expected_revision: None,
        owner: None,
        lease: None,
        body_sha256: None,
        body_len: None,
        detail: "malformed on purpose".into(),
        caller: None,
    }
}

fn expecting(mut write: FencedWrite, revision: i64) -> FencedWrite {
    write.expected_revision = Some(Revision::new(revision).unwrap());
    write
}

/// `(seq, hash)` of the resource's row and of its `chain_heads` row, if any.
async fn heads(pool: &RawPool, key: &str) -> (Option<(i64, String)>, Option<(i64, String)>) {
    let in_row = on_raw!(pool, h => sqlx::query("SELECT chain_seq, chain_hash FROM resources WHERE key = $1")
        .bind(key)
        .fetch_optional(h)
        .await
        .unwrap()
        .map(|row| (row.get(0), row.get(1))));
    let unwritten = on_raw!(pool, h => sqlx::query("SELECT seq, hash FROM chain_heads WHERE resource = $1")
        .bind(key)
        .fetch_optional(h)
        .await
        .unwrap()
        .map(|row| (row.get(0), row.get(1))));
    (in_row, unwritten)
}

/// The resource's audit rows in order: `(seq, prev_hash, hash)`, the digests (stored as bytes)
/// in hex as the chain heads hold them.
async fn chain_of(pool: &RawPool, key: &str) -> Vec<(i64, String, String)> {
    on_raw!(pool, h => sqlx::query("SELECT seq, prev_hash, hash FROM audit WHERE resource = $1 ORDER BY id")
            .bind(key)
            .fetch_all(h)
            .await
            .unwrap()
            .into_iter()
            .map(|row| {
                let (prev, hash): (Vec<u8>, Vec<u8>) = (row.get(1), row.get(2));
                (row.get(0), hex::encode(prev), hex::encode(hash))
            })
            .collect()
    )
}

fn assert_linked(chain: &[(i64, String, String)]) {
    let mut previous = GENESIS.to_owned();
    for (index, (seq, prev_hash, hash)) in chain.iter().enumerate() {
        assert_eq!(*seq, index as i64 + 1, "positions in order: {chain:?}");
        assert_eq!(prev_hash, &previous, "row {seq} links to the one before");
        previous = hash.clone();
    }
}

#[apply(both_backends)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_head_moves_into_the_resource_when_it_is_created_and_the_chain_stays_whole(
    #[case] backend: Backend,
) {
    let db = test_db!(backend);
    let store = db.store().await;
    let pool = db.raw_pool().await;
    let policy = LeasePolicy::default();

    // Attempts on a resource never written: the head is a row of its own.
    store.record_refused(&refused(KEY)).await.unwrap();
    let conflict = store
        .unchecked_writes()
        .apply_write(&expecting(write_for(KEY, 1, "early"), 3), policy)
        .await
        .unwrap();
    assert_eq!(conflict.decision, Decision::RevisionMismatch);
    let (in_row, unwritten) = heads(&pool, KEY).await;
    assert_eq!(in_row, None);
    assert_eq!(unwritten.as_ref().map(|h| h.0), Some(2));

    // The batch that creates it moves the head into its row and marks the old one.
    let mut creating = write_for(KEY, 1, "created");
    creating.content_type = Some("text/plain".into());
    let created = store
        .unchecked_writes()
        .apply_write(&creating, policy)
        .await
        .unwrap();
    assert!(matches!(created.decision, Decision::Accept { .. }));
    let (in_row, unwritten) = heads(&pool, KEY).await;
    assert_eq!(in_row.as_ref().map(|h| h.0), Some(3));
    assert_eq!(unwritten, Some((-1, String::new())));

    // Then every kind of append advances the row's head: a refused attempt (outside group
    // commit), a rejection (only the head moves) and an accepted write.
    store.record_refused(&refused(KEY)).await.unwrap();
    let rejected = store
        .unchecked_writes()
        .apply_write(&expecting(write_for(KEY, 1, "late"), 9), policy)
        .await
        .unwrap();
    assert_eq!(rejected.decision, Decision::RevisionMismatch);
    // Only the head moved: the value and everything written with it are the created ones.
    let row = "SELECT value, content_type, revision, highest_token, updated_at_us FROM resources \
               WHERE key = $1";
    let kept: (Vec<u8>, Option<String>, i64, i64, i64) =
        on_raw!(&pool, h => sqlx::query_as(row).bind(KEY).fetch_one(h).await.unwrap());
    assert_eq!(kept.0, b"created");
    assert_eq!(kept.1.as_deref(), Some("text/plain"));
    assert_eq!((kept.2, kept.3), (1, 1));
    assert_eq!(
        kept.4,
        created.entry.at.timestamp_micros(),
        "updated_at is the accepted write's time"
    );
    store
        .unchecked_writes()
        .apply_write(&write_for(KEY, 2, "second"), policy)
        .await
        .unwrap();

    let chain = chain_of(&pool, KEY).await;
    assert_eq!(chain.len(), 6);
    assert_linked(&chain);
    let (in_row, _) = heads(&pool, KEY).await;
    let (last_seq, _, last_hash) = chain.last().cloned().unwrap();
    assert_eq!(in_row, Some((last_seq, last_hash)));
    // A rejection moved only the head: the value is the last accepted one.
    let stored = store
        .read_value(&ResourceKey::parse(KEY).unwrap())
        .await
        .unwrap()
        .unwrap();
    assert_eq!(
        (
            stored.value.as_slice(),
            stored.revision,
            stored.highest_token
        ),
        (&b"second"[..], 2, 2)
    );
    let report = store.verify_audit().await.unwrap();
    assert!(report.breaches.is_empty(), "{:?}", report.breaches);
    assert_eq!(report.rows, 6);

    // The head in the row is what `verify` holds the chain to: its last row removed is found.
    on_raw!(&pool, h => sqlx::query("DELETE FROM audit WHERE resource = $1 AND seq = 6")
        .bind(KEY)
        .execute(h)
        .await
        .unwrap().rows_affected());
    let report = store.verify_audit().await.unwrap();
    assert_eq!(report.breaches.len(), 1, "{:?}", report.breaches);
    assert_eq!(report.breaches[0].resource, KEY);
    assert!(
        report.breaches[0].problem.contains("missing"),
        "{:?}",
        report.breaches[0]
    );
}

/// A pause point for the hooked store: reports when reached, waits to be released.
fn pausing_hook() -> (ObserveHook, oneshot::Receiver<()>, oneshot::Sender<()>) {
    let (reached_tx, reached_rx) = oneshot::channel();
    let (release_tx, release_rx) = oneshot::channel::<()>();
    let reached = Arc::new(Mutex::new(Some(reached_tx)));
    let release = Arc::new(Mutex::new(Some(release_rx)));
    let hook: ObserveHook = Arc::new(move || {
        let (reached, release) = (reached.clone(), release.clone());
        Box::pin(async move {
            if let Some(reached) = reached.lock().await.take() {
                let _ = reached.send(());
                if let Some(release) = release.lock().await.take() {
                    let _ = release.await;
                }
            }
        })
    });
    (hook, reached_rx, release_tx)
}

#[apply(both_backends)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_attempt_that_saw_the_resource_missing_cannot_fork_the_chain_its_creator_moved(
    #[case] backend: Backend,
) {
    let db = test_db!(backend);
    let (hook, reached, release) = pausing_hook();
    let late = db.store().await.with_observe_hook(hook);
    let creator = db.store().await;
    let policy = LeasePolicy::default();

    // The late client decides a rejection on the resource as missing, and is paused before
    // it appends to the missing resource's chain (from its start, in `chain_heads`).
    let late_task = tokio::spawn(async move {
        late.unchecked_writes()
            .apply_write(&expecting(write_for(KEY, 1, "late"), 4), policy)
            .await
            .unwrap()
    });
    reached.await.expect("the late client reached its pause");

    // Meanwhile another client (another daemon, on PostgreSQL) creates the resource: its
    // chain starts in its row.
    let created = creator
        .unchecked_writes()
        .apply_write(&write_for(KEY, 1, "created"), policy)
        .await
        .unwrap();
    assert!(matches!(created.decision, Decision::Accept { .. }));

    release.send(()).expect("the late client is waiting");
    let late = late_task.await.unwrap();
    assert_eq!(late.decision, Decision::RevisionMismatch);
    assert!(
        late.observations >= 2,
        "the late write must have found its observation stale and decided again"
    );

    let pool = db.raw_pool().await;
    let chain = chain_of(&pool, KEY).await;
    assert_eq!(chain.len(), 2, "{chain:?}");
    assert_linked(&chain);
    let (in_row, unwritten) = heads(&pool, KEY).await;
    assert_eq!(in_row.map(|h| h.0), Some(2));
    assert_eq!(unwritten.map(|h| h.0), Some(-1));
    let report = creator.verify_audit().await.unwrap();
    assert!(report.breaches.is_empty(), "{:?}", report.breaches);
}

/// An audit row as a build before the move wrote it, with its chain link.
async fn insert_chained(pool: &RawPool, entry: &AuditEntry, seq: i64, prev: &str) -> String {
    let hash = row_hash(entry, seq, prev);
    on_raw!(pool, h => sqlx::query(
        "INSERT INTO audit (at_us, resource, outcome, token, highest_token, revision, \
         idempotency_key, expected_revision, owner, lease, body_sha256, body_len, detail, caller, \
         seq, prev_hash, hash) \
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17)",
    )
    .bind(entry.at.timestamp_micros())
    .bind(entry.resource.as_str())
    .bind(entry.outcome.as_str())
    .bind(entry.token)
    .bind(entry.highest_token)
    .bind(entry.revision)
    .bind(entry.idempotency_key.as_deref())
    .bind(entry.expected_revision)
    .bind(entry.owner.as_deref())
    .bind(entry.lease.as_deref())
    .bind(entry.body_sha256.as_deref())
    .bind(entry.body_len)
    .bind(entry.detail.as_deref())
    .bind(entry.caller.as_deref())
    .bind(seq)
    .bind(prev)
    .bind(hash.as_str())
    .execute(h)
    .await
    .unwrap().rows_affected());
    hash
}

fn entry(resource: &str, outcome: Outcome, token: i64, highest: i64, revision: i64) -> AuditEntry {
    AuditEntry {
        id: 0,
        at: Utc::now().trunc_subsecs(6),
        resource: resource.into(),
        outcome,
        token: Some(token),
        highest_token: highest,
        revision,
        idempotency_key: None,
        expected_revision: None,
        owner: None,
        lease: None,
        body_sha256: None,
        body_len: None,
        detail: None,
        caller: None,
        source: None,
    }
}

#[rstest]
#[case::sqlite(Backend::Sqlite, "migrations/sqlite")]
#[cfg_attr(
    not(fencewatch_pg),
    ignore = "needs PostgreSQL: set FENCEWATCH_TEST_PG"
)]
#[case::postgres(Backend::Postgres, "migrations/postgres")]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn heads_kept_apart_before_the_move_carry_on_after_it(
    #[case] backend: Backend,
    #[case] migrations: &str,
) {
    let db = test_db!(backend);
    // The schema as it was before heads moved: the migrations up to the seventh.
    let earlier = tempfile::tempdir().unwrap();
    let source = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join(migrations);
    let mut files: Vec<_> = std::fs::read_dir(&source)
        .unwrap()
        .map(|file| file.unwrap().path())
        .collect();
    files.sort();
    for file in files.iter().take(7) {
        std::fs::copy(file, earlier.path().join(file.file_name().unwrap())).unwrap();
    }
    let pool = db.raw_pool().await;
    let earlier_migrations = sqlx::migrate::Migrator::new(earlier.path()).await.unwrap();
    on_raw!(&pool, h => earlier_migrations.run(h).await.unwrap());

    // A written resource and one with only a refused attempt, each with its head in
    // `audit_chains`, as that schema kept them.
    let mut written = entry("old/written", Outcome::Accepted, 5, 5, 1);
    // The value the resource's row holds below (`verify` holds it to this digest).
    written.body_sha256 = Some(hex::encode(sha2::Sha256::digest(b"before")));
    let written_hash = insert_chained(&pool, &written, 1, GENESIS).await;
    on_raw!(&pool, h => sqlx::query(
        "INSERT INTO resources (key, highest_token, revision, value, updated_at_us) \
         VALUES ('old/written', 5, 1, $1, 0)",
    )
    .bind(&b"before"[..])
    .execute(h)
    .await
    .unwrap().rows_affected());
    let refused_entry = entry("old/refused", Outcome::Stale, 1, 0, 0);
    let refused_hash = insert_chained(&pool, &refused_entry, 1, GENESIS).await;
    for (resource, hash) in [
        ("old/written", &written_hash),
        ("old/refused", &refused_hash),
    ] {
        on_raw!(&pool, h => sqlx::query("INSERT INTO audit_chains (resource, seq, hash) VALUES ($1, 1, $2)")
            .bind(resource)
            .bind(hash.as_str())
            .execute(h)
            .await
            .unwrap().rows_affected());
    }
    pool.close().await;

    // Opening the store migrates: the written resource's head is now in its row.
    let store: Store = db.store().await;
    let pool = db.raw_pool().await;
    assert_eq!(
        heads(&pool, "old/written").await,
        (Some((1, written_hash)), Some((-1, String::new())))
    );
    assert_eq!(
        heads(&pool, "old/refused").await,
        (None, Some((1, refused_hash)))
    );
    let report = store.verify_audit().await.unwrap();
    assert!(report.breaches.is_empty(), "{:?}", report.breaches);
    assert_eq!(report.rows, 2);

    // Both chains carry on from where they were.
    let policy = LeasePolicy::default();
    for (key, token) in [("old/written", 5), ("old/refused", 1)] {
        let result = store
            .unchecked_writes()
            .apply_write(&write_for(key, token, "after"), policy)
            .await
            .unwrap();
        assert!(matches!(result.decision, Decision::Accept { .. }), "{key}");
        let chain = chain_of(&pool, key).await;
        assert_eq!(chain.len(), 2, "{key}: {chain:?}");
        assert_linked(&chain);
    }
    let report = store.verify_audit().await.unwrap();
    assert!(report.breaches.is_empty(), "{:?}", report.breaches);
    assert_eq!(report.rows, 4);
}
