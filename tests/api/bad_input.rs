//! Malformed requests get a clear 4xx problem, change nothing, and never a 5xx.

use crate::both_backends;
use crate::helpers::{Backend, Reply, TestApp};
use crate::test_db;
use fencewatch::app::service::Limits;
use rstest::rstest;
use rstest_reuse::apply;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

const LIMIT: usize = 1024;

async fn app(db: &crate::helpers::TestDb) -> TestApp {
    let app = TestApp::on(db)
        .limits(Limits {
            max_value_bytes: LIMIT,
            ..Limits::default()
        })
        .spawn()
        .await;
    assert_eq!(
        app.put("target")
            .token(5)
            .body("original")
            .send()
            .await
            .status,
        201
    );
    app
}

async fn assert_unchanged(app: &TestApp) {
    let value = app.get("/v1/resources/target").await;
    assert_eq!(value.body, b"original");
    assert_eq!(
        (value.header("etag"), value.header("fencing-token")),
        (Some("\"1\""), Some("5"))
    );
}

#[apply(both_backends)]
#[tokio::test]
async fn bad_keys_are_refused(#[case] backend: Backend) {
    let db = test_db!(backend);
    let app = app(&db).await;
    let long = "k".repeat(513);
    let long_encoded = "%6B".repeat(513);
    for key in [
        long.as_str(),
        long_encoded.as_str(),
        "a%00b",
        "line%0Abreak",
        "del%7F",
        "c1%C2%80",
        "bad%FFutf8",
        "truncated%E2%82",
    ] {
        let put = app.put(key).token(9).body("x").send().await;
        put.assert_problem(400, "invalid-request");
        let get = app.get(&format!("/v1/resources/{key}")).await;
        get.assert_problem(400, "invalid-request");
    }
    app.put("")
        .token(9)
        .body("x")
        .send()
        .await
        .assert_problem(400, "invalid-request");
    // The longest legal key, in multi-byte characters, works.
    let widest = "%C3%A9".repeat(256);
    assert_eq!(app.put(&widest).token(1).body("x").send().await.status, 201);
    assert_eq!(
        app.get(&format!("/v1/resources/{widest}")).await.status,
        200
    );
    // A stray % is literal text, not an escape.
    assert_eq!(
        app.put("100%25").token(1).body("x").send().await.status,
        201
    );
    assert_unchanged(&app).await;
}

#[apply(both_backends)]
#[tokio::test]
async fn bad_headers_are_refused_and_audited(#[case] backend: Backend) {
    let db = test_db!(backend);
    let app = app(&db).await;
    let long_key = "k".repeat(256);
    let long_owner = "o".repeat(129);
    let long_lease = "l".repeat(129);
    let cases: Vec<(&str, &str)> = vec![
        ("Idempotency-Key", ""),
        ("Idempotency-Key", "\"\""),
        ("Idempotency-Key", "\"open"),
        ("Idempotency-Key", "in\"side"),
        ("Idempotency-Key", &long_key),
        ("If-Match", "*"),
        ("If-Match", "W/\"1\""),
        ("If-Match", "\"1\", \"2\""),
        ("If-Match", "\"-1\""),
        ("If-Match", "\"one\""),
        ("If-Match", ""),
        ("Fencing-Owner", ""),
        ("Fencing-Owner", &long_owner),
        ("Fencing-Lease", ""),
        ("Fencing-Lease", &long_lease),
    ];
    for (name, value) in &cases {
        let reply = app
            .put("target")
            .token(9)
            .header(name, value)
            .body("evil")
            .send()
            .await;
        reply.assert_problem(400, "invalid-request");
        assert_eq!(reply.json["outcome"], "invalid", "{name}: {value:?}");
        assert_eq!(
            reply.json["token"], 9,
            "the parts that parsed are kept: {name}"
        );
    }
    // Non-ASCII header bytes.
    let raw = reqwest::header::HeaderValue::from_bytes("wörker".as_bytes()).unwrap();
    let reply = Reply::from(
        app.http
            .put(format!("{}/v1/resources/target", app.base))
            .header("Fencing-Token", "9")
            .header("Fencing-Owner", raw)
            .body("evil")
            .send()
            .await
            .unwrap(),
    )
    .await;
    reply.assert_problem(400, "invalid-request");
    // Repeated optional headers are ambiguous too.
    app.put("target")
        .token(9)
        .key("a")
        .key("b")
        .body("evil")
        .send()
        .await
        .assert_problem(400, "invalid-request");
    assert_unchanged(&app).await;
    let invalid = app
        .audit_of("target")
        .await
        .iter()
        .filter(|r| r["outcome"] == "invalid")
        .count();
    assert_eq!(invalid, cases.len() + 2);
}

#[apply(both_backends)]
#[tokio::test]
async fn values_over_the_limit_get_413(#[case] backend: Backend) {
    let db = test_db!(backend);
    let app = app(&db).await;
    assert_eq!(
        app.put("target")
            .token(5)
            .body(vec![b'x'; LIMIT])
            .send()
            .await
            .status,
        200
    );
    app.put("fresh")
        .token(5)
        .body(vec![b'x'; LIMIT])
        .send()
        .await;
    let over = app
        .put("target")
        .token(6)
        .body(vec![b'x'; LIMIT + 1])
        .send()
        .await;
    over.assert_problem(413, "payload-too-large");
    assert_eq!(over.json["outcome"], "invalid");

    // Without a Content-Length (chunked), the limit is enforced while reading.
    let address = app.base.trim_start_matches("http://");
    let mut stream = tokio::net::TcpStream::connect(address).await.unwrap();
    let mut request = b"PUT /v1/resources/target HTTP/1.1\r\nHost: 127.0.0.1\r\nFencing-Token: 6\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n".to_vec();
    for _ in 0..3 {
        request.extend_from_slice(format!("{:X}\r\n", 512).as_bytes());
        request.extend_from_slice(&[b'y'; 512]);
        request.extend_from_slice(b"\r\n");
    }
    request.extend_from_slice(b"0\r\n\r\n");
    stream.write_all(&request).await.unwrap();
    let mut response = Vec::new();
    stream.read_to_end(&mut response).await.unwrap();
    let text = String::from_utf8_lossy(&response);
    assert!(text.starts_with("HTTP/1.1 413"), "{text}");
    assert!(
        text.contains("application/problem+json") && text.contains("payload-too-large"),
        "{text}"
    );

    let value = app.get("/v1/resources/target").await;
    assert_eq!(
        (value.body.len(), value.header("etag")),
        (LIMIT, Some("\"2\""))
    );
}

#[rstest]
#[case::sqlite(Backend::Sqlite)]
#[tokio::test]
async fn unknown_routes_and_methods_are_problems(#[case] backend: Backend) {
    let db = test_db!(backend);
    let app = app(&db).await;
    app.get("/v2/resources/target")
        .await
        .assert_problem(404, "not-found");
    let delete = Reply::from(
        app.http
            .delete(format!("{}/v1/resources/target", app.base))
            .send()
            .await
            .unwrap(),
    )
    .await;
    delete.assert_problem(405, "method-not-allowed");
    let post = Reply::from(
        app.http
            .post(format!("{}/v1/audit", app.base))
            .send()
            .await
            .unwrap(),
    )
    .await;
    post.assert_problem(405, "method-not-allowed");
    assert_eq!(app.get("/healthz").await.status, 200);
    assert_eq!(app.get("/readyz").await.status, 200);
    assert_unchanged(&app).await;
}

/// `/readyz` tells a load balancer when the database is gone; `/healthz` only that the process
/// runs.
#[apply(both_backends)]
#[tokio::test]
async fn readiness_follows_the_database(#[case] backend: Backend) {
    let db = test_db!(backend);
    let app = TestApp::spawn(&db).await;
    assert_eq!(app.get("/readyz").await.status, 200);
    app.store.close().await;
    app.get("/readyz").await.assert_problem(503, "unavailable");
    assert_eq!(app.get("/healthz").await.status, 200);
    // Writes are refused as unavailable too, never with a 500.
    app.put("k")
        .token(1)
        .body("v")
        .send()
        .await
        .assert_problem(503, "unavailable");
}
