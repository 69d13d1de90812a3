//! DNS rebinding: a page on `evil.example` whose name is made to resolve to the daemon's
//! address talks to the daemon as its own origin (no `Origin` check can tell), but its requests
//! carry `Host: evil.example`. A `Host` the daemon was not told to answer to gets `421`
//! `misdirected-request` before anything else runs, on every route.

use crate::both_backends;
use crate::helpers::{http_client, Backend, Daemon, Reply, TestApp};
use crate::test_db;
use rstest::rstest;
use rstest_reuse::apply;
use serde_json::json;
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// `method path` with this `Host`, the rest as a well-behaved client sends it.
async fn with_host(
    base: &str,
    host: &str,
    method: &str,
    path: &str,
    body: Option<serde_json::Value>,
) -> Reply {
    let method = reqwest::Method::from_bytes(method.as_bytes()).unwrap();
    let mut request = http_client()
        .request(method, format!("{base}{path}"))
        .header("Host", host);
    if let Some(body) = body {
        request = request.json(&body);
    }
    if path.starts_with("/v1/resources/") {
        request = request.header("Fencing-Token", "7");
    }
    Reply::from(request.send().await.unwrap()).await
}

fn port(base: &str) -> u16 {
    base.rsplit(':').next().unwrap().parse().unwrap()
}

#[apply(both_backends)]
#[tokio::test]
async fn a_foreign_host_is_misdirected_and_changes_nothing(#[case] backend: Backend) {
    let db = test_db!(backend);
    let app = TestApp::spawn(&db).await;
    let port = port(&app.base);
    let evil = format!("evil.example:{port}");
    for host in [
        evil.as_str(),
        "evil.example",
        "EVIL.Example:7420",
        "localhost.evil.example",
        "127.0.0.1.nip.io",
    ] {
        for (method, path, body) in [
            ("GET", "/v1/stats", None),
            ("GET", "/v1/audit", None),
            ("PUT", "/v1/resources/doc", None),
            (
                "POST",
                "/v1/leases/jobs/acquire",
                Some(json!({"holder": "page", "ttl_ms": 60000})),
            ),
            ("GET", "/metrics", None),
            ("GET", "/readyz", None),
            ("GET", "/healthz", None),
        ] {
            let reply = with_host(&app.base, host, method, path, body).await;
            reply.assert_problem(421, "misdirected-request");
            assert!(
                reply.json["detail"]
                    .as_str()
                    .unwrap()
                    .contains("--allowed-host"),
                "{host} {method} {path}: {}",
                reply.json
            );
        }
    }
    // Nothing changed.
    app.get("/v1/resources/doc")
        .await
        .assert_problem(404, "not-found");
    app.get("/v1/leases/jobs")
        .await
        .assert_problem(404, "not-found");
    assert!(app.audit_of("doc").await.is_empty());

    // The default names, in any case and with or without a port, and IP literals (which no
    // rebinding can send: the attack needs a name).
    let localhost = format!("localhost:{port}");
    let loopback = format!("127.0.0.1:{port}");
    let ipv6 = format!("[::1]:{port}");
    for host in [
        localhost.as_str(),
        "LocalHost",
        "localhost.",
        loopback.as_str(),
        ipv6.as_str(),
        "[::1]",
        "10.1.2.3:7420",
        "[2001:db8::1]:7420",
    ] {
        let reply = with_host(&app.base, host, "GET", "/healthz", None).await;
        assert_eq!(reply.status, 200, "Host: {host}: {}", reply.json);
    }
    let written = with_host(&app.base, &localhost, "PUT", "/v1/resources/doc", None).await;
    assert_eq!(written.status, 201, "{}", written.json);
}

/// `--allowed-host` adds a name; a request without `Host` (HTTP/1.0) is served, and one whose
/// request target names a foreign authority is misdirected whatever its `Host` says.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn allowed_hosts_are_added_on_the_command_line() {
    let db = test_db!(Backend::Sqlite);
    let daemon = Daemon::spawn(&db, &["--allowed-host", "FenceWatch.Internal"]).await;
    for host in [
        "fencewatch.internal:7420",
        "FENCEWATCH.INTERNAL",
        "localhost:1",
        "127.0.0.1",
    ] {
        let reply = with_host(&daemon.base, host, "GET", "/v1/stats", None).await;
        assert_eq!(reply.status, 200, "Host: {host}: {}", reply.json);
    }
    for host in [
        "evil.example:7420",
        "internal",
        "fencewatch.internal.evil.example",
    ] {
        with_host(&daemon.base, host, "GET", "/v1/stats", None)
            .await
            .assert_problem(421, "misdirected-request");
    }

    let address = daemon.base.trim_start_matches("http://").to_owned();
    let raw = |request: &'static [u8]| {
        let address = address.clone();
        async move {
            let mut stream = tokio::net::TcpStream::connect(address).await.unwrap();
            stream.write_all(request).await.unwrap();
            let mut answer = Vec::new();
            tokio::time::timeout(Duration::from_secs(10), stream.read_to_end(&mut answer))
                .await
                .expect("an answer and a close")
                .unwrap();
            String::from_utf8_lossy(&answer).into_owned()
        }
    };
    let old = raw(b"GET /healthz HTTP/1.0\r\n\r\n").await;
    assert!(
        old.starts_with("HTTP/1.0 200") || old.starts_with("HTTP/1.1 200"),
        "{old}"
    );
    let absolute = raw(
        b"GET http://evil.example/v1/stats HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n",
    )
    .await;
    assert!(absolute.starts_with("HTTP/1.1 421"), "{absolute}");
    assert!(absolute.contains("misdirected-request"), "{absolute}");
    daemon.kill().await;
}

/// Sends `request` on a connection of its own; answers all the daemon sent before closing.
async fn raw_exchange(base: &str, request: &[u8]) -> String {
    let address = base.trim_start_matches("http://");
    let mut stream = tokio::net::TcpStream::connect(address).await.unwrap();
    stream.write_all(request).await.unwrap();
    let mut answer = Vec::new();
    tokio::time::timeout(Duration::from_secs(10), stream.read_to_end(&mut answer))
        .await
        .expect("an answer and a close")
        .unwrap();
    String::from_utf8_lossy(&answer).into_owned()
}

/// RFC 9112 §3.2: an HTTP/1.1 request without `Host`, or with more than one, is answered `400`.
/// Two `Host` headers would let the guard check one name while something behind the daemon (a
/// proxy, a log) reads the other; a request without one names no host to check. With or
/// without `--allowed-host` (and with `*`), on every route, as a problem; nothing changes. An
/// HTTP/1.0 request without `Host` is still served.
#[rstest]
#[case::default(&[])]
#[case::allowed_host(&["--allowed-host", "fencewatch.internal"])]
#[case::any_host(&["--allowed-host", "*"])]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_request_without_one_host_is_refused(#[case] flags: &[&str]) {
    let db = test_db!(Backend::Sqlite);
    let daemon = Daemon::spawn(&db, flags).await;
    let requests: [&[u8]; 6] = [
        b"GET /healthz HTTP/1.1\r\nConnection: close\r\n\r\n",
        b"GET /v1/stats HTTP/1.1\r\nConnection: close\r\n\r\n",
        b"PUT /v1/resources/doc HTTP/1.1\r\nFencing-Token: 1\r\nContent-Length: 1\r\nConnection: close\r\n\r\nx",
        b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n",
        b"PUT /v1/resources/doc HTTP/1.1\r\nHost: localhost\r\nHost: evil.example\r\nFencing-Token: 1\r\nContent-Length: 1\r\nConnection: close\r\n\r\nx",
        b"GET /metrics HTTP/1.1\r\nHost: fencewatch.internal\r\nhost: localhost\r\nConnection: close\r\n\r\n",
    ];
    for request in requests {
        let answer = raw_exchange(&daemon.base, request).await;
        let shown = String::from_utf8_lossy(request);
        assert!(answer.starts_with("HTTP/1.1 400"), "{shown:?}: {answer}");
        assert!(
            answer.contains("application/problem+json"),
            "{shown:?}: {answer}"
        );
        assert!(answer.contains("invalid-request"), "{shown:?}: {answer}");
        assert!(answer.contains("Host"), "{shown:?}: {answer}");
    }
    let unchanged = raw_exchange(
        &daemon.base,
        b"GET /v1/resources/doc HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n",
    )
    .await;
    assert!(unchanged.starts_with("HTTP/1.1 404"), "{unchanged}");
    let old = raw_exchange(&daemon.base, b"GET /healthz HTTP/1.0\r\n\r\n").await;
    assert!(
        old.starts_with("HTTP/1.0 200") || old.starts_with("HTTP/1.1 200"),
        "{old}"
    );
    let one = raw_exchange(
        &daemon.base,
        b"GET /healthz HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n",
    )
    .await;
    assert!(one.starts_with("HTTP/1.1 200"), "{one}");
    daemon.kill().await;
}
