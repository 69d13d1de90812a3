//! The lease authority: its lifecycle, concurrent acquires, and writes checked against it.

use crate::both_backends;
use crate::helpers::{Backend, Daemon, Reply, TestApp, TestDb};
use crate::test_db;
use fencewatch::app::service::Limits;
use fencewatch::domain::LeasePolicy;
use fencewatch::domain::{LeaseName, LeaseScope};
use rstest_reuse::apply;
use serde_json::{json, Value};
use std::time::Duration;

async fn post(app_base: &str, http: &reqwest::Client, path: &str, body: Value) -> Reply {
    Reply::from(
        http.post(format!("{app_base}{path}"))
            .json(&body)
            .send()
            .await
            .unwrap(),
    )
    .await
}

impl TestApp {
    async fn lease_action(&self, lease: &str, action: &str, body: Value) -> Reply {
        post(
            &self.base,
            &self.http,
            &format!("/v1/leases/{lease}/{action}"),
            body,
        )
        .await
    }

    async fn acquire(&self, lease: &str, holder: &str, ttl_ms: i64) -> Reply {
        self.lease_action(
            lease,
            "acquire",
            json!({"holder": holder, "ttl_ms": ttl_ms}),
        )
        .await
    }

    async fn renew(&self, lease: &str, holder: &str, token: i64) -> Reply {
        self.lease_action(lease, "renew", json!({"holder": holder, "token": token}))
            .await
    }

    async fn release(&self, lease: &str, holder: &str, token: i64) -> Reply {
        self.lease_action(lease, "release", json!({"holder": holder, "token": token}))
            .await
    }
}

async fn app_with(db: &TestDb, policy: LeasePolicy) -> TestApp {
    TestApp::on(db)
        .limits(Limits {
            leases: policy,
            ..Limits::default()
        })
        .spawn()
        .await
}

#[apply(both_backends)]
#[tokio::test]
async fn the_lease_lifecycle(#[case] backend: Backend) {
    let db = test_db!(backend);
    let app = TestApp::spawn(&db).await;
    app.get("/v1/leases/jobs")
        .await
        .assert_problem(404, "not-found");

    let first = app.acquire("jobs", "w1", 60_000).await;
    assert_eq!(first.status, 200, "{}", first.json);
    assert_eq!(
        (
            first.json["lease"].as_str(),
            first.json["holder"].as_str(),
            first.json["token"].as_i64()
        ),
        (Some("jobs"), Some("w1"), Some(1))
    );
    let expires: chrono::DateTime<chrono::Utc> =
        first.json["expires_at"].as_str().unwrap().parse().unwrap();
    assert!(expires > chrono::Utc::now() + chrono::Duration::seconds(50));

    let held = app.acquire("jobs", "w2", 60_000).await;
    held.assert_problem(409, "lease-held");
    assert_eq!(held.json["holder"], "w1");
    assert_eq!(held.json["expires_at"], first.json["expires_at"]);

    let renewed = app.renew("jobs", "w1", 1).await;
    assert_eq!(renewed.status, 200);
    assert_eq!(renewed.json["token"], 1, "renewing keeps the generation");
    assert!(renewed.json["expires_at"].as_str() >= first.json["expires_at"].as_str());
    app.renew("jobs", "w2", 1)
        .await
        .assert_problem(409, "lease-lost");
    app.renew("jobs", "w1", 2)
        .await
        .assert_problem(409, "lease-lost");

    // Expiry: a short grant runs out; the next holder gets a higher generation.
    assert_eq!(app.acquire("short", "w1", 150).await.json["token"], 1);
    tokio::time::sleep(Duration::from_millis(250)).await;
    assert_eq!(app.get("/v1/leases/short").await.json["state"], "expired");
    app.renew("short", "w1", 1)
        .await
        .assert_problem(409, "lease-lost");
    let second = app.acquire("short", "w2", 60_000).await;
    assert_eq!(
        (second.status.as_u16(), second.json["token"].as_i64()),
        (200, Some(2))
    );
    // The old holder can neither renew nor release.
    app.renew("short", "w1", 1)
        .await
        .assert_problem(409, "lease-lost");
    app.release("short", "w1", 1)
        .await
        .assert_problem(409, "lease-lost");
    let released = app.release("short", "w2", 2).await;
    assert_eq!(released.status, 204);
    assert!(released.body.is_empty());
    assert_eq!(app.get("/v1/leases/short").await.json["state"], "released");
    assert_eq!(
        app.acquire("short", "w3", 60_000).await.json["token"],
        3,
        "free after release"
    );

    // Who held which generation when.
    let events = app
        .store
        .lease_events(&LeaseName::parse("short").unwrap())
        .await
        .unwrap();
    let history: Vec<_> = events
        .iter()
        .map(|e| (e.event.as_str(), e.holder.as_str(), e.token))
        .collect();
    assert_eq!(
        history,
        [
            ("acquired", "w1", 1),
            ("expired", "w1", 1),
            ("acquired", "w2", 2),
            ("released", "w2", 2),
            ("acquired", "w3", 3)
        ]
    );
    assert!(events.windows(2).all(|pair| pair[0].at <= pair[1].at));
}

#[apply(both_backends)]
#[tokio::test]
async fn bad_lease_requests_get_400(#[case] backend: Backend) {
    let db = test_db!(backend);
    let app = TestApp::spawn(&db).await;
    let long = "h".repeat(129);
    for body in [
        json!({}),
        json!({"holder": "w1"}),
        json!({"ttl_ms": 1000}),
        json!({"holder": "w1", "ttl_ms": 0}),
        json!({"holder": "w1", "ttl_ms": 86_400_001}),
        json!({"holder": "w1", "ttl_ms": "1000"}),
        json!({"holder": "w1", "ttl_ms": 1.5}),
        json!({"holder": "w1", "ttl_ms": -5}),
        json!({"holder": "", "ttl_ms": 1000}),
        json!({"holder": long, "ttl_ms": 1000}),
        json!({"holder": "tab\there", "ttl_ms": 1000}),
        json!({"holder": "w1", "ttl_ms": 1000, "extra": true}),
        json!([1, 2]),
    ] {
        app.acquire_raw("jobs", body.to_string())
            .await
            .assert_problem(400, "invalid-request");
    }
    app.acquire_raw("jobs", "not json".into())
        .await
        .assert_problem(400, "invalid-request");
    post(
        &app.base,
        &app.http,
        "/v1/leases/jobs/renew",
        json!({"holder": "w1", "token": 0}),
    )
    .await
    .assert_problem(400, "invalid-request");
    post(&app.base, &app.http, "/v1/leases/jobs/steal", json!({}))
        .await
        .assert_problem(404, "not-found");
    app.get("/v1/leases/jobs")
        .await
        .assert_problem(404, "not-found");
    // The largest TTL is fine.
    assert_eq!(app.acquire("jobs", "w1", 86_400_000).await.status, 200);
}

impl TestApp {
    async fn acquire_raw(&self, lease: &str, body: String) -> Reply {
        Reply::from(
            self.http
                .post(format!("{}/v1/leases/{lease}/acquire", self.base))
                .header("content-type", "application/json")
                .body(body)
                .send()
                .await
                .unwrap(),
        )
        .await
    }
}

/// Races `tasks` acquirers, each acquiring `rounds` times as the same holder, which is always
/// granted a new generation: every acquire races on the lease's counter. Returns the granted
/// generations.
async fn acquire_race(bases: &[String], tasks: usize, rounds: usize) -> Vec<i64> {
    let http = crate::helpers::http_client();
    let mut handles = Vec::new();
    for task in 0..tasks {
        let base = bases[task % bases.len()].clone();
        let http = http.clone();
        handles.push(tokio::spawn(async move {
            let mut granted = Vec::new();
            for _ in 0..rounds {
                let reply = post(
                    &base,
                    &http,
                    "/v1/leases/race/acquire",
                    json!({"holder": "shared", "ttl_ms": 60_000}),
                )
                .await;
                assert_eq!(reply.status, 200, "{}", reply.json);
                granted.push(reply.json["token"].as_i64().unwrap());
            }
            granted
        }));
    }
    let mut all = Vec::new();
    for handle in handles {
        all.extend(handle.await.unwrap());
    }
    all
}

fn assert_each_generation_once(
    mut granted: Vec<i64>,
    events: &[fencewatch::store::StoredLeaseEvent],
) {
    let total = granted.len();
    granted.sort();
    let expected: Vec<i64> = (1..=total as i64).collect();
    assert_eq!(
        granted, expected,
        "each generation granted exactly once, none skipped"
    );
    let acquired: Vec<i64> = events
        .iter()
        .filter(|e| e.event == "acquired")
        .map(|e| e.token)
        .collect();
    assert_eq!(acquired.len(), total);
    assert!(
        acquired.windows(2).all(|pair| pair[0] < pair[1]),
        "generations strictly increase in grant order"
    );
}

#[apply(both_backends)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_acquires_grant_each_generation_once(#[case] backend: Backend) {
    let db = test_db!(backend);
    let app = TestApp::spawn(&db).await;
    let granted = acquire_race(std::slice::from_ref(&app.base), 16, 6).await;
    assert_eq!(granted.len(), 96);
    let events = app
        .store
        .lease_events(&LeaseName::parse("race").unwrap())
        .await
        .unwrap();
    assert_each_generation_once(granted, &events);
}

#[cfg_attr(
    not(fencewatch_pg),
    ignore = "needs PostgreSQL: set FENCEWATCH_TEST_PG"
)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_daemons_grant_each_generation_once() {
    let db = test_db!(Backend::Postgres);
    let first = Daemon::spawn(&db, &[]).await;
    let second = Daemon::spawn(&db, &[]).await;
    let granted = acquire_race(&[first.base.clone(), second.base.clone()], 16, 6).await;
    assert_eq!(granted.len(), 96);
    let events = db
        .store()
        .await
        .lease_events(&LeaseName::parse("race").unwrap())
        .await
        .unwrap();
    assert_each_generation_once(granted, &events);
    assert!(first.terminate().await && second.terminate().await);
}

#[apply(both_backends)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn generations_survive_a_restart(#[case] backend: Backend) {
    let db = test_db!(backend);
    let http = crate::helpers::http_client();
    let daemon = Daemon::spawn(&db, &[]).await;
    let reply = post(
        &daemon.base,
        &http,
        "/v1/leases/jobs/acquire",
        json!({"holder": "w1", "ttl_ms": 1}),
    )
    .await;
    assert_eq!(reply.json["token"], 1);
    assert!(daemon.terminate().await);
    let daemon = Daemon::spawn(&db, &[]).await;
    let reply = post(
        &daemon.base,
        &http,
        "/v1/leases/jobs/acquire",
        json!({"holder": "w2", "ttl_ms": 1000}),
    )
    .await;
    assert_eq!(
        reply.json["token"], 2,
        "the counter is durable, never reset"
    );
    daemon.kill().await;
}

/// A write naming a lease is judged by what the authority knows, not only by what the
/// resource has seen.
#[apply(both_backends)]
#[tokio::test]
async fn the_authority_closes_the_gaps(#[case] backend: Backend) {
    let db = test_db!(backend);
    let app = TestApp::spawn(&db).await;
    // Generations 7 and 8 of lease "jobs": 7 lapses, 8 goes to the replacement.
    for _ in 0..6 {
        app.acquire("jobs", "churn", 1).await;
        tokio::time::sleep(Duration::from_millis(3)).await;
    }
    assert_eq!(app.acquire("jobs", "old", 1).await.json["token"], 7);
    tokio::time::sleep(Duration::from_millis(5)).await;
    assert_eq!(app.acquire("jobs", "new", 60_000).await.json["token"], 8);

    // The fresh resource never saw 8, yet 7 is refused: the lease issued 8.
    let zombie = app
        .put("jobs/totals")
        .token(7)
        .lease("jobs")
        .owner("old")
        .body("stale")
        .send()
        .await;
    zombie.assert_problem(409, "stale-token");
    assert_eq!(zombie.json["outcome"], "superseded");
    app.get("/v1/resources/jobs/totals")
        .await
        .assert_problem(404, "not-found");
    // Without naming the lease, the fence alone cannot know (the documented limit).
    assert_eq!(
        app.put("jobs/unfenced")
            .token(7)
            .body("stale")
            .send()
            .await
            .status,
        201
    );

    // A token the lease never issued is forged.
    let forged = app
        .put("jobs/totals")
        .token(9)
        .lease("jobs")
        .body("x")
        .send()
        .await;
    forged.assert_problem(403, "unknown-generation");
    assert_eq!(forged.json["outcome"], "unauthorized");
    app.put("jobs/totals")
        .token(1)
        .lease("never-acquired")
        .body("x")
        .send()
        .await
        .assert_problem(403, "unknown-generation");

    // The current holder writes.
    let current = app
        .put("jobs/totals")
        .token(8)
        .lease("jobs")
        .key("op-1")
        .body("fresh")
        .send()
        .await;
    assert_eq!(current.status, 201, "{}", current.json);
    let row = app.audit_of("jobs/totals").await.pop().unwrap();
    assert_eq!(
        (row["lease"].as_str(), row["detail"].as_str()),
        (Some("jobs"), None)
    );

    // A replay comes before the authority's checks: after 8 is superseded, op-1 still replays.
    tokio::time::sleep(Duration::from_millis(5)).await;
    app.release("jobs", "new", 8).await;
    assert_eq!(app.acquire("jobs", "newest", 60_000).await.json["token"], 9);
    let retry = app
        .put("jobs/totals")
        .token(8)
        .lease("jobs")
        .key("op-1")
        .body("fresh")
        .send()
        .await;
    assert_eq!(
        (retry.status.as_u16(), retry.header("idempotent-replayed")),
        (201, Some("true"))
    );
    app.put("jobs/totals")
        .token(8)
        .lease("jobs")
        .key("op-2")
        .body("late")
        .send()
        .await
        .assert_problem(409, "stale-token");

    let outcomes: Vec<String> = app
        .audit_of("jobs/totals")
        .await
        .iter()
        .map(|r| r["outcome"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(
        outcomes,
        [
            "superseded",
            "unauthorized",
            "unauthorized",
            "accepted",
            "replayed",
            "superseded"
        ]
    );
}

#[apply(both_backends)]
#[tokio::test]
async fn lapsed_grants_are_flagged_or_refused(#[case] backend: Backend) {
    let db = test_db!(backend);
    let lenient = app_with(&db, LeasePolicy::default()).await;
    let strict = app_with(
        &db,
        LeasePolicy {
            strict: true,
            ..LeasePolicy::default()
        },
    )
    .await;
    assert_eq!(lenient.acquire("batch", "w1", 100).await.json["token"], 1);
    tokio::time::sleep(Duration::from_millis(200)).await;

    let flagged = lenient
        .put("batch")
        .token(1)
        .lease("batch")
        .body("late")
        .send()
        .await;
    assert_eq!(
        (flagged.status.as_u16(), flagged.json["outcome"].as_str()),
        (201, Some("accepted"))
    );
    let detail = lenient.audit_of("batch").await[0]["detail"]
        .as_str()
        .unwrap()
        .to_owned();
    assert!(detail.contains("generation 1 had expired"), "{detail}");

    let refused = strict
        .put("batch")
        .token(1)
        .lease("batch")
        .body("later")
        .send()
        .await;
    refused.assert_problem(409, "lease-expired");
    assert_eq!(refused.json["outcome"], "lease_expired");
    assert_eq!(lenient.get("/v1/resources/batch").await.body, b"late");

    // A released grant is lapsed too.
    let token = lenient.acquire("done", "w1", 60_000).await.json["token"]
        .as_i64()
        .unwrap();
    assert_eq!(lenient.release("done", "w1", token).await.status, 204);
    strict
        .put("done")
        .token(token)
        .lease("done")
        .body("x")
        .send()
        .await
        .assert_problem(409, "lease-expired");
    assert_eq!(
        lenient
            .put("done")
            .token(token)
            .lease("done")
            .body("x")
            .send()
            .await
            .status,
        201
    );
    let detail = lenient.audit_of("done").await.pop().unwrap()["detail"]
        .as_str()
        .unwrap()
        .to_owned();
    assert!(detail.contains("was released"), "{detail}");
}

#[apply(both_backends)]
#[tokio::test]
async fn a_lease_fences_only_its_scope(#[case] backend: Backend) {
    let db = test_db!(backend);
    let app = app_with(
        &db,
        LeasePolicy {
            scope: LeaseScope::Prefix,
            ..LeasePolicy::default()
        },
    )
    .await;
    let token = app.acquire("accounts", "w1", 60_000).await.json["token"]
        .as_i64()
        .unwrap();
    for (key, status) in [
        ("accounts", 201),
        ("accounts/totals", 201),
        ("accountsx", 403),
        ("billing/accounts", 403),
    ] {
        let reply = app
            .put(key)
            .token(token)
            .lease("accounts")
            .body("v")
            .send()
            .await;
        assert_eq!(reply.status.as_u16(), status, "{key}: {}", reply.json);
        if status == 403 {
            reply.assert_problem(403, "out-of-scope");
            assert_eq!(reply.json["outcome"], "unauthorized");
        }
    }
    app.get("/v1/resources/billing/accounts")
        .await
        .assert_problem(404, "not-found");
}

#[apply(both_backends)]
#[tokio::test]
async fn api_keys_guard_v1_and_name_the_caller(#[case] backend: Backend) {
    use fencewatch::http::auth::ApiKeys;
    let db = test_db!(backend);
    let keys = std::sync::Arc::new(
        ApiKeys::parse("alice:key-of-alice-4d8e1b7a\nkey-without-name\n").unwrap(),
    );
    let app = TestApp::on(&db).keys(keys).spawn().await;
    let alice = |request: reqwest::RequestBuilder| request.bearer_auth("key-of-alice-4d8e1b7a");

    let none = app
        .put("doc")
        .token(1)
        .owner("mallory")
        .body("x")
        .send()
        .await;
    none.assert_problem(401, "unauthorized");
    assert_eq!(none.header("www-authenticate"), Some("Bearer"));
    // v4: counted in aggregate, not audited row by row (see tests/api/refusals.rs).
    assert!(none.json.get("audit_id").is_none(), "{}", none.json);
    let wrong = app
        .put("doc")
        .token(1)
        .header("Authorization", "Bearer key-of-alicf")
        .body("x")
        .send()
        .await;
    wrong.assert_problem(401, "unauthorized");
    app.put("doc")
        .token(1)
        .header("Authorization", "Basic a2V5LW9mLWFsaWNl")
        .body("x")
        .send()
        .await
        .assert_problem(401, "unauthorized");

    let written = app
        .put("doc")
        .token(1)
        .header("Authorization", "Bearer key-of-alice-4d8e1b7a")
        .body("x")
        .send()
        .await;
    assert_eq!(written.status, 201);
    let anonymous = app
        .put("doc")
        .token(1)
        .header("Authorization", "bearer key-without-name")
        .body("y")
        .send()
        .await;
    assert_eq!(anonymous.status, 200);

    // Reads, the audit and the authority need a key too; health does not.
    app.get("/v1/resources/doc")
        .await
        .assert_problem(401, "unauthorized");
    app.get("/v1/audit")
        .await
        .assert_problem(401, "unauthorized");
    app.acquire("jobs", "w1", 1000)
        .await
        .assert_problem(401, "unauthorized");
    assert_eq!(app.get("/healthz").await.status, 200);
    let value = Reply::from(
        alice(app.http.get(format!("{}/v1/resources/doc", app.base)))
            .send()
            .await
            .unwrap(),
    )
    .await;
    assert_eq!(value.body, b"y");

    let audit = Reply::from(
        alice(app.http.get(format!("{}/v1/audit?resource=doc", app.base)))
            .send()
            .await
            .unwrap(),
    )
    .await;
    let rows: Vec<(String, Value, Value)> = audit.json["entries"]
        .as_array()
        .unwrap()
        .iter()
        .rev()
        .map(|r| {
            (
                r["outcome"].as_str().unwrap().to_owned(),
                r["caller"].clone(),
                r["owner"].clone(),
            )
        })
        .collect();
    assert_eq!(
        rows,
        [
            ("accepted".to_owned(), json!("alice"), Value::Null),
            ("accepted".to_owned(), Value::Null, Value::Null),
        ]
    );
    // The unauthorized attempts changed nothing.
    assert_eq!(value.header("etag"), Some("\"2\""));
}

/// Under `--require-lease`, a token that does not come from the authority is refused, so no
/// caller can fence a resource out with a generation it invented.
#[apply(both_backends)]
#[tokio::test]
async fn required_leases_leave_no_token_to_invent(#[case] backend: Backend) {
    let db = test_db!(backend);
    let app = app_with(
        &db,
        LeasePolicy {
            require_lease: true,
            ..LeasePolicy::default()
        },
    )
    .await;
    let invented = app
        .put("ledger")
        .token(i64::MAX)
        .body("mine forever")
        .send()
        .await;
    invented.assert_problem(403, "unknown-generation");
    assert_eq!(invented.json["outcome"], "unauthorized");
    assert!(invented.json["detail"]
        .as_str()
        .unwrap()
        .contains("requires Fencing-Lease"));
    app.get("/v1/resources/ledger")
        .await
        .assert_problem(404, "not-found");
    let token = app.acquire("ledger", "w1", 60_000).await.json["token"]
        .as_i64()
        .unwrap();
    assert_eq!(
        app.put("ledger")
            .token(token)
            .lease("ledger")
            .body("v")
            .send()
            .await
            .status,
        201
    );
}

/// The example key file in `assets/` is refused as shipped (its keys are placeholders); with
/// each placeholder replaced by a key of its own, as its comments say, the daemon accepts it,
/// and its dashboard key only reads.
#[test]
fn the_example_key_file_parses_once_its_keys_are_replaced() {
    use fencewatch::http::auth::{ApiKeys, Authenticated, Caller, KeyFileError, KeyLineError};
    use fencewatch::http::scopes::{Grants, Need, Scope};
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("assets/api-keys.example");
    assert!(matches!(
        ApiKeys::load(&path),
        Err(KeyFileError::Invalid {
            problem: KeyLineError::Placeholder(_),
            ..
        })
    ));
    let text = std::fs::read_to_string(&path).unwrap();
    let placeholders = [
        ("replace-with-a-long-random-key", "4b1f0c9e27d86a35e1b4"),
        (
            "replace-with-another-long-random-key",
            "9d2a6e1f0c4b73852ae9",
        ),
        (
            "replace-with-a-third-long-random-key",
            "e07c3b9a5d1f62848b0c",
        ),
    ];
    let mut replaced = text.clone();
    for (placeholder, key) in placeholders {
        assert!(text.contains(placeholder), "{placeholder}");
        replaced = replaced.replace(&format!(":{placeholder} "), &format!(":{key} "));
    }
    let keys = ApiKeys::parse(&replaced).unwrap();
    let Authenticated::Key { caller, grants } = keys.authenticate(placeholders[0].1) else {
        panic!("the worker's key is in the file");
    };
    assert_eq!(caller, Caller(Some("billing-worker".into())));
    assert!(grants.allows(&Need::WriteResource(b"billing/totals".to_vec())));
    assert!(!grants.allows(&Need::WriteResource(b"payroll".to_vec())));
    let Authenticated::Key { caller, grants } = keys.authenticate(placeholders[1].1) else {
        panic!("the dashboard's key is in the file");
    };
    assert_eq!(caller, Caller(Some("ops-dashboard".into())));
    assert_eq!(grants, &Grants::Scoped(vec![Scope::Read]));
}

/// A lease body too long to be a lease request is refused as a problem, like every refusal
/// (the body extractor used to answer with plain text).
#[tokio::test]
async fn an_oversized_lease_body_is_a_413_problem() {
    let db = test_db!(Backend::Sqlite);
    let app = TestApp::spawn(&db).await;
    let long = format!(
        "{{\"holder\":\"{}\",\"ttl_ms\":1000}}",
        "h".repeat(64 * 1024) // the daemon reads 64 KiB of a lease body at most
    );
    app.acquire_raw("jobs", long)
        .await
        .assert_problem(413, "payload-too-large");
    // Chunked, with no length announced, the same.
    let chunks =
        futures_util::stream::iter((0..100).map(|_| Ok::<_, std::io::Error>(vec![b' '; 4096])));
    let reply = Reply::from(
        app.http
            .post(format!("{}/v1/leases/jobs/acquire", app.base))
            .header("content-type", "application/json")
            .body(reqwest::Body::wrap_stream(chunks))
            .send()
            .await
            .unwrap(),
    )
    .await;
    reply.assert_problem(413, "payload-too-large");
    assert_eq!(
        app.get("/v1/leases/jobs").await.status,
        404,
        "nothing taken"
    );
}

/// `GET /v1/lease-history/{name}`: newest first, paged by event id like the audit, read back
/// from a time; enough for the dashboard to say who held a generation when.
#[apply(both_backends)]
#[tokio::test]
async fn a_leases_history_pages_newest_first(#[case] backend: Backend) {
    use fencewatch::api::leases::LeaseHistory;
    use fencewatch::domain::lease_history::{tenure_at, Standing};

    let db = test_db!(backend);
    let app = TestApp::spawn(&db).await;
    app.get("/v1/lease-history/jobs%2Fa")
        .await
        .assert_problem(404, "not-found");

    assert_eq!(app.acquire("jobs/a", "w1", 150).await.status, 200);
    tokio::time::sleep(Duration::from_millis(250)).await;
    assert_eq!(app.acquire("jobs/a", "w2", 60_000).await.json["token"], 2);
    assert_eq!(app.release("jobs/a", "w2", 2).await.status, 204);
    assert_eq!(app.acquire("jobs/a", "w3", 60_000).await.json["token"], 3);
    assert_eq!(app.renew("jobs/a", "w3", 3).await.status, 200);

    let read = |query: String| {
        let app = &app;
        async move {
            let reply = app.get(&format!("/v1/lease-history/jobs%2Fa{query}")).await;
            assert_eq!(reply.status, 200, "{}", reply.json);
            serde_json::from_value::<LeaseHistory>(reply.json).unwrap()
        }
    };
    let all = read(String::new()).await;
    assert_eq!(all.lease, "jobs/a");
    let seen: Vec<_> = all
        .events
        .iter()
        .map(|e| (e.event.as_str(), e.holder.as_str(), e.token))
        .collect();
    assert_eq!(
        seen,
        [
            ("renewed", "w3", 3),
            ("acquired", "w3", 3),
            ("released", "w2", 2),
            ("acquired", "w2", 2),
            ("expired", "w1", 1),
            ("acquired", "w1", 1),
        ]
    );
    let id = |i: usize| all.events[i].id;
    let ids = |history: LeaseHistory| history.events.iter().map(|e| e.id).collect::<Vec<_>>();
    // The raw `/` reads the same lease.
    let raw = app.get("/v1/lease-history/jobs/a").await;
    assert_eq!(raw.json["events"].as_array().map(Vec::len), Some(6));

    assert_eq!(ids(read("?limit=2".into()).await), [id(0), id(1)]);
    assert_eq!(
        ids(read(format!("?before={}&limit=2", id(1))).await),
        [id(2), id(3)]
    );
    // `after`: the oldest `limit` above the id, newest first.
    assert_eq!(
        ids(read(format!("?after={}&limit=2", id(4))).await),
        [id(2), id(3)]
    );
    // `until`: at or before the time w2 was granted (its predecessor's expiry is recorded then).
    let granted_w2 = all.events[3].at;
    let until = granted_w2.to_rfc3339_opts(chrono::SecondsFormat::Micros, true);
    let until = until.replace('+', "%2B");
    assert_eq!(
        ids(read(format!("?until={until}")).await),
        [id(3), id(4), id(5)]
    );

    // Who held generation 1 when w2 started: w1, lapsed, succeeded by w2.
    let tenure = tenure_at(&all.events, 1, granted_w2).unwrap();
    assert_eq!(tenure.holder, "w1");
    assert!(matches!(tenure.standing, Standing::Lapsed { .. }));
    assert_eq!(tenure.successor, Some(("w2".to_owned(), 2)));

    for bad in [
        "limit=0",
        "limit=1001",
        "before=0",
        "after=-1",
        "until=yesterday",
        "colour=red",
        "limit=1&limit=2",
    ] {
        app.get(&format!("/v1/lease-history/jobs%2Fa?{bad}"))
            .await
            .assert_problem(400, "invalid-request");
    }
    app.get("/v1/lease-history/%FF")
        .await
        .assert_problem(400, "invalid-request");
    // Reading changed nothing.
    assert_eq!(read(String::new()).await, all);
}
