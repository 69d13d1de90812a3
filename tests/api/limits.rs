//! Resource limits: slow, idle, numerous or bloated clients are cut off or refused, and the
//! daemon goes on serving everyone else.

use crate::helpers::{Backend, Daemon, Reply, TestDb};
use std::time::{Duration, Instant};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

fn address(daemon: &Daemon) -> String {
    daemon.base.trim_start_matches("http://").to_owned()
}

/// Reads until the daemon closes the connection; returns what it sent and when it closed.
async fn until_closed(stream: &mut TcpStream, within: Duration) -> Option<(Vec<u8>, Duration)> {
    let started = Instant::now();
    let mut received = Vec::new();
    let mut buffer = [0u8; 4096];
    loop {
        match tokio::time::timeout(within, stream.read(&mut buffer)).await {
            Ok(Ok(0)) | Ok(Err(_)) => return Some((received, started.elapsed())),
            Ok(Ok(n)) => received.extend_from_slice(&buffer[..n]),
            Err(_) => return None,
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_trickling_its_headers_is_cut_off() {
    let db = TestDb::new(Backend::Sqlite).await;
    let daemon = Daemon::spawn(&db, &["--header-timeout", "1s"]).await;
    let mut slow = TcpStream::connect(address(&daemon)).await.unwrap();
    slow.write_all(b"PUT /v1/resources/slow HTTP/1.1\r\nHost: x\r\nFencing-Token: 1\r\n")
        .await
        .unwrap();
    let (_, after) = until_closed(&mut slow, Duration::from_secs(10))
        .await
        .expect("the daemon closes a connection whose headers never end");
    assert!(
        after >= Duration::from_millis(500),
        "closed after {after:?}"
    );

    // An idle connection that never sends a byte is closed too.
    let mut idle = TcpStream::connect(address(&daemon)).await.unwrap();
    until_closed(&mut idle, Duration::from_secs(10))
        .await
        .expect("the daemon closes an idle connection");

    // Meanwhile everyone else is served.
    let reply = Reply::from(
        crate::helpers::http_client()
            .get(format!("{}/v1/resources/slow", daemon.base))
            .send()
            .await
            .unwrap(),
    )
    .await;
    reply.assert_problem(404, "not-found");
    daemon.kill().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_body_that_never_arrives_is_refused_and_audited() {
    let db = TestDb::new(Backend::Sqlite).await;
    let daemon = Daemon::spawn(&db, &["--body-timeout", "1s"]).await;
    let mut slow = TcpStream::connect(address(&daemon)).await.unwrap();
    slow.write_all(
        b"PUT /v1/resources/trickle HTTP/1.1\r\nHost: x\r\nFencing-Token: 3\r\n\
          Content-Length: 10\r\n\r\nabc",
    )
    .await
    .unwrap();
    let started = Instant::now();
    let mut buffer = vec![0u8; 8192];
    let n = tokio::time::timeout(Duration::from_secs(10), slow.read(&mut buffer))
        .await
        .expect("an answer within the body timeout and a bit")
        .unwrap();
    let answer = String::from_utf8_lossy(&buffer[..n]).to_string();
    assert!(answer.starts_with("HTTP/1.1 400"), "{answer}");
    assert!(answer.contains("application/problem+json"), "{answer}");
    assert!(answer.contains("did not arrive within 1s"), "{answer}");
    assert!(started.elapsed() >= Duration::from_millis(500));

    let audit =
        crate::helpers::audit_of(&crate::helpers::http_client(), &daemon.base, "trickle").await;
    assert_eq!(audit.len(), 1);
    assert_eq!(audit[0]["outcome"], "invalid");
    assert_eq!(audit[0]["token"], 3);
    daemon.kill().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn connections_beyond_the_cap_wait_their_turn() {
    let db = TestDb::new(Backend::Sqlite).await;
    let daemon = Daemon::spawn(&db, &["--max-connections", "2", "--header-timeout", "60s"]).await;
    let first = TcpStream::connect(address(&daemon)).await.unwrap();
    let second = TcpStream::connect(address(&daemon)).await.unwrap();
    // Let the daemon take both before the third arrives.
    tokio::time::sleep(Duration::from_millis(200)).await;
    let base = daemon.base.clone();
    let third = tokio::spawn(async move {
        crate::helpers::http_client()
            .get(format!("{base}/healthz"))
            .send()
            .await
            .map(|response| response.status().as_u16())
    });
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert!(
        !third.is_finished(),
        "a third connection is not served while two are open"
    );
    drop(first);
    let status = tokio::time::timeout(Duration::from_secs(10), third)
        .await
        .expect("served once a slot frees")
        .unwrap()
        .unwrap();
    assert_eq!(status, 200);
    drop(second);
    daemon.kill().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn oversized_headers_are_refused_without_a_change() {
    let db = TestDb::new(Backend::Sqlite).await;
    let daemon = Daemon::spawn(&db, &[]).await;
    let http = crate::helpers::http_client();
    let bloat = "x".repeat(20 * 1024);
    let write = Reply::from(
        http.put(format!("{}/v1/resources/bloated", daemon.base))
            .header("Fencing-Token", "1")
            .header("X-Padding", &bloat)
            .body("value")
            .send()
            .await
            .unwrap(),
    )
    .await;
    write.assert_problem(400, "invalid-request");
    assert_eq!(write.json["outcome"], "invalid");
    let read = Reply::from(
        http.get(format!("{}/v1/audit", daemon.base))
            .header("X-Padding", &bloat)
            .send()
            .await
            .unwrap(),
    )
    .await;
    read.assert_problem(400, "invalid-request");
    let value = Reply::from(
        http.get(format!("{}/v1/resources/bloated", daemon.base))
            .send()
            .await
            .unwrap(),
    )
    .await;
    value.assert_problem(404, "not-found");
    daemon.kill().await;
}
