use super::plan::{segments, test_write as write};
use super::*;
use crate::domain::{Decision, ResourceKey};

#[tokio::test]
async fn a_group_commit_on_sqlite_is_synced_after_its_commit_and_leaves_full_behind() {
    let dir = tempfile::tempdir().unwrap();
    let url = format!("sqlite://{}", dir.path().join("x.db").display());
    let store = Store::open(&url, &Default::default()).await.unwrap();
    let wal = store
        .wal_sync()
        .cloned()
        .expect("SQLite syncs its WAL itself");
    let committed = store
        .apply_batch_committed(&[write("a", None), write("b", None)], Default::default())
        .await
        .unwrap();
    let results = committed.durable().await.unwrap();
    assert_eq!(results.len(), 2);
    assert!(results
        .iter()
        .all(|r| matches!(r.decision, Decision::Accept { .. })));
    wal.settle().await.unwrap();
    // The unsynced level was the batch's own: the next transaction syncs its commit again.
    let level: i64 = sqlx::query_scalar("PRAGMA synchronous")
        .fetch_one(store.sqlite_writer())
        .await
        .unwrap();
    assert_eq!(level, 2, "FULL");
    // And the plain path still commits with FULL, durable on return.
    store
        .apply_batch(&[write("a", None)], Default::default())
        .await
        .unwrap();
    store.close().await;
}

#[tokio::test]
async fn a_failed_sqlite_batch_commits_nothing_and_leaves_the_writer_usable() {
    let dir = tempfile::tempdir().unwrap();
    let url = format!("sqlite://{}", dir.path().join("x.db").display());
    let store = Store::open(&url, &Default::default()).await.unwrap();
    sqlx::query(
        "CREATE TRIGGER poison BEFORE INSERT ON audit WHEN NEW.resource = 'poison' \
         BEGIN SELECT RAISE(ABORT, 'poisoned write'); END",
    )
    .execute(store.sqlite_writer())
    .await
    .unwrap();
    // Two segments (the repeated operation starts the second); the second one's statement
    // fails after the first one's changes were made in the same transaction.
    let batch = [
        write("a", Some("op-1")),
        write("a", Some("op-1")),
        write("poison", None),
    ];
    assert_eq!(segments(&batch).len(), 2);
    let error = store
        .apply_batch_committed(&batch, Default::default())
        .await
        .err()
        .expect("the poisoned batch fails");
    assert!(error.to_string().contains("poisoned write"), "{error}");
    let a = ResourceKey::parse("a").unwrap();
    assert!(
        store.read_value(&a).await.unwrap().is_none(),
        "the first segment was rolled back with the rest"
    );

    // The writer is outside any transaction and syncs its commits again.
    let results = store
        .apply_batch(&[write("a", Some("op-1"))], Default::default())
        .await
        .unwrap();
    assert!(matches!(results[0].decision, Decision::Accept { .. }));
    assert!(store.read_value(&a).await.unwrap().is_some());
    let level: i64 = sqlx::query_scalar("PRAGMA synchronous")
        .fetch_one(store.sqlite_writer())
        .await
        .unwrap();
    assert_eq!(level, 2, "FULL");
    store.close().await;
}
