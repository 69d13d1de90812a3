//! The audit's hash is computed twice: by the database (PostgreSQL's installed `row_hash()`) and
//! by fencewatch (`domain::fence_audit::row_hash`, which also seals SQLite's rows). They must
//! agree byte for byte on every text, or an intact audit would not verify: quotes, backslashes,
//! control characters, non-ASCII.

use crate::both_backends;
use crate::helpers::{Backend, Guard, Rng, UserDb};
use chrono::DateTime;
use fencewatch::domain::fence_audit::{row_hash, ChainFault, FenceAuditRow};
use fencewatch::owndb::InstallOptions;
use rstest_reuse::apply;
use sqlx::Connection;

/// Characters JSON escapes one way or another, or that a naive encoding would get wrong.
const TRICKY: &[char] = &[
    'a', 'Z', '0', ' ', '"', '\\', '/', '\'', '\n', '\r', '\t', '\u{8}', '\u{c}', '\u{1}',
    '\u{1f}', '\u{7f}', 'é', 'ß', '中', '😀', '\u{2028}', '\u{feff}', '%', '$', '[', ',', ']', 'u',
];

fn tricky(rng: &mut Rng, max_len: u64) -> String {
    (0..rng.below(max_len + 1))
        .map(|_| TRICKY[rng.below(TRICKY.len() as u64) as usize])
        .collect()
}

fn maybe(rng: &mut Rng) -> Option<String> {
    match rng.below(4) {
        0 => None,
        _ => Some(tricky(rng, 12)),
    }
}

fn random_row(rng: &mut Rng) -> FenceAuditRow {
    let mut resource = tricky(rng, 10);
    resource.push('s');
    FenceAuditRow {
        id: 0,
        at: DateTime::from_timestamp_micros(1_700_000_000_000_000 + rng.below(1 << 40) as i64)
            .unwrap(),
        resource,
        outcome: [
            "accepted",
            "replayed",
            "stale",
            "superseded",
            "unauthorized",
            "invalid",
        ][rng.below(6) as usize]
            .into(),
        token: (rng.below(5) > 0).then(|| rng.below(1 << 50) as i64),
        highest_token: rng.below(1 << 50) as i64,
        idempotency_key: maybe(rng),
        owner: maybe(rng),
        lease: maybe(rng),
        detail: maybe(rng),
        table_name: maybe(rng),
        seq: 1 + rng.below(1 << 30) as i64,
        prev_hash: None,
        hash: None,
    }
}

/// 300 random rows: PostgreSQL's `row_hash()` and fencewatch's agree on each.
#[cfg_attr(
    not(fencewatch_pg),
    ignore = "needs PostgreSQL: set FENCEWATCH_TEST_PG"
)]
#[tokio::test]
async fn postgres_and_fencewatch_hash_every_row_alike() {
    let db = UserDb::new(Backend::Postgres).await;
    db.fence()
        .await
        .install(&InstallOptions::default())
        .await
        .unwrap();
    let mut conn = sqlx::PgConnection::connect(&db.url).await.unwrap();
    let mut rng = Rng::new(36);
    for case in 0..300 {
        let row = random_row(&mut rng);
        let prev = match case % 3 {
            0 => "0".repeat(64),
            _ => format!("{:064x}", rng.below(u64::MAX)),
        };
        let in_sql: String = sqlx::query_scalar(
            "SELECT encode(fencewatch.row_hash($1, \
                    to_timestamp(0) + $2 * interval '1 microsecond', \
                    $3, $4, $5, $6, $7, $8, $9, $10, $11, decode($12, 'hex')), 'hex')",
        )
        .bind(row.seq)
        .bind(row.at.timestamp_micros())
        .bind(&row.resource)
        .bind(&row.outcome)
        .bind(row.token)
        .bind(row.highest_token)
        .bind(&row.idempotency_key)
        .bind(&row.owner)
        .bind(&row.lease)
        .bind(&row.detail)
        .bind(&row.table_name)
        .bind(&prev)
        .fetch_one(&mut conn)
        .await
        .unwrap();
        assert_eq!(in_sql, row_hash(&row, &prev), "case {case}: {row:?}");
    }
    conn.close().await.unwrap();
}

/// Rows the fence itself wrote with tricky owners and op ids verify (PostgreSQL: hashed by SQL;
/// SQLite: sealed by fencewatch), and changing one breaks its chain at that row.
#[apply(both_backends)]
#[tokio::test]
async fn rows_written_with_any_text_verify_and_a_change_breaks_them(#[case] backend: Backend) {
    let db = UserDb::new(backend).await;
    let fence = db.fence().await;
    fence.install(&InstallOptions::default()).await.unwrap();
    db.grant_guard().await;
    let mut conn = db.connect().await;
    let mut rng = Rng::new(7);
    for token in 1..=60 {
        let owner = tricky(&mut rng, 16);
        let op = tricky(&mut rng, 16);
        let scope = ["a\"b", "c\\d", "é中😀"][rng.below(3) as usize];
        // Every third one stale: refusals carry a detail too.
        let token = if token % 3 == 0 { 1 } else { token };
        let answer = conn
            .guard(scope, Some(token), Some(&op), Some(&owner), None)
            .await;
        // Autocommit: on SQLite too a refusal's row is kept with its statement's transaction.
        assert!(
            matches!(&answer, Guard::Accepted | Guard::Refused { .. }),
            "{answer:?}"
        );
    }
    fence.seal().await.unwrap();
    let check = fence.verify().await.unwrap();
    assert!(check.intact(), "{:?}", check.breaches);
    assert_eq!((check.rows, check.scopes, check.unsealed), (60, 3, 0));
    let rows = fence.audit_rows().await.unwrap();
    assert!(rows.iter().any(|row| row.outcome == "stale"));

    let victim = &rows[rows.len() / 2];
    // Someone who may write the database (its administrator) changes a row.
    let mut admin = db.connect_admin().await;
    admin
        .run(&format!(
            "UPDATE {} SET owner = 'someone else' WHERE id = {}",
            db.audit_table(),
            victim.id
        ))
        .await
        .unwrap();
    let check = fence.verify().await.unwrap();
    assert_eq!(check.breaches.len(), 1);
    assert_eq!(check.breaches[0].id, victim.id);
    assert_eq!(check.breaches[0].fault, ChainFault::Altered);
    conn.close().await;
}
