//! Hostile input: whatever the request, a 4xx problem or a harmless success, never a 5xx, and
//! nothing but the request's own resource changes.

use crate::both_backends;
use crate::helpers::{Backend, Reply, SseClient, TestApp};
use crate::test_db;
use fencewatch::live::LiveConfig;
use rstest_reuse::apply;
use std::time::Duration;

#[apply(both_backends)]
#[tokio::test]
async fn hostile_requests_get_problems_and_change_nothing(#[case] backend: Backend) {
    let db = test_db!(backend);
    let app = TestApp::spawn(&db).await;
    assert_eq!(
        app.put("target")
            .token(5)
            .body("original")
            .send()
            .await
            .status,
        201
    );
    let send = |method: &str, path: &str, body: Vec<u8>| {
        let method = reqwest::Method::from_bytes(method.as_bytes()).unwrap();
        app.http
            .request(method, format!("{}{path}", app.base))
            .header("Fencing-Token", "9")
            .header("Content-Type", "application/json")
            .body(body)
    };
    let deep = format!("{}{}", "[".repeat(10_000), "]".repeat(10_000)).into_bytes();
    let cases: Vec<(&str, &str, Vec<u8>, u16)> = vec![
        ("DELETE", "/v1/resources/target", vec![], 405),
        ("PATCH", "/v1/resources/target", vec![], 405),
        ("BREW", "/v1/resources/target", vec![], 405),
        ("POST", "/v1/resources/target", vec![], 405),
        ("GET", "/v1/audit?limit=99999999999999999999", vec![], 400),
        ("GET", "/v1/audit?before=-1", vec![], 400),
        ("GET", "/v1/audit?limit=1e3", vec![], 400),
        ("GET", "/v1/audit?resource=%FF", vec![], 400),
        (
            "GET",
            "/v1/overlaps?state=%27%3B%20DROP%20TABLE%20audit",
            vec![],
            400,
        ),
        ("POST", "/v1/leases/target/acquire", deep.clone(), 400),
        (
            "POST",
            "/v1/leases/target/acquire",
            b"{\"holder\": \"\xff\xfe\", \"ttl_ms\": 5}".to_vec(),
            400,
        ),
        (
            "POST",
            "/v1/leases/target/acquire",
            b"{\"holder\": \"w\", \"ttl_ms\": 99999999999999999999999}".to_vec(),
            400,
        ),
        (
            "POST",
            "/v1/leases/%FF/acquire",
            b"{\"holder\": \"w\", \"ttl_ms\": 5}".to_vec(),
            400,
        ),
        (
            "GET",
            "/v1/resources/%2e%2e%2f%2e%2e%2fetc%2fpasswd",
            vec![],
            404,
        ),
        ("GET", "/v1/resources/target%00", vec![], 400),
        ("PUT", "/v1/resources/%C0%AF", b"x".to_vec(), 400),
        ("GET", "/v1/../../etc/passwd", vec![], 404),
    ];
    for (method, path, body, status) in cases {
        let reply = Reply::from(send(method, path, body).send().await.unwrap()).await;
        assert_eq!(
            reply.status.as_u16(),
            status,
            "{method} {path}: {}",
            reply.json
        );
        assert_eq!(
            reply.content_type(),
            "application/problem+json",
            "{method} {path}"
        );
        assert!(
            reply.json["type"].is_string() && reply.json["detail"].is_string(),
            "{method} {path}"
        );
    }
    // SQL metacharacters are data: stored and read back verbatim, and nothing else is touched.
    let sly = "%27%3B%20DROP%20TABLE%20audit%3B%20--";
    let reply = app
        .put(sly)
        .token(1)
        .owner("' OR 1=1 --")
        .header("Idempotency-Key", "\"; DELETE FROM operations; --\"")
        .body("x")
        .send()
        .await;
    assert_eq!(reply.status, 201, "{}", reply.json);
    assert_eq!(reply.json["resource"], "'; DROP TABLE audit; --");
    let read = app.get(&format!("/v1/resources/{sly}")).await;
    assert_eq!(read.body, b"x");
    let rows = app.audit_of("'; DROP TABLE audit; --").await;
    assert_eq!(rows[0]["owner"], "' OR 1=1 --");
    let value = app.get("/v1/resources/target").await;
    assert_eq!(
        (value.body.as_slice(), value.header("etag")),
        (&b"original"[..], Some("\"1\""))
    );
    assert!(
        app.get("/v1/audit").await.json["entries"]
            .as_array()
            .unwrap()
            .len()
            >= 2
    );
}

/// Live subscribers are capped: one over the cap gets a 503 problem, and a place frees when a
/// subscriber leaves.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn live_subscribers_are_capped() {
    let db = test_db!(Backend::Sqlite);
    let live = LiveConfig {
        max_subscribers: 2,
        ..LiveConfig::default()
    };
    let app = TestApp::on(&db).live(live).spawn().await;
    let first = SseClient::connect(&app.base, None).await;
    let _second = SseClient::connect(&app.base, None).await;
    app.get("/v1/events")
        .await
        .assert_problem(503, "unavailable");
    drop(first);
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    loop {
        let response = app
            .http
            .get(format!("{}/v1/events", app.base))
            .send()
            .await
            .unwrap();
        if response.status() == 200 {
            break;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "the place was never freed"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}
