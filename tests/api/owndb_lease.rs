//! The first-write gap: a fresh scope accepts generation 7 until it has seen 8. Naming a lease of
//! the fencewatch daemon whose store is the same database (`lease =>`, `protect --lease`) closes
//! it: once the lease issued 8, 7 is refused on a scope that never saw 8.

use crate::both_backends;
use crate::helpers::{audit_of_scope, Backend, Guard, UserDb, ORDERS};
use fencewatch::domain::{FencingToken, Holder, LeaseName, Ttl};
use fencewatch::owndb::{InstallOptions, OwnDbError, ProtectSpec, ScopeSource};
use fencewatch::store::{AcquireResult, ReleaseResult, Store, StoreOptions};
use rstest_reuse::apply;

/// The daemon's store on the user's database (its own migrations make its `leases` table), and
/// the lease `jobs` granted until it has issued `generation`, then held by `holder` for a
/// minute. Returns the store.
async fn daemon_with_lease_at(db: &UserDb, generation: i64) -> Store {
    let store = Store::open(
        &db.url,
        &StoreOptions {
            max_connections: 2,
            ..StoreOptions::default()
        },
    )
    .await
    .unwrap();
    advance_lease(&store, generation).await;
    store
}

/// Acquires and releases `jobs` until its current generation is `generation`, held.
async fn advance_lease(store: &Store, generation: i64) {
    let name = LeaseName::parse("jobs").unwrap();
    let ttl = Ttl::from_millis(60_000).unwrap();
    loop {
        let holder = Holder::parse("worker").unwrap();
        let record = match store.acquire_lease(&name, &holder, ttl).await.unwrap() {
            AcquireResult::Granted(record) => record,
            AcquireResult::Held(record) => panic!("held by {:?}", record.holder),
        };
        if record.token.get() == generation {
            return;
        }
        assert!(record.token.get() < generation);
        let released = store
            .release_lease(&name, &holder, record.token)
            .await
            .unwrap();
        assert!(matches!(released, ReleaseResult::Released), "{released:?}");
    }
}

#[apply(both_backends)]
#[tokio::test]
async fn a_fresh_scope_accepts_7_until_it_has_seen_8(#[case] backend: Backend) {
    let db = UserDb::new(backend).await;
    let fence = db.fence().await;
    fence.install(&InstallOptions::default()).await.unwrap();
    db.grant_guard().await;
    let mut conn = db.connect().await;
    assert_eq!(
        conn.guard("a", Some(7), None, None, None).await,
        Guard::Accepted
    );
    assert_eq!(
        conn.guard("a", Some(8), None, None, None).await,
        Guard::Accepted
    );
    let Guard::Refused { code, .. } = conn.guard("a", Some(7), None, None, None).await else {
        panic!("7 after 8 was not refused");
    };
    assert_eq!(code, "FW409");
    // Scopes are independent: another that never saw 8 still takes 7. That is the gap.
    assert_eq!(
        conn.guard("b", Some(7), None, None, None).await,
        Guard::Accepted
    );
    assert_eq!(
        conn.guard("b", Some(7), None, None, None).await,
        Guard::Accepted,
        "equal is fine"
    );
    conn.close().await;
}

/// The guard call with `lease =>` (PostgreSQL; SQLite's guard takes no lease).
#[cfg_attr(
    not(fencewatch_pg),
    ignore = "needs PostgreSQL: set FENCEWATCH_TEST_PG"
)]
#[tokio::test]
async fn the_guard_refuses_a_generation_the_lease_superseded_on_a_scope_that_never_saw_it() {
    let db = UserDb::new(Backend::Postgres).await;
    let store = daemon_with_lease_at(&db, 7).await;
    let fence = db.fence().await;
    fence.install(&InstallOptions::default()).await.unwrap();
    db.grant_guard().await;
    let mut conn = db.connect().await;
    let lease = Some("jobs");
    assert_eq!(
        conn.guard("jobs/1", Some(7), None, Some("old"), lease)
            .await,
        Guard::Accepted
    );
    // The lease moves on to 8 for a new holder; scope jobs/2 has never seen 8.
    let name = LeaseName::parse("jobs").unwrap();
    store
        .release_lease(
            &name,
            &Holder::parse("worker").unwrap(),
            FencingToken::new(7).unwrap(),
        )
        .await
        .unwrap();
    advance_lease(&store, 8).await;

    let Guard::Refused { code, message } = conn
        .guard("jobs/2", Some(7), None, Some("old"), lease)
        .await
    else {
        panic!("a superseded generation was accepted");
    };
    assert_eq!(code, "FW409");
    assert!(message.contains("superseded by 8"), "{message}");
    let Guard::Refused { code, .. } = conn
        .guard("jobs/2", Some(9), None, Some("forger"), lease)
        .await
    else {
        panic!("a generation the lease never issued was accepted");
    };
    assert_eq!(code, "FW403");
    let Guard::Refused { code, .. } = conn
        .guard("jobs/2", Some(1), None, None, Some("nobody"))
        .await
    else {
        panic!("a lease that does not exist vouched for a generation");
    };
    assert_eq!(code, "FW403");
    assert_eq!(
        conn.guard("jobs/2", Some(8), None, Some("new"), lease)
            .await,
        Guard::Accepted
    );
    // Without the lease the same call goes through on a fresh scope: the lease made the difference.
    assert_eq!(
        conn.guard("jobs/3", Some(7), None, Some("old"), None).await,
        Guard::Accepted
    );

    // The current generation after its grant ended is accepted, with the lapse noted.
    store
        .release_lease(
            &name,
            &Holder::parse("worker").unwrap(),
            FencingToken::new(8).unwrap(),
        )
        .await
        .unwrap();
    assert_eq!(
        conn.guard("jobs/2", Some(8), None, Some("new"), lease)
            .await,
        Guard::Accepted
    );
    let outcomes: Vec<(String, Option<i64>, Option<String>)> = audit_of_scope(&fence, "jobs/2")
        .await
        .into_iter()
        .map(|row| (row.outcome, row.token, row.lease))
        .collect();
    let jobs = Some("jobs".to_owned());
    assert_eq!(
        outcomes,
        [
            ("superseded".into(), Some(7), jobs.clone()),
            ("unauthorized".into(), Some(9), jobs.clone()),
            ("unauthorized".into(), Some(1), Some("nobody".into())),
            ("accepted".into(), Some(8), jobs.clone()),
            ("accepted".into(), Some(8), jobs),
        ]
    );
    let last = audit_of_scope(&fence, "jobs/2").await.pop().unwrap();
    assert_eq!(last.detail.as_deref(), Some("lease jobs had lapsed"));
    conn.close().await;
}

/// A protected table naming a lease (`protect --lease`), on both backends: the stale row is not
/// written, on a scope that never saw the lease's newer generation.
#[apply(both_backends)]
#[tokio::test]
async fn a_protected_table_naming_a_lease_refuses_what_the_lease_superseded(
    #[case] backend: Backend,
) {
    let db = UserDb::new(backend).await;
    db.run(ORDERS).await;
    let fence = db.fence().await;
    fence.install(&InstallOptions::default()).await.unwrap();
    db.grant_guard().await;
    let spec = ProtectSpec {
        table: "orders".into(),
        token_column: "tok".into(),
        scope: ScopeSource::Column("region".into()),
        op_column: None,
        owner_column: Some("who".into()),
        lease: Some("jobs".into()),
        generation: None,
    };
    // No daemon has used this database yet: there is no lease to check against.
    let Err(OwnDbError::Invalid(message)) = fence.protect(&spec).await else {
        panic!("protect --lease went ahead without the daemon's leases table");
    };
    assert!(message.contains("leases table"), "{message}");

    let _store = daemon_with_lease_at(&db, 8).await;
    fence.protect(&spec).await.unwrap();
    let mut conn = db.connect().await;
    let insert = |id: i64, token: i64, region: &str, who: &str| {
        format!(
            "INSERT INTO orders (id, tok, region, val, who) VALUES ({id}, {token}, '{region}', \
             'v', '{who}')"
        )
    };
    assert_eq!(
        conn.run(&insert(1, 7, "eu", "old")).await.unwrap(),
        0,
        "superseded"
    );
    assert_eq!(
        conn.run(&insert(2, 9, "eu", "forger")).await.unwrap(),
        0,
        "never issued"
    );
    assert_eq!(conn.run(&insert(3, 8, "us", "new")).await.unwrap(), 1);
    assert_eq!(conn.int("SELECT count(*) FROM orders").await, Some(1));
    conn.close().await;
    fence.seal().await.unwrap();
    let eu: Vec<(String, Option<i64>)> = audit_of_scope(&fence, "eu")
        .await
        .into_iter()
        .map(|row| (row.outcome, row.token))
        .collect();
    assert_eq!(
        eu,
        [
            ("superseded".into(), Some(7)),
            ("unauthorized".into(), Some(9))
        ]
    );
    assert!(fence.verify().await.unwrap().intact());
}
