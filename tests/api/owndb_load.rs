//! Many writers with random generations on a few scopes of a protected table: the accepted
//! generation of a scope never goes down, whether read from the audit (in id order) or from the
//! table while the writers run, and every scope's chain verifies.

use crate::helpers::{Backend, Rng, UserDb};
use fencewatch::domain::fence_audit::check_chains;
use rstest::rstest;
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

const SCOPES: i64 = 4;

#[rstest]
// SQLite has one writer: fewer connections show the same.
#[case::sqlite(Backend::Sqlite, 4, 100)]
#[cfg_attr(
    not(fencewatch_pg),
    ignore = "needs PostgreSQL: set FENCEWATCH_TEST_PG"
)]
#[case::postgres(Backend::Postgres, 16, 200)]
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn accepted_generations_never_go_down_under_concurrent_writers(
    #[case] backend: Backend,
    #[case] connections: u64,
    #[case] writes: u64,
) {
    let (db, fence) = UserDb::with_protected_orders(backend).await;
    if backend == Backend::Sqlite {
        // Readers beside the writer, as a loaded SQLite application would run.
        db.run("PRAGMA journal_mode = WAL").await;
    }
    let mut setup = db.connect().await;
    for scope in 0..SCOPES {
        let inserted = setup
            .run(&format!(
                "INSERT INTO orders (id, tok, region, val) VALUES ({scope}, 1, 'r{scope}', 'start')"
            ))
            .await
            .unwrap();
        assert_eq!(inserted, 1);
    }
    setup.close().await;

    // A reader samples the table while the writers run: what it sees of a scope never goes down.
    let done = Arc::new(AtomicBool::new(false));
    let mut reader = db.connect().await;
    let reading = {
        let done = done.clone();
        tokio::spawn(async move {
            let mut seen = [1i64; SCOPES as usize];
            let mut samples = 0u64;
            while !done.load(Ordering::Relaxed) {
                for (scope, last) in seen.iter_mut().enumerate() {
                    let now = reader
                        .int(&format!("SELECT tok FROM orders WHERE id = {scope}"))
                        .await
                        .unwrap();
                    assert!(
                        now >= *last,
                        "scope r{scope} went from {last} down to {now}"
                    );
                    *last = now;
                }
                samples += 1;
                tokio::time::sleep(std::time::Duration::from_millis(2)).await;
            }
            reader.close().await;
            samples
        })
    };

    let mut writers = Vec::new();
    for writer in 0..connections {
        let mut conn = db.connect().await;
        writers.push(tokio::spawn(async move {
            let mut rng = Rng::new(0x5eed + writer);
            let mut applied = 0u64;
            for n in 0..writes {
                let scope = rng.below(SCOPES as u64);
                // Rising with the writer's progress, with noise: writers overtake each other.
                let token = 1 + n as i64 + rng.below(24) as i64;
                applied += conn
                    .run(&format!(
                        "UPDATE orders SET tok = {token}, val = 'w{writer}-{n}', \
                         who = 'writer-{writer}', op = 'w{writer}-{n}' WHERE id = {scope}"
                    ))
                    .await
                    .unwrap();
            }
            conn.close().await;
            applied
        }));
    }
    let mut applied = 0;
    for writer in writers {
        applied += writer.await.unwrap();
    }
    done.store(true, Ordering::Relaxed);
    let samples = reading.await.unwrap();
    assert!(samples > 0);

    fence.seal().await.unwrap();
    let rows = fence.audit_rows().await.unwrap();
    let attempts = connections * writes;
    assert_eq!(
        rows.len() as u64,
        attempts + SCOPES as u64,
        "one audit row per attempt, and one per first insert"
    );
    // In id order, each scope's accepted generations never go down, and every refusal was
    // below the scope's highest at the time.
    let mut highest: BTreeMap<&str, i64> = BTreeMap::new();
    let mut accepted = 0u64;
    for row in &rows {
        let token = row.token.unwrap();
        let high = highest.entry(&row.resource).or_insert(0);
        match row.outcome.as_str() {
            "accepted" => {
                assert!(
                    token >= *high,
                    "row {} accepted {token} after {high}",
                    row.id
                );
                *high = token;
                accepted += 1;
            }
            "stale" => assert!(token < *high, "row {} refused {token} at {high}", row.id),
            other => panic!("row {} is {other}", row.id),
        }
        assert_eq!(row.highest_token, *high, "row {}", row.id);
    }
    assert_eq!(
        accepted,
        applied + SCOPES as u64,
        "the audit agrees with the rows written"
    );
    assert!(
        applied > 0 && applied < attempts,
        "some writes were refused"
    );
    // The table ends at each scope's highest accepted generation.
    db.grant_audit_reads().await;
    let mut conn = db.connect().await;
    for scope in 0..SCOPES {
        let token = conn
            .int(&format!("SELECT tok FROM orders WHERE id = {scope}"))
            .await
            .unwrap();
        assert_eq!(token, highest[format!("r{scope}").as_str()]);
        let recorded = conn
            .int(&format!(
                "SELECT highest_token FROM {} WHERE scope = 'r{scope}'",
                db.scopes_table()
            ))
            .await
            .unwrap();
        assert_eq!(recorded, token);
        // The chain's head kept in the scope's row is its last row.
        let head = conn
            .int(&format!(
                "SELECT head_seq FROM {} WHERE scope = 'r{scope}'",
                db.scopes_table()
            ))
            .await
            .unwrap();
        let scope = format!("r{scope}");
        let last = rows
            .iter()
            .filter(|row| row.resource == scope)
            .map(|row| row.seq)
            .max();
        assert_eq!(Some(head), last, "{scope}");
    }
    conn.close().await;
    println!(
        "{backend:?}: {attempts} writes, {applied} accepted, {} refused, {samples} table samples",
        attempts - applied
    );
    let check = check_chains(&rows);
    assert!(check.intact(), "{:?}", check.breaches);
    assert_eq!((check.scopes, check.unsealed), (SCOPES as usize, 0));
}
