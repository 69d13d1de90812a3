//! PostgreSQL's audit is partitioned by day: the migration moves the existing rows into their
//! days, the daemons make the coming days' partitions, a row of a day without one lands in the
//! default partition, and a prune drops whole days behind checkpoints that keep the rest
//! verifiable, with no row deleted from what is kept.

use crate::helpers::{Backend, Raw, TestDb};
use crate::test_db;
use chrono::{DateTime, Utc};
use fencewatch::domain::clock::{Clock, ManualClock};
use fencewatch::domain::{FencedWrite, FencingToken, LeasePolicy, ResourceKey};
use fencewatch::store::{PartitionsAhead, Store, StoreOptions};
use sqlx::PgPool;
use std::sync::Arc;
use std::time::Duration;
use tokio::process::Command;

const DAY: Duration = Duration::from_secs(24 * 60 * 60);
const DAY_US: i64 = 86_400_000_000;

/// Noon, `days_ago` days before today (UTC).
fn noon(days_ago: i64) -> DateTime<Utc> {
    let today = Utc::now().timestamp().div_euclid(86_400);
    DateTime::from_timestamp((today - days_ago) * 86_400 + 12 * 3600, 0).unwrap()
}

/// The partition name of the day `at` falls in.
fn day_of(at: DateTime<Utc>) -> String {
    format!("audit_{}", at.format("%Y%m%d"))
}

/// The test's own connection to the database.
async fn pg(db: &TestDb) -> PgPool {
    match db.raw_pool().await {
        Raw::Postgres(pool) => pool,
        Raw::Sqlite(_) => panic!("these tests are PostgreSQL's"),
    }
}

async fn store_at(db: &TestDb, clock: Arc<ManualClock>) -> Store {
    Store::open(
        &db.url,
        &StoreOptions {
            max_connections: 4,
            clock,
            ..StoreOptions::default()
        },
    )
    .await
    .unwrap()
}

/// One write to each resource, `token` its generation.
async fn write(store: &Store, resources: &[&str], token: i64) {
    let writes: Vec<FencedWrite> = resources
        .iter()
        .map(|resource| {
            FencedWrite::new(
                ResourceKey::parse(*resource).unwrap(),
                FencingToken::new(token).unwrap(),
                format!("v{token}"),
            )
        })
        .collect();
    let results = store
        .unchecked_writes()
        .apply_batch(&writes, LeasePolicy::default())
        .await
        .unwrap();
    assert_eq!(results.len(), resources.len());
}

/// The audit's leaf partitions, by name.
async fn partitions(pool: &PgPool) -> Vec<String> {
    sqlx::query_scalar(
        "SELECT c.relname::text FROM pg_partition_tree('audit') AS t \
         JOIN pg_class AS c ON c.oid = t.relid WHERE t.isleaf ORDER BY 1",
    )
    .fetch_all(pool)
    .await
    .unwrap()
}

/// Rows of the audit by the partition holding them.
async fn rows_by_partition(pool: &PgPool) -> Vec<(String, i64)> {
    let mut rows: Vec<(String, i64)> =
        sqlx::query_as("SELECT tableoid::regclass::text, count(*) FROM audit GROUP BY 1")
            .fetch_all(pool)
            .await
            .unwrap();
    rows.sort();
    rows
}

async fn relations_named(pool: &PgPool, names: &[String]) -> i64 {
    sqlx::query_scalar(
        "SELECT count(*) FROM pg_class WHERE relname = ANY($1) \
         AND relnamespace = current_schema()::regnamespace",
    )
    .bind(names)
    .fetch_one(pool)
    .await
    .unwrap()
}

/// `fencewatch audit verify` exits 0.
async fn assert_verifies(db: &TestDb) {
    let output = Command::new(env!("CARGO_BIN_EXE_fencewatch"))
        .args(["audit", "--database", &db.url, "verify"])
        .output()
        .await
        .unwrap();
    assert!(
        output.status.success(),
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
}

/// A database migrated up to before the audit was partitioned, with rows on three days and one
/// before 1970: after the migration each is in its day's partition (that one in the default),
/// ids carry on from the old table's, and new rows go where their day says.
#[cfg_attr(
    not(fencewatch_pg),
    ignore = "needs PostgreSQL: set FENCEWATCH_TEST_PG"
)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_migration_moves_existing_rows_into_their_days() {
    let db = test_db!(Backend::Postgres);
    let earlier = tempfile::tempdir().unwrap();
    let source = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("migrations/postgres");
    for file in std::fs::read_dir(&source).unwrap() {
        let path = file.unwrap().path();
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        if name.as_str() < "20261203000023" {
            std::fs::copy(&path, earlier.path().join(&name)).unwrap();
        }
    }
    let pool = pg(&db).await;
    let migrator = sqlx::migrate::Migrator::new(earlier.path()).await.unwrap();
    migrator.run(&pool).await.unwrap();
    let days = [noon(9), noon(8), noon(8), noon(2)];
    let mut times: Vec<i64> = days.iter().map(DateTime::timestamp_micros).collect();
    times.push(-5 * DAY_US);
    for at_us in &times {
        sqlx::query(
            "INSERT INTO audit (at_us, resource, outcome, highest_token, revision) \
             VALUES ($1, 'old/row', 'accepted', 1, 1)",
        )
        .bind(at_us)
        .execute(&pool)
        .await
        .unwrap()
        .rows_affected();
    }
    let old_max: i64 = sqlx::query_scalar("SELECT max(id) FROM audit")
        .fetch_one(&pool)
        .await
        .unwrap();
    pool.close().await;

    let clock = Arc::new(ManualClock::starting_at(noon(0)));
    let store = store_at(&db, clock.clone()).await;
    let pool = pg(&db).await;
    let partitioned: bool =
        sqlx::query_scalar("SELECT relkind = 'p' FROM pg_class WHERE oid = 'audit'::regclass")
            .fetch_one(&pool)
            .await
            .unwrap();
    assert!(partitioned, "the audit is not a partitioned table");
    let mut expected = vec![
        (day_of(noon(9)), 1),
        (day_of(noon(8)), 2),
        (day_of(noon(2)), 1),
        ("audit_default".to_owned(), 1),
    ];
    expected.sort();
    assert_eq!(rows_by_partition(&pool).await, expected);
    // Today's and the next three days' partitions are there, empty.
    let made = partitions(&pool).await;
    for ahead in 0..=3 {
        assert!(made.contains(&day_of(noon(-ahead))), "{made:?}");
    }

    // New rows take ids after the old ones, by the sequence the write path draws from, and
    // land in today's partition.
    write(&store, &["new/row"], 1).await;
    let (id, partition): (i64, String) =
        sqlx::query_as("SELECT id, tableoid::regclass::text FROM audit WHERE resource = 'new/row'")
            .fetch_one(&pool)
            .await
            .unwrap();
    assert!(id > old_max, "id {id} after {old_max}");
    assert_eq!(partition, day_of(noon(0)));
    let sequence: Option<String> =
        sqlx::query_scalar("SELECT pg_get_serial_sequence('audit', 'id')")
            .fetch_one(&pool)
            .await
            .unwrap();
    assert!(
        sequence.is_some_and(|s| s.ends_with("audit_id_seq")),
        "the id sequence is not the column's"
    );
}

/// Rows on four days; a prune before the third drops the first two days' partitions whole (gone
/// from the catalogue, not emptied row by row), leaves every row of the other days, and what
/// remains verifies. A prune inside a day deletes that day's older rows one by one and keeps
/// its partition.
#[cfg_attr(
    not(fencewatch_pg),
    ignore = "needs PostgreSQL: set FENCEWATCH_TEST_PG"
)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_prune_drops_whole_days_and_what_remains_verifies() {
    let db = test_db!(Backend::Postgres);
    let start = noon(6);
    let clock = Arc::new(ManualClock::starting_at(start));
    let store = store_at(&db, clock.clone()).await;
    let resources = ["days/a", "days/b", "days/c"];
    let mut token = 0;
    for _day in 0..4 {
        for _ in 0..5 {
            token += 1;
            write(&store, &resources, token).await;
            clock.advance(Duration::from_secs(60));
        }
        clock.advance(DAY - Duration::from_secs(5 * 60));
    }
    let pool = pg(&db).await;
    let before = partitions(&pool).await;
    let first_days = vec![day_of(start), day_of(start + DAY)];
    for day in &first_days {
        assert!(before.contains(day), "{before:?}");
    }

    // Midnight at the start of the third day.
    let third_day = (start + 2 * DAY).timestamp_micros().div_euclid(DAY_US) * DAY_US;
    let report = store.prune_audit(third_day).await.unwrap();
    assert_eq!((report.rows, report.resources), (2 * 5 * 3, 3));
    let after = partitions(&pool).await;
    assert_eq!(after.len(), before.len() - 2, "{before:?} → {after:?}");
    assert_eq!(relations_named(&pool, &first_days).await, 0, "{after:?}");
    assert_eq!(
        rows_by_partition(&pool).await,
        vec![(day_of(start + 2 * DAY), 15), (day_of(start + 3 * DAY), 15)]
    );
    let checkpoints: Vec<(String, i64)> =
        sqlx::query_as("SELECT resource, seq FROM audit_checkpoints ORDER BY resource")
            .fetch_all(&pool)
            .await
            .unwrap();
    assert_eq!(
        checkpoints,
        resources
            .iter()
            .map(|r| (r.to_string(), 10))
            .collect::<Vec<_>>()
    );
    assert_verifies(&db).await;

    // Two minutes into the third day: its first two rows of each chain go one by one, the
    // partition stays.
    let report = store
        .prune_audit(third_day + 12 * 3600 * 1_000_000 + 90_000_000)
        .await
        .unwrap();
    assert_eq!((report.rows, report.resources), (2 * 3, 3));
    assert_eq!(partitions(&pool).await, after);
    assert_verifies(&db).await;
}

/// A daemon's clock months ahead or behind the others': its rows land in partitions of its own
/// days, made when it starts. A day it reaches without a partition sends its rows to the
/// default one; making that day's partition afterwards is skipped, not failed, and everything
/// verifies and prunes.
#[cfg_attr(
    not(fencewatch_pg),
    ignore = "needs PostgreSQL: set FENCEWATCH_TEST_PG"
)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rows_of_a_clock_far_off_land_in_a_partition_or_the_default() {
    let db = test_db!(Backend::Postgres);
    let ahead = Arc::new(ManualClock::starting_at(noon(-200)));
    let behind = Arc::new(ManualClock::starting_at(noon(200)));
    let (fast, slow) = (
        store_at(&db, ahead.clone()).await,
        store_at(&db, behind.clone()).await,
    );
    write(&fast, &["skew/a"], 1).await;
    write(&slow, &["skew/a"], 2).await;
    // A month on without anything making partitions: that day has none yet.
    ahead.advance(30 * DAY);
    write(&fast, &["skew/a", "skew/b"], 3).await;
    let pool = pg(&db).await;
    let mut expected = vec![
        (day_of(noon(-200)), 1),
        (day_of(noon(200)), 1),
        ("audit_default".to_owned(), 2),
    ];
    expected.sort();
    assert_eq!(rows_by_partition(&pool).await, expected);

    let made = fast.ensure_audit_partitions().await.unwrap();
    assert_eq!(
        made,
        PartitionsAhead {
            created: 3,
            held_by_default: 1,
            ..PartitionsAhead::default()
        }
    );
    // The day held by the default keeps its rows there; later ones go to their partitions.
    write(&fast, &["skew/b"], 4).await;
    ahead.advance(DAY);
    write(&fast, &["skew/b"], 5).await;
    let rows = rows_by_partition(&pool).await;
    assert!(rows.contains(&("audit_default".to_owned(), 3)), "{rows:?}");
    assert!(rows.contains(&(day_of(noon(-231)), 1)), "{rows:?}");
    assert_verifies(&db).await;

    // Everything before the far-ahead days: the behind daemon's day goes whole, and the rows
    // the far-ahead daemon wrote before it are cut at their chain's checkpoint.
    let report = slow
        .prune_audit(noon(-100).timestamp_micros())
        .await
        .unwrap();
    assert_eq!(report.rows, 2, "{report:?}");
    assert!(!partitions(&pool).await.contains(&day_of(noon(200))));
    assert_verifies(&db).await;
}

/// Daemons' clocks a little apart: one ahead by two days writes a resource's fourth row into a
/// later day's partition while the others write its first three and fifth today. Dropping
/// today's partition checkpoints the chain at its fifth row, so the fourth, in a day that is
/// kept, must go too, or the chain would start before its checkpoint.
#[cfg_attr(
    not(fencewatch_pg),
    ignore = "needs PostgreSQL: set FENCEWATCH_TEST_PG"
)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_chain_row_written_into_a_later_day_goes_with_its_checkpoint() {
    let db = test_db!(Backend::Postgres);
    let clock = Arc::new(ManualClock::starting_at(noon(5)));
    let early = Arc::new(ManualClock::starting_at(noon(3)));
    let (store, ahead) = (
        store_at(&db, clock.clone()).await,
        store_at(&db, early.clone()).await,
    );
    for token in 1..=3 {
        write(&store, &["skewed/r", "plain/r"], token).await;
    }
    write(&ahead, &["skewed/r"], 4).await;
    write(&store, &["skewed/r"], 5).await;
    clock.advance(3 * DAY);
    write(&store, &["skewed/r", "plain/r"], 6).await;
    let pool = pg(&db).await;
    let mut expected = vec![
        (day_of(noon(5)), 7),
        (day_of(noon(3)), 1),
        (day_of(noon(2)), 2),
    ];
    expected.sort();
    assert_eq!(rows_by_partition(&pool).await, expected);

    let report = store.prune_audit(noon(4).timestamp_micros()).await.unwrap();
    assert_eq!((report.rows, report.resources), (8, 2), "{report:?}");
    let left: Vec<(String, i64)> =
        sqlx::query_as("SELECT resource, seq FROM audit ORDER BY resource, seq")
            .fetch_all(&pool)
            .await
            .unwrap();
    assert_eq!(
        left,
        vec![("plain/r".to_owned(), 4), ("skewed/r".to_owned(), 6)]
    );
    assert_verifies(&db).await;
}

/// Daemons starting together, and their retention passes, make the same days' partitions at
/// once: none fails, and each day is made once.
#[cfg_attr(
    not(fencewatch_pg),
    ignore = "needs PostgreSQL: set FENCEWATCH_TEST_PG"
)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn daemons_making_partitions_at_once_do_not_fail() {
    let db = test_db!(Backend::Postgres);
    let clock = Arc::new(ManualClock::starting_at(noon(-50)));
    let opened = futures_util::future::join_all((0..4).map(|_| store_at(&db, clock.clone()))).await;
    clock.advance(10 * DAY);
    let passes =
        futures_util::future::join_all(opened.iter().map(|store| store.ensure_audit_partitions()))
            .await;
    let mut created = 0;
    for pass in passes {
        let made = pass.unwrap();
        assert_eq!(made.held_by_default + made.busy, 0, "{made:?}");
        created += made.created;
    }
    assert_eq!(created, 4, "each of the four days was made once");
    let pool = pg(&db).await;
    let made = partitions(&pool).await;
    for day in [-50, -51, -52, -53, -60, -61, -62, -63] {
        assert!(made.contains(&day_of(noon(day))), "{day}: {made:?}");
    }
    assert_eq!(clock.now(), noon(-60));
}
