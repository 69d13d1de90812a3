//! A full `audit verify` over rows whose strings hold any character: on SQLite the run hashes
//! an encoding SQLite builds of each row (`json_array`), which must be the one `row_hash`
//! encodes, so such rows verify clean without being read again; a change to any field is still
//! caught, and a row whose encoding does not match is read again whole before it is reported.

use crate::both_backends;
use crate::helpers::{Backend, RawPool};
use crate::on_raw;
use crate::test_db;
use chrono::{DateTime, SubsecRound, Utc};
use fencewatch::domain::chain::{row_hash, GENESIS};
use fencewatch::domain::{AuditEntry, Outcome};
use rstest_reuse::apply;
use tokio::process::Command;

const BIN: &str = env!("CARGO_BIN_EXE_fencewatch");

/// Strings a writer's owner, key, lease or caller, or a detail, might hold: every ASCII
/// character (NUL only where the database stores it), the escaped ones together, and some
/// beyond ASCII.
fn strings(backend: Backend) -> Vec<String> {
    let first = if backend == Backend::Sqlite { 0 } else { 1 };
    let mut strings: Vec<String> = (first..0x80u32)
        .filter_map(char::from_u32)
        .map(|c| format!("a{c}b"))
        .collect();
    strings.extend(
        [
            "\"quoted\"",
            "back\\slash",
            "\\\"",
            "'single'",
            "</script>",
            "",
            "é ß 日本語",
            "😀 emoji 👩‍👩‍👧",
            "\u{80}\u{9f}\u{a0}",
            "\u{2028}\u{2029}",
            "\u{feff}\u{fffd}\u{10ffff}",
            "a\"b\\c\n\td\u{1}\u{1f}\u{7f}😀",
        ]
        .map(str::to_owned),
    );
    strings
}

/// A row of `resource` carrying `text` in every free-text field; `n` varies the others,
/// NULLs and extreme numbers included.
fn entry(resource: &str, text: &str, n: i64, base: DateTime<Utc>) -> AuditEntry {
    let some = |every: i64| (n % every != 0).then(|| text.to_owned());
    AuditEntry {
        id: 0,
        at: base + chrono::Duration::microseconds(n),
        resource: resource.into(),
        outcome: if n % 5 == 0 {
            Outcome::Stale
        } else {
            Outcome::Accepted
        },
        token: (n % 7 != 0).then_some(if n == 1 { i64::MIN } else { n }),
        highest_token: if n == 2 { i64::MAX } else { n },
        revision: n,
        idempotency_key: some(3),
        expected_revision: (n % 4 == 0).then_some(-n),
        owner: Some(text.to_owned()),
        lease: some(4),
        body_sha256: (n % 2 == 0).then(|| format!("{n:064x}")),
        body_len: (n % 2 == 0).then_some(0),
        detail: some(6),
        caller: some(5),
        source: None,
    }
}

/// Appends `entry` to its chain after `prev` at `seq`, digests as bytes; answers its id and
/// hash.
async fn insert(pool: &RawPool, entry: &AuditEntry, seq: i64, prev: &str) -> (i64, String) {
    let hash = row_hash(entry, seq, prev);
    let bytes = |hex_text: &str| hex::decode(hex_text).unwrap();
    let id = on_raw!(pool, h => sqlx::query_scalar(
        "INSERT INTO audit (at_us, resource, outcome, token, highest_token, revision, \
         idempotency_key, expected_revision, owner, lease, body_sha256, body_len, detail, \
         caller, seq, prev_hash, hash) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, \
         $12, $13, $14, $15, $16, $17) RETURNING id",
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
    .bind(entry.body_sha256.as_deref().map(bytes))
    .bind(entry.body_len)
    .bind(entry.detail.as_deref())
    .bind(entry.caller.as_deref())
    .bind(seq)
    .bind(bytes(prev))
    .bind(bytes(&hash))
    .fetch_one(h)
    .await
    .unwrap());
    (id, hash)
}

async fn execute(pool: &RawPool, sql: &str, text: &str, id: i64) {
    on_raw!(pool, h => sqlx::query(sql)
        .bind(text)
        .bind(id)
        .execute(h)
        .await
        .unwrap()
        .rows_affected());
}

#[apply(both_backends)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rows_with_any_characters_verify_and_a_changed_one_is_caught(#[case] backend: Backend) {
    let db = test_db!(backend);
    let store = db.store().await;
    let pool = db.raw_pool().await;
    // The resource's name is in the encoding too, and in SQLite's pages of records
    // (`store::verify::pages`): the last one looks like records themselves.
    let resources = [
        "strings/plain",
        "strings/\"é😀\\\n\u{7f}",
        "1,2,3:x-,-,0:4,,1:y-,-,",
    ];
    let texts = strings(backend);
    // Now, where PostgreSQL's audit has a partition.
    let base = Utc::now().trunc_subsecs(6);
    let mut ids = Vec::new();
    for resource in resources {
        let mut prev = GENESIS.to_owned();
        for (n, text) in texts.iter().enumerate() {
            let seq = n as i64 + 1;
            let (id, hash) = insert(&pool, &entry(resource, text, seq, base), seq, &prev).await;
            ids.push(id);
            prev = hash;
        }
        on_raw!(&pool, h => sqlx::query("INSERT INTO chain_heads (resource, seq, hash) VALUES ($1, $2, $3)")
            .bind(resource)
            .bind(texts.len() as i64)
            .bind(prev.as_str())
            .execute(h)
            .await
            .unwrap()
            .rows_affected());
    }
    let rows = ids.len() as u64;

    let report = store.verify_audit().await.unwrap();
    assert!(report.breaches.is_empty(), "{:?}", report.breaches);
    assert_eq!((report.rows, report.unchained), (rows, 0));
    assert_eq!(report.rechecked, 0, "every row's encoding matched its hash");

    // A detail changed, far into the second chain: caught there, after one
    // row read again on SQLite.
    let changed = ids[ids.len() - 3];
    let detail = "changed \u{2028}";
    execute(
        &pool,
        "UPDATE audit SET detail = $1 WHERE id = $2",
        detail,
        changed,
    )
    .await;
    let report = store.verify_audit().await.unwrap();
    assert_eq!(report.breaches.len(), 1, "{:?}", report.breaches);
    let breach = &report.breaches[0];
    assert_eq!(
        (breach.resource.as_str(), breach.audit_id),
        (resources[2], Some(changed))
    );
    assert!(breach.problem.contains("changed"), "{breach:?}");
    assert_eq!(report.rows, rows, "the rows after it are still counted");
    let expected_rechecks = u64::from(backend == Backend::Sqlite);
    assert_eq!(report.rechecked, expected_rechecks);

    // An earlier change in the same chain is the one reported, though found only when the
    // doubted rows are read again: the walk went on past it.
    let earlier = ids[2 * texts.len() + 2];
    execute(
        &pool,
        "UPDATE audit SET owner = $1 WHERE id = $2",
        "mallory",
        earlier,
    )
    .await;
    let report = store.verify_audit().await.unwrap();
    assert_eq!(report.breaches.len(), 1, "{:?}", report.breaches);
    assert_eq!(report.breaches[0].audit_id, Some(earlier));
    assert_eq!(report.rechecked, 2 * expected_rechecks);

    // The command says so too.
    let output = Command::new(BIN)
        .args(["audit", "--database", &db.url, "verify"])
        .env("FENCEWATCH_LOG", "warn")
        .output()
        .await
        .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert_eq!(output.status.code(), Some(1), "{stdout}");
    assert!(
        stdout.contains(&format!("at audit row {earlier}")),
        "{stdout}"
    );
}
