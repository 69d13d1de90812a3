//! The audit's digests stored as bytes (migration 24): an audit written by the build before,
//! digests as hex text, still verifies once migrated, reads back the same hex, keeps its ids
//! and chains going, and a change to a migrated row is still caught.

use crate::both_backends;
use crate::helpers::{Backend, RawPool};
use crate::interleaving::write_for;
use crate::on_raw;
use crate::test_db;
use chrono::{SubsecRound, Utc};
use fencewatch::domain::chain::{row_hash, GENESIS};
use fencewatch::domain::{AuditEntry, Decision, LeasePolicy, Outcome};
use fencewatch::store::{AuditFilter, AuditWalk};
use rstest_reuse::apply;
use sha2::{Digest, Sha256};
use tokio::process::Command;

const BIN: &str = env!("CARGO_BIN_EXE_fencewatch");
/// The first migration that stores digests as bytes.
const BYTES_MIGRATION: &str = "20261204000024";

fn entry(resource: &str, outcome: Outcome, token: i64, body: Option<&str>) -> AuditEntry {
    AuditEntry {
        id: 0,
        at: Utc::now().trunc_subsecs(6),
        resource: resource.into(),
        outcome,
        token: Some(token),
        highest_token: token,
        revision: 1,
        idempotency_key: None,
        expected_revision: None,
        owner: Some("worker-1".into()),
        lease: None,
        body_sha256: body.map(|b| hex::encode(Sha256::digest(b.as_bytes()))),
        body_len: body.map(|b| b.len() as i64),
        detail: None,
        caller: None,
        source: None,
    }
}

/// Inserts a row as the build before wrote it (digests as hex text); answers its hash.
async fn insert_hex(pool: &RawPool, entry: &AuditEntry, seq: i64, prev: &str) -> String {
    let hash = row_hash(entry, seq, prev);
    on_raw!(pool, h => sqlx::query(
        "INSERT INTO audit (at_us, resource, outcome, token, highest_token, revision, \
         owner, body_sha256, body_len, seq, prev_hash, hash) \
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12)",
    )
    .bind(entry.at.timestamp_micros())
    .bind(entry.resource.as_str())
    .bind(entry.outcome.as_str())
    .bind(entry.token)
    .bind(entry.highest_token)
    .bind(entry.revision)
    .bind(entry.owner.as_deref())
    .bind(entry.body_sha256.as_deref())
    .bind(entry.body_len)
    .bind(seq)
    .bind(prev)
    .bind(hash.as_str())
    .execute(h)
    .await
    .unwrap()
    .rows_affected());
    hash
}

async fn count(pool: &RawPool, sql: &str) -> i64 {
    on_raw!(pool, h => sqlx::query_scalar(sql).fetch_one(h).await.unwrap())
}

async fn verify_exit(url: &str) -> (i32, String) {
    let output = Command::new(BIN)
        .args(["audit", "--database", url, "verify"])
        .env("FENCEWATCH_LOG", "warn")
        .output()
        .await
        .unwrap();
    (
        output.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&output.stdout).into_owned(),
    )
}

#[apply(both_backends)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_audit_with_hex_digests_verifies_after_the_migration_to_bytes(#[case] backend: Backend) {
    let db = test_db!(backend);
    let folder = match backend {
        Backend::Sqlite => "migrations/sqlite",
        Backend::Postgres => "migrations/postgres",
    };
    // The schema as the build before left it: every migration before the one under test.
    let earlier = tempfile::tempdir().unwrap();
    let source = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join(folder);
    for file in std::fs::read_dir(&source).unwrap() {
        let path = file.unwrap().path();
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        if name.as_str() < BYTES_MIGRATION {
            std::fs::copy(&path, earlier.path().join(&name)).unwrap();
        }
    }
    let pool = db.raw_pool().await;
    let migrator = sqlx::migrate::Migrator::new(earlier.path()).await.unwrap();
    on_raw!(&pool, h => migrator.run(h).await.unwrap());

    // A written resource of three rows (one stale, without a body), and one whose first row
    // was pruned behind a checkpoint.
    let key = "old/written";
    let mut prev = GENESIS.to_owned();
    let mut hashes = Vec::new();
    for (seq, (outcome, token, body)) in [
        (Outcome::Accepted, 1, Some("one")),
        (Outcome::Stale, 0, None),
        (Outcome::Accepted, 2, Some("two")),
    ]
    .into_iter()
    .enumerate()
    {
        let seq = seq as i64 + 1;
        prev = insert_hex(&pool, &entry(key, outcome, token, body), seq, &prev).await;
        hashes.push(prev.clone());
    }
    let pruned = "old/pruned";
    let checkpoint = "ab".repeat(32);
    let pruned_hash = insert_hex(
        &pool,
        &entry(pruned, Outcome::Accepted, 4, Some("four")),
        2,
        &checkpoint,
    )
    .await;
    // Each resource as its last row left it (`verify` holds the state to the audit too).
    for (resource, head) in [(key, &hashes[2]), (pruned, &pruned_hash)] {
        let (seq, highest, value) = if resource == key {
            (3, 2, "two")
        } else {
            (2, 4, "four")
        };
        on_raw!(&pool, h => sqlx::query(
            "INSERT INTO resources (key, highest_token, revision, value, updated_at_us, \
             chain_seq, chain_hash) VALUES ($1, $2, 1, $3, 0, $4, $5)",
        )
        .bind(resource)
        .bind(highest)
        .bind(value.as_bytes())
        .bind(seq)
        .bind(head.as_str())
        .execute(h)
        .await
        .unwrap()
        .rows_affected());
    }
    on_raw!(&pool, h => sqlx::query(
        "INSERT INTO audit_checkpoints (resource, seq, hash, pruned_at_us) VALUES ($1, 1, $2, 0)",
    )
    .bind(pruned)
    .bind(checkpoint.as_str())
    .execute(h)
    .await
    .unwrap()
    .rows_affected());
    let (code, report) = verify_exit(&db.url).await;
    assert_ne!(
        code, 0,
        "the build before's schema is refused as older: {report}"
    );
    let last_before = count(&pool, "SELECT MAX(id) FROM audit").await;
    if backend == Backend::Sqlite {
        // Ids issued and since deleted are never issued again.
        on_raw!(&pool, h => sqlx::query("UPDATE sqlite_sequence SET seq = 1000 WHERE name = 'audit'")
            .execute(h)
            .await
            .unwrap()
            .rows_affected());
    }
    pool.close().await;

    // Opening the store migrates.
    let store = db.store().await;
    let pool = db.raw_pool().await;
    assert_eq!(
        count(
            &pool,
            "SELECT COUNT(*) FROM audit WHERE length(hash) = 32 AND length(prev_hash) = 32 \
             AND (body_sha256 IS NULL OR length(body_sha256) = 32)"
        )
        .await,
        4,
        "every digest is now its 32 bytes"
    );
    let report = store.verify_audit().await.unwrap();
    assert!(report.breaches.is_empty(), "{:?}", report.breaches);
    assert_eq!((report.rows, report.unchained), (4, 0));
    let (code, human) = verify_exit(&db.url).await;
    assert_eq!(code, 0, "{human}");

    // Read back as the same hex, the body's digest too.
    let mut read = Vec::new();
    store
        .each_audit_record(
            &AuditFilter {
                resource: Some(key.into()),
                ..AuditFilter::default()
            },
            AuditWalk::ALL,
            |record| {
                read.push(record.clone());
                Ok::<_, fencewatch::store::StoreError>(())
            },
        )
        .await
        .unwrap();
    let read_hashes: Vec<_> = read.iter().map(|r| r.hash.clone().unwrap()).collect();
    assert_eq!(read_hashes, hashes);
    assert_eq!(read[1].prev_hash.as_deref(), Some(hashes[0].as_str()));
    assert_eq!(
        read[0].entry.body_sha256,
        Some(hex::encode(Sha256::digest(b"one")))
    );
    assert_eq!(read[1].entry.body_sha256, None);

    // The chains go on, with ids after every one issued before.
    let policy = LeasePolicy::default();
    let result = store
        .unchecked_writes()
        .apply_write(&write_for(key, 5, "after"), policy)
        .await
        .unwrap();
    assert!(matches!(result.decision, Decision::Accept { .. }));
    let newest = count(&pool, "SELECT MAX(id) FROM audit").await;
    let floor = if backend == Backend::Sqlite {
        1000
    } else {
        last_before
    };
    assert!(newest > floor, "id {newest} after {floor}");
    let report = store.verify_audit().await.unwrap();
    assert!(report.breaches.is_empty(), "{:?}", report.breaches);
    assert_eq!(report.rows, 5);

    // A migrated row changed by hand is caught.
    on_raw!(&pool, h => sqlx::query(
        "UPDATE audit SET owner = 'mallory' WHERE resource = $1 AND seq = 2",
    )
    .bind(key)
    .execute(h)
    .await
    .unwrap()
    .rows_affected());
    let (code, human) = verify_exit(&db.url).await;
    assert_eq!(code, 1, "{human}");
    assert!(human.contains(key), "{human}");
}
