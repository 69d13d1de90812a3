//! Lease decisions under concurrency, forced: a renewal at the instant of expiry against
//! acquirers of other daemons, and a release whose grant is superseded while it waits.
//!
//! A third connection (think of a slow transaction of a third daemon) holds the lease's row while
//! the contenders read it, so every one of them decides on the same row and then queues for its
//! lock: the renewal first (read just before expiry), then the acquirers (read just after). The
//! order in which they then get the lock is the order they queued in (PostgreSQL's row lock
//! queue); SQLite lets one writer at a time and restarts the others.

use crate::both_backends;
use crate::helpers::{Backend, TestApp, TestDb};
use crate::helpers::{Raw, RawConn};
use crate::on_raw;
use crate::test_db;
use fencewatch::domain::{Holder, LeaseName, Ttl};
use fencewatch::store::{AcquireResult, RenewResult, Store};
use rstest_reuse::apply;
use serde_json::json;
use sqlx::Row;
use std::time::Duration;
use tokio::task::JoinHandle;

const ROUNDS: usize = 200;
const ACQUIRERS: usize = 4;
/// Long enough for the renewal to read the grant before it expires on a busy machine; every
/// round waits this long.
const TTL_MS: i64 = 100;
const RENEWED_TTL_MS: i64 = 60_000;

/// A connection of the test's own that holds a lease's row (PostgreSQL) or the database's write
/// lock (SQLite) while the contenders read.
struct RowHolder {
    conn: RawConn,
    observer: RawConn,
    pid: i32,
}

impl RowHolder {
    async fn connect(db: &TestDb, backend: Backend) -> RowHolder {
        let mut conn = db.raw_conn().await;
        let observer = db.raw_conn().await;
        let pid = match (&mut conn, backend) {
            (Raw::Postgres(conn), Backend::Postgres) => sqlx::query("SELECT pg_backend_pid()")
                .fetch_one(conn)
                .await
                .unwrap()
                .get::<i32, _>(0),
            (Raw::Sqlite(conn), Backend::Sqlite) => {
                sqlx::query("PRAGMA busy_timeout = 5000")
                    .execute(conn)
                    .await
                    .unwrap();
                0
            }
            _ => panic!("the database is not the backend's"),
        };
        RowHolder {
            conn,
            observer,
            pid,
        }
    }

    async fn hold(&mut self, lease: &LeaseName) {
        match &mut self.conn {
            Raw::Postgres(conn) => {
                sqlx::query("BEGIN").execute(&mut *conn).await.unwrap();
                let held = sqlx::query("SELECT token FROM leases WHERE name = $1 FOR UPDATE")
                    .bind(lease.as_str())
                    .fetch_optional(conn)
                    .await
                    .unwrap();
                assert!(held.is_some(), "the lease's row exists");
            }
            Raw::Sqlite(conn) => {
                sqlx::query("BEGIN IMMEDIATE").execute(conn).await.unwrap();
            }
        }
    }

    async fn let_go(&mut self) {
        on_raw!(&mut self.conn, conn => sqlx::query("ROLLBACK").execute(conn).await.map(drop))
            .unwrap();
    }

    /// How many sessions wait, directly or behind another waiter, on this holder; `None` on
    /// SQLite, whose waiters spin in their busy handler where nothing can see them.
    async fn waiting(&mut self) -> Option<i64> {
        let Raw::Postgres(observer) = &mut self.observer else {
            return None;
        };
        let count: i64 = sqlx::query(
            "WITH RECURSIVE waiter(pid) AS (SELECT $1::int UNION \
             SELECT a.pid FROM pg_stat_activity a JOIN waiter w ON w.pid = ANY(pg_blocking_pids(a.pid))) \
             SELECT count(*) - 1 FROM waiter",
        )
        .bind(self.pid)
        .fetch_one(observer)
        .await
        .unwrap()
        .get(0);
        Some(count)
    }

    /// Waits until `expected` sessions queue behind the holder or every task in `tasks` ended;
    /// on SQLite, a moment. Returns how many of `tasks` are still running: each waits on the
    /// row, having read it and decided to change it.
    async fn queued<T>(&mut self, expected: i64, tasks: &[&JoinHandle<T>]) -> usize {
        let running = |tasks: &[&JoinHandle<T>]| tasks.iter().filter(|t| !t.is_finished()).count();
        for _ in 0..400 {
            match self.waiting().await {
                Some(waiting) if waiting >= expected => break,
                Some(_) if running(tasks) == 0 => break,
                None => {
                    tokio::time::sleep(Duration::from_millis(30)).await;
                    break;
                }
                Some(_) => tokio::time::sleep(Duration::from_millis(5)).await,
            }
        }
        running(tasks)
    }
}

async fn sleep_until_us(at_us: i64) {
    let now = chrono::Utc::now().timestamp_micros();
    if at_us > now {
        tokio::time::sleep(Duration::from_micros((at_us - now) as u64)).await;
    }
}

#[derive(Default, Debug)]
struct Tally {
    /// The renewal read the grant before it expired and queued for its row.
    renewal_queued: usize,
    /// At least one acquirer read the grant after it expired and queued for its row.
    acquirer_queued: usize,
    renewed: usize,
    granted: usize,
    /// A renewal answered `200` in the same round as another holder's grant.
    overlapping: usize,
}

/// Each round: the renewer holds a fresh lease with a short TTL; the row is held; the renewal
/// starts just before expiry, the acquirers (each a daemon of its own) just after; the row is let
/// go. An overlap is a renewal granted beside another holder's acquire.
async fn renewals_against_acquirers(db: &TestDb, backend: Backend) -> Tally {
    let renewer = db.store().await;
    let mut acquirers: Vec<Store> = Vec::new();
    for _ in 0..ACQUIRERS {
        acquirers.push(db.store().await);
    }
    let mut holder = RowHolder::connect(db, backend).await;
    let renewer_name = Holder::parse("renewer").unwrap();
    let mut tally = Tally::default();
    for round in 0..ROUNDS {
        let lease = LeaseName::parse(&format!("race/{round}")).unwrap();
        let AcquireResult::Granted(grant) = renewer
            .acquire_lease(&lease, &renewer_name, Ttl::from_millis(TTL_MS).unwrap())
            .await
            .unwrap()
        else {
            panic!("a fresh lease is free");
        };
        holder.hold(&lease).await;
        let renewal = {
            let (store, lease, name) = (renewer.clone(), lease.clone(), renewer_name.clone());
            let ttl = Ttl::from_millis(RENEWED_TTL_MS).unwrap();
            tokio::spawn(async move {
                store
                    .renew_lease(&lease, &name, grant.token, Some(ttl))
                    .await
            })
        };
        let renewal_waits = holder.queued(1, &[&renewal]).await == 1;
        sleep_until_us(grant.expires_at_us + 2_000).await;
        let attempts: Vec<_> = acquirers
            .iter()
            .enumerate()
            .map(|(i, store)| {
                let (store, lease) = (store.clone(), lease.clone());
                let name = Holder::parse(&format!("acquirer-{i}")).unwrap();
                let ttl = Ttl::from_millis(RENEWED_TTL_MS).unwrap();
                tokio::spawn(async move { store.acquire_lease(&lease, &name, ttl).await })
            })
            .collect();
        let waiting_acquirers = holder
            .queued(1 + ACQUIRERS as i64, &attempts.iter().collect::<Vec<_>>())
            .await;
        holder.let_go().await;

        let renewed = match renewal.await.unwrap().unwrap() {
            RenewResult::Renewed(record) => {
                assert!(record.expires_at_us > grant.expires_at_us + 30_000_000);
                true
            }
            RenewResult::Lost(_) => false,
        };
        let mut granted = 0;
        for attempt in attempts {
            if let AcquireResult::Granted(record) = attempt.await.unwrap().unwrap() {
                assert_eq!(record.token.get(), grant.token.get() + 1);
                granted += 1;
            }
        }
        assert!(granted <= 1, "round {round}: one generation, one grant");
        tally.renewal_queued += usize::from(renewal_waits);
        tally.acquirer_queued += usize::from(renewal_waits && waiting_acquirers > 0);
        tally.renewed += usize::from(renewed);
        tally.granted += granted;
        tally.overlapping += usize::from(renewed && granted > 0);
    }
    tally
}

#[apply(both_backends)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_grant_overlaps_a_renewal_at_expiry(#[case] backend: Backend) {
    let db = test_db!(backend);
    let tally = renewals_against_acquirers(&db, backend).await;
    eprintln!(
        "{backend:?}: {ROUNDS} rounds of a renewal at expiry against {ACQUIRERS} acquirers: \
         renewal queued {}, acquirers queued behind it {}, renewed {}, granted {}, overlapping {}",
        tally.renewal_queued,
        tally.acquirer_queued,
        tally.renewed,
        tally.granted,
        tally.overlapping
    );
    assert_eq!(tally.overlapping, 0, "{tally:?}");
    // The race was run, not missed: most rounds had the renewal and an acquirer deciding on the
    // same grant and waiting for its row.
    assert!(tally.acquirer_queued >= ROUNDS / 2, "{tally:?}");
    assert_eq!(tally.renewed + tally.granted, ROUNDS, "{tally:?}");
}

/// A holder whose grant lapsed releases it while another daemon's acquire, already queued for
/// the row, supersedes it: the release is answered as lost, never `204`.
#[apply(both_backends)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn releasing_a_grant_superseded_meanwhile_is_409(#[case] backend: Backend) {
    let db = test_db!(backend);
    let first = TestApp::spawn(&db).await;
    let second = TestApp::spawn(&db).await;
    let lease = LeaseName::parse("jobs").unwrap();
    let reply = post(&first, "acquire", json!({"holder": "w1", "ttl_ms": TTL_MS})).await;
    assert_eq!(reply.status, 200, "{}", reply.json);
    let expires: chrono::DateTime<chrono::Utc> =
        reply.json["expires_at"].as_str().unwrap().parse().unwrap();
    sleep_until_us(expires.timestamp_micros() + 2_000).await;

    let mut holder = RowHolder::connect(&db, backend).await;
    holder.hold(&lease).await;
    let acquire = tokio::spawn(async move {
        post(
            &second,
            "acquire",
            json!({"holder": "w2", "ttl_ms": 60_000}),
        )
        .await
    });
    holder.queued(1, &[&acquire]).await;
    let release =
        tokio::spawn(
            async move { post(&first, "release", json!({"holder": "w1", "token": 1})).await },
        );
    holder.queued(2, &[&acquire, &release]).await;
    holder.let_go().await;
    let acquired = acquire.await.unwrap();
    let released = release.await.unwrap();
    assert_eq!(acquired.status, 200, "{}", acquired.json);
    assert_eq!(acquired.json["token"], 2);

    let history: Vec<(String, String, i64)> = db
        .store()
        .await
        .lease_events(&lease)
        .await
        .unwrap()
        .into_iter()
        .map(|e| (e.event, e.holder, e.token))
        .collect();
    let event =
        |event: &str, holder: &str, token: i64| (event.to_owned(), holder.to_owned(), token);
    let superseded_first = [
        event("acquired", "w1", 1),
        event("expired", "w1", 1),
        event("acquired", "w2", 2),
    ];
    let released_first = [
        event("acquired", "w1", 1),
        event("released", "w1", 1),
        event("acquired", "w2", 2),
    ];
    match backend {
        // The acquire queued first, so it took the row first.
        Backend::Postgres => assert_eq!(history, superseded_first),
        // SQLite's writers take the lock in no set order: either answer, but the one the
        // history tells.
        Backend::Sqlite => assert!(
            history == superseded_first || history == released_first,
            "{history:?}"
        ),
    }
    if history == superseded_first {
        released.assert_problem(409, "lease-lost");
        let detail = released.json["detail"].as_str().unwrap();
        assert!(detail.contains("superseded"), "{detail}");
        assert_eq!(released.json["lease"]["token"], 2);
    } else {
        assert_eq!(released.status, 204);
    }
}

async fn post(app: &TestApp, action: &str, body: serde_json::Value) -> crate::helpers::Reply {
    crate::helpers::Reply::from(
        app.http
            .post(format!("{}/v1/leases/jobs/{action}", app.base))
            .json(&body)
            .send()
            .await
            .unwrap(),
    )
    .await
}
