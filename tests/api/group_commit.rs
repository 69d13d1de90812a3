//! Group commit: many writes decided in order in one transaction must mean exactly what the same
//! writes mean one at a time, and batches must form by themselves under load.

use crate::both_backends;
use crate::helpers::{Backend, Rng, TestApp, TestDb};
use crate::test_db;
use fencewatch::app::service::{FenceService, Limits};
use fencewatch::domain::{
    Decision, FencedWrite, FencingToken, IdempotencyKey, LeasePolicy, Outcome, ResourceKey,
    Revision, WriteResult,
};
use fencewatch::store::{ObserveHook, Store};
use rstest_reuse::apply;
use sqlx::Connection;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Arc;
use std::time::Duration;

fn write(key: &str, token: i64, body: &str) -> FencedWrite {
    let mut write = FencedWrite::new(
        ResourceKey::parse(key).unwrap(),
        FencingToken::new(token).unwrap(),
        body.to_owned(),
    );
    write.owner = Some(fencewatch::domain::OwnerLabel::parse(&format!("worker-{token}")).unwrap());
    write
}

fn with_key(mut write: FencedWrite, key: &str) -> FencedWrite {
    write.idempotency_key = Some(IdempotencyKey::parse_header(key).unwrap());
    write
}

/// Random writes over a few resources: tokens that go up and down, repeated and reused
/// operation ids, and `If-Match` revisions right and wrong.
fn random_writes(seed: u64, count: usize) -> Vec<FencedWrite> {
    let mut rng = Rng::new(seed);
    (0..count)
        .map(|i| {
            let resource = format!("gc/{}", rng.below(3));
            let token = 1 + rng.below(5) as i64;
            let body = format!("v{}", rng.below(3));
            let body = if i % 7 == 0 { "fixed".to_owned() } else { body };
            let mut w = write(&resource, token, &body);
            if rng.below(3) == 0 {
                w = with_key(w, &format!("op-{}", rng.below(4)));
            }
            if rng.below(5) == 0 {
                w.expected_revision = Some(Revision::new(rng.below(4) as i64).unwrap());
            }
            w
        })
        .collect()
}

/// What a caller can see of a result: outcome, and the fence and revision after it.
fn seen(result: &WriteResult) -> (Outcome, i64, i64) {
    (
        result.entry.outcome,
        result.entry.highest_token,
        result.entry.revision,
    )
}

#[apply(both_backends)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_batch_decides_exactly_as_the_same_writes_one_at_a_time(#[case] backend: Backend) {
    let mut checked = 0;
    for seed in 1..=12 {
        let writes = random_writes(seed, 40);
        let one_db = test_db!(backend);
        let batch_db = TestDb::new(backend).await;
        let one_at_a_time = one_db.store().await;
        let batched = batch_db.store().await;

        let mut expected = Vec::new();
        for w in &writes {
            expected.push(
                one_at_a_time
                    .unchecked_writes()
                    .apply_write(w, LeasePolicy::default())
                    .await
                    .unwrap(),
            );
        }
        // The same writes in a few batches of uneven sizes.
        let mut got = Vec::new();
        for chunk in writes.chunks(13) {
            got.extend(
                batched
                    .unchecked_writes()
                    .apply_batch(chunk, LeasePolicy::default())
                    .await
                    .unwrap(),
            );
        }
        assert_eq!(got.len(), writes.len());
        for (index, (one, batch)) in expected.iter().zip(&got).enumerate() {
            assert_eq!(
                seen(one),
                seen(batch),
                "seed {seed}, write {index}: {:?}",
                writes[index]
            );
            assert_eq!(one.entry.detail.is_some(), batch.entry.detail.is_some());
            checked += 1;
        }
        for resource in 0..3 {
            let key = ResourceKey::parse(format!("gc/{resource}")).unwrap();
            let a = one_at_a_time.read_value(&key).await.unwrap();
            let b = batched.read_value(&key).await.unwrap();
            assert_eq!(
                a.as_ref().map(|v| (&v.value, v.revision, v.highest_token)),
                b.as_ref().map(|v| (&v.value, v.revision, v.highest_token)),
                "seed {seed}, {key}"
            );
        }
        let report = batched.verify_audit().await.unwrap();
        assert!(report.breaches.is_empty(), "{:?}", report.breaches);
        assert_eq!(report.rows, writes.len() as u64);
        // PostgreSQL decides a batch on resources it wrote without reading them (one round
        // trip): both paths were compared here.
        let on_known = |results: &[WriteResult]| results.iter().any(|r| r.decided_on_known_state);
        assert_eq!(
            on_known(&expected),
            backend == Backend::Postgres,
            "seed {seed}"
        );
        assert_eq!(on_known(&got), backend == Backend::Postgres, "seed {seed}");
    }
    assert_eq!(checked, 12 * 40);
}

#[apply(both_backends)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn within_a_batch_later_writes_see_earlier_ones(#[case] backend: Backend) {
    let db = test_db!(backend);
    let store = db.store().await;
    let results = store
        .unchecked_writes()
        .apply_batch(
            &[
                write("batch/a", 5, "first"),
                write("batch/a", 4, "older"),
                write("batch/a", 6, "newer"),
                write("batch/b", 2, "elsewhere"),
                with_key(write("batch/a", 6, "op"), "op-1"),
                // The same operation again in the same batch: its stored result, not a second
                // write.
                with_key(write("batch/a", 6, "op"), "op-1"),
            ],
            LeasePolicy::default(),
        )
        .await
        .unwrap();
    let outcomes: Vec<Outcome> = results.iter().map(|r| r.entry.outcome).collect();
    assert_eq!(
        outcomes,
        vec![
            Outcome::Accepted,
            Outcome::Stale,
            Outcome::Accepted,
            Outcome::Accepted,
            Outcome::Accepted,
            Outcome::Replayed,
        ]
    );
    let revisions: Vec<i64> = results.iter().map(|r| r.entry.revision).collect();
    assert_eq!(revisions, vec![1, 1, 2, 1, 3, 3]);
    match &results[5].decision {
        Decision::Replay(recorded) => assert_eq!(recorded.audit_id, results[4].entry.id),
        other => panic!("expected a replay, got {other:?}"),
    }
    let ids: Vec<i64> = results.iter().map(|r| r.entry.id).collect();
    assert!(ids.windows(2).all(|w| w[0] < w[1]), "ids in order: {ids:?}");
    let stored = store
        .read_value(&ResourceKey::parse("batch/a").unwrap())
        .await
        .unwrap()
        .unwrap();
    assert_eq!(stored.value, b"op");
    assert_eq!((stored.highest_token, stored.revision), (6, 3));
    // The stale write opened an overlap against the owner that held generation 5 then.
    let overlaps = store
        .overlaps(&fencewatch::store::OverlapQuery {
            limit: 10,
            ..Default::default()
        })
        .await
        .unwrap();
    assert_eq!(overlaps.len(), 1);
    assert_eq!(overlaps[0].stale_token, 4);
    assert_eq!(overlaps[0].superseding_token, 5);
    assert_eq!(overlaps[0].superseding_owner.as_deref(), Some("worker-5"));
    assert!(store.verify_audit().await.unwrap().breaches.is_empty());
}

/// A store whose second write batch waits after deciding, so that the writes behind it queue.
fn second_batch_held(store: Store, held: Duration) -> Store {
    let batches = Arc::new(AtomicU32::new(0));
    let hook: ObserveHook = Arc::new(move || {
        let batches = batches.clone();
        Box::pin(async move {
            if batches.fetch_add(1, Ordering::SeqCst) == 1 {
                tokio::time::sleep(held).await;
            }
        })
    });
    store.with_observe_hook(hook)
}

#[apply(both_backends)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_writes_share_a_transaction_and_each_gets_its_own_answer(
    #[case] backend: Backend,
) {
    let db = test_db!(backend);
    let store = second_batch_held(db.store().await, Duration::from_millis(300));
    let service = FenceService::new(store.clone(), Limits::default());
    let lone = service.write(&write("crowd/0", 1, "alone")).await.unwrap();
    assert_eq!(
        lone.batch_size, 1,
        "a lone writer does not wait for company"
    );

    let mut tasks = Vec::new();
    for client in 0..40_i64 {
        let service = service.clone();
        tasks.push(tokio::spawn(async move {
            let resource = format!("crowd/{}", client % 8);
            // Every resource gets generation 10 from some client; 9 is stale once it has.
            let token = if client % 5 == 0 { 9 } else { 10 };
            service
                .write(&write(&resource, token, &format!("from {client}")))
                .await
                .unwrap()
        }));
    }
    let mut results = Vec::new();
    for task in tasks {
        results.push(task.await.unwrap());
    }
    let largest = results.iter().map(|r| r.batch_size).max().unwrap();
    assert!(
        largest >= 2,
        "writes queued behind a committing batch share the next one"
    );
    // Every writer got its own audit row.
    let mut ids: Vec<i64> = results.iter().map(|r| r.entry.id).collect();
    ids.sort_unstable();
    ids.dedup();
    assert_eq!(ids.len(), 40);
    // Per resource, in commit order, no accepted generation is below an earlier accepted one.
    for resource in 0..8 {
        let page = store
            .audit_page(&fencewatch::store::AuditQuery {
                resource: Some(ResourceKey::parse(format!("crowd/{resource}")).unwrap()),
                limit: 100,
                ..Default::default()
            })
            .await
            .unwrap();
        let mut highest = 0;
        for entry in page.iter().rev() {
            if entry.outcome == Outcome::Accepted {
                let token = entry.token.unwrap();
                assert!(token >= highest, "{entry:?} after generation {highest}");
                highest = token;
            } else {
                assert!(entry.token.unwrap() < highest, "{entry:?}");
            }
        }
    }
    assert!(store.verify_audit().await.unwrap().breaches.is_empty());
}

/// On SQLite a batch commits without waiting for its WAL to reach the disk, and that sync runs
/// beside the next batch. Nothing may be answered before it ends: not the write, and not a read
/// that can already see the committed value.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sqlite_answers_a_write_and_reads_of_it_only_once_its_wal_is_synced() {
    let db = test_db!(Backend::Sqlite);
    let gate = Arc::new(tokio::sync::Semaphore::new(0));
    let syncs_reached = Arc::new(AtomicU32::new(0));
    let hook: ObserveHook = Arc::new({
        let (gate, syncs_reached) = (gate.clone(), syncs_reached.clone());
        move || {
            let (gate, syncs_reached) = (gate.clone(), syncs_reached.clone());
            Box::pin(async move {
                syncs_reached.fetch_add(1, Ordering::SeqCst);
                let _ = gate.acquire().await.map(|permit| permit.forget());
            })
        }
    });
    let store = db.store().await.with_sync_hook(hook);
    let app = TestApp::on(&db).store(store).spawn().await;

    let write = tokio::spawn(app.put("synced/1").token(3).body("committed").send());
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    while syncs_reached.load(Ordering::SeqCst) == 0 {
        assert!(tokio::time::Instant::now() < deadline, "no sync began");
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    let read = tokio::spawn({
        let (http, url) = (
            app.http.clone(),
            format!("{}/v1/resources/synced/1", app.base),
        );
        async move { http.get(url).send().await.unwrap().text().await.unwrap() }
    });
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(
        !write.is_finished(),
        "the write was answered before its sync"
    );
    assert!(
        !read.is_finished(),
        "a read showed the write before its sync"
    );

    gate.add_permits(1_000);
    let written = write.await.unwrap();
    assert_eq!(written.status, 201, "{:?}", written.body);
    assert_eq!(read.await.unwrap(), "committed");
}

/// PostgreSQL: a batch on resources this daemon wrote is decided on what its own commits left
/// and applied and committed by one statement; that knowledge is only a guess, which the
/// statement checks. When another daemon wrote since, or an operation was recorded, nothing
/// of the guess is applied and the write is decided again on what is there.
#[cfg_attr(
    not(fencewatch_pg),
    ignore = "needs PostgreSQL: set FENCEWATCH_TEST_PG"
)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn known_state_is_a_guess_that_the_statement_checks() {
    let db = test_db!(Backend::Postgres);
    let first = db.store().await;
    let second = db.store().await;
    let policy = LeasePolicy::default();
    let key = "known/r";

    let created = first
        .unchecked_writes()
        .apply_write(&write(key, 7, "a"), policy)
        .await
        .unwrap();
    assert!(!created.decided_on_known_state, "nothing known yet");
    let again = first
        .unchecked_writes()
        .apply_write(&write(key, 7, "b"), policy)
        .await
        .unwrap();
    assert!(again.decided_on_known_state);
    assert_eq!(seen(&again), (Outcome::Accepted, 7, 2));

    // Another daemon on the same database moves the fence on.
    let newer = second
        .unchecked_writes()
        .apply_write(&write(key, 8, "c"), policy)
        .await
        .unwrap();
    assert_eq!(seen(&newer), (Outcome::Accepted, 8, 3));

    // The first still knows generation 7 at revision 2: on that it would accept. The check
    // fails, and decided again the write is stale.
    let late = first
        .unchecked_writes()
        .apply_write(&write(key, 7, "d"), policy)
        .await
        .unwrap();
    assert!(!late.decided_on_known_state);
    assert!(late.observations >= 2, "decided on the guess, then again");
    assert_eq!(seen(&late), (Outcome::Stale, 8, 3));

    // An operation, and its retry: the retry's guess (no such operation) fails the check, and
    // it is answered from the recorded operation, applying nothing.
    let keyed = first
        .unchecked_writes()
        .apply_write(&with_key(write(key, 8, "e"), "op-1"), policy)
        .await
        .unwrap();
    assert!(
        keyed.decided_on_known_state,
        "learnt again from the last write"
    );
    assert_eq!(seen(&keyed), (Outcome::Accepted, 8, 4));
    let retry = first
        .unchecked_writes()
        .apply_write(&with_key(write(key, 8, "e"), "op-1"), policy)
        .await
        .unwrap();
    assert!(!retry.decided_on_known_state);
    assert!(
        matches!(retry.decision, Decision::Replay(_)),
        "{:?}",
        retry.decision
    );

    let stored = first
        .read_value(&ResourceKey::parse(key).unwrap())
        .await
        .unwrap()
        .unwrap();
    assert_eq!((stored.value.as_ref(), stored.revision), (b"e".as_ref(), 4));
    let report = first.verify_audit().await.unwrap();
    assert!(report.breaches.is_empty(), "{:?}", report.breaches);
    assert_eq!(report.rows, 6);
}

/// PostgreSQL: group commit keeps its batch connections between batches as they are, without
/// the pool's ping on every hand-out and return. One the server ended while it sat idle is found
/// broken before a batch uses it and replaced, so the next write is applied rather than failed.
#[cfg_attr(
    not(fencewatch_pg),
    ignore = "needs PostgreSQL: set FENCEWATCH_TEST_PG"
)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_batch_connection_the_server_ended_while_idle_is_replaced_before_use() {
    let db = test_db!(Backend::Postgres);
    let name = format!("fw_sessions_{}", std::process::id());
    let url = format!("{}&application_name={name}", db.url);
    let store = Store::open(&url, &fencewatch::store::StoreOptions::default())
        .await
        .unwrap();
    let policy = LeasePolicy::default();
    let key = "sessions/r";
    for (token, body) in [(1, "a"), (1, "b"), (2, "c")] {
        let result = store
            .unchecked_writes()
            .apply_write(&write(key, token, body), policy)
            .await
            .unwrap();
        assert_eq!(result.entry.outcome, Outcome::Accepted);
    }
    let mut admin = sqlx::PgConnection::connect(&db.url).await.unwrap();
    // Three batches one after another took one connection, beside the store's other pool.
    let backends: i64 =
        sqlx::query_scalar("SELECT count(*) FROM pg_stat_activity WHERE application_name = $1")
            .bind(&name)
            .fetch_one(&mut admin)
            .await
            .unwrap();
    assert!((1..=3).contains(&backends), "{backends} connections");

    let ended: Vec<bool> = sqlx::query_scalar(
        "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = $1",
    )
    .bind(&name)
    .fetch_all(&mut admin)
    .await
    .unwrap();
    assert!(!ended.is_empty() && ended.iter().all(|ended| *ended));
    tokio::time::sleep(Duration::from_millis(1_200)).await;

    let after = store
        .unchecked_writes()
        .apply_write(&write(key, 2, "d"), policy)
        .await
        .expect("a connection the server ended is replaced before use");
    assert_eq!(seen(&after), (Outcome::Accepted, 2, 4));
    let report = store.verify_audit().await.unwrap();
    assert!(report.breaches.is_empty(), "{:?}", report.breaches);
    assert_eq!(report.rows, 4);
}

/// The service has one door for writes, and it is the checked one: a write naming an external
/// lock through the library, as through HTTP, is refused when the daemon has no such lock
/// service, rather than committed without its check.
#[tokio::test]
async fn the_service_writes_only_through_the_lock_check() {
    let db = TestDb::new(Backend::Sqlite).await;
    let service = FenceService::new(db.store().await, Limits::default());
    let mut named = write("jobs/1", 7, "from a holder nobody asked etcd about");
    named.lease = Some(fencewatch::domain::LeaseName::parse("etcd:jobs").unwrap());
    let outcome = service.write(&named).await;
    assert!(
        outcome
            .as_ref()
            .is_err_and(|error| error.to_string().contains("--etcd")),
        "{outcome:?}"
    );
    let stored = db
        .store()
        .await
        .read_value(&ResourceKey::parse("jobs/1").unwrap())
        .await
        .unwrap();
    assert!(stored.is_none(), "nothing was written");
}
