//! Resource limits: slow, idle, numerous or bloated clients are cut off or refused, and the
//! daemon goes on serving everyone else.

use crate::helpers::{Backend, Daemon, Reply, TestDb};
use std::time::{Duration, Instant};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// The flag under test.
const BODY_READ_TIMEOUT: &str = "--body-read-timeout";

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
    slow.write_all(b"PUT /v1/resources/slow HTTP/1.1\r\nHost: 127.0.0.1\r\nFencing-Token: 1\r\n")
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

/// A write's body that stalls is answered `408`, and the attempt of the caller is audited.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_body_that_never_arrives_is_refused_and_audited() {
    let db = TestDb::new(Backend::Sqlite).await;
    let daemon = Daemon::spawn(&db, &[BODY_READ_TIMEOUT, "1s"]).await;
    let mut slow = TcpStream::connect(address(&daemon)).await.unwrap();
    slow.write_all(
        b"PUT /v1/resources/trickle HTTP/1.1\r\nHost: 127.0.0.1\r\nFencing-Token: 3\r\n\
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
    assert!(answer.starts_with("HTTP/1.1 408"), "{answer}");
    assert!(answer.contains("application/problem+json"), "{answer}");
    assert!(answer.contains("request-timeout"), "{answer}");
    assert!(answer.contains("did not arrive within 1s"), "{answer}");
    assert!(started.elapsed() >= Duration::from_millis(500));

    let audit =
        crate::helpers::audit_of(&crate::helpers::http_client(), &daemon.base, "trickle").await;
    assert_eq!(audit.len(), 1);
    assert_eq!(audit[0]["outcome"], "invalid");
    assert_eq!(audit[0]["token"], 3);
    daemon.kill().await;
}

/// A lease request or an operator's reset whose body stalls is answered `408` once
/// `--body-read-timeout` has passed, and its connection is closed; nothing is granted.
#[rstest::rstest]
#[case::lease("/v1/leases/jobs/acquire")]
#[case::reset("/v1/resources/jobs/reset")]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stalled_post_body_gets_408_within_the_body_read_timeout(#[case] path: &str) {
    let db = TestDb::new(Backend::Sqlite).await;
    let daemon = Daemon::spawn(&db, &[BODY_READ_TIMEOUT, "1s"]).await;
    let mut slow = TcpStream::connect(address(&daemon)).await.unwrap();
    slow.write_all(
        format!(
            "POST {path} HTTP/1.1\r\nHost: 127.0.0.1\r\n\
             Content-Type: application/json\r\nContent-Length: 100\r\n\r\n{{\"holder\""
        )
        .as_bytes(),
    )
    .await
    .unwrap();
    let (answer, after) = until_closed(&mut slow, Duration::from_secs(10))
        .await
        .expect("an answer, and the connection closed, within the timeout and a bit");
    let answer = String::from_utf8_lossy(&answer).to_string();
    assert!(answer.starts_with("HTTP/1.1 408"), "{answer}");
    assert!(answer.contains("application/problem+json"), "{answer}");
    assert!(answer.contains("request-timeout"), "{answer}");
    assert!(
        after >= Duration::from_millis(500),
        "answered after {after:?}"
    );
    let lease = Reply::from(
        crate::helpers::http_client()
            .get(format!("{}/v1/leases/jobs", daemon.base))
            .send()
            .await
            .unwrap(),
    )
    .await;
    lease.assert_problem(404, "not-found");
    daemon.kill().await;
}

/// The contract: `/healthz` answers within 1 s while `--max-connections` connections each hold
/// a body that never arrives (half lease requests, half writes). Every slot is taken, so the new
/// connection gets in only because stalled connections are cut to make room for it; each slow
/// body otherwise ends with `408` at the body read timeout. The 1 s is asserted because it is
/// the contract; the mechanism needs a check interval (50 ms) once the slow connections have been
/// stalled for its grace (0.5 s), which they have by then.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn healthz_answers_within_a_second_while_every_slot_holds_a_slow_body() {
    const SLOTS: usize = 64;
    let db = TestDb::new(Backend::Sqlite).await;
    let daemon = Daemon::spawn(&db, &["--max-connections", "64", BODY_READ_TIMEOUT, "5s"]).await;
    let mut slow = Vec::new();
    for n in 0..SLOTS {
        let mut stream = TcpStream::connect(address(&daemon)).await.unwrap();
        let head = if n % 2 == 0 {
            format!(
                "POST /v1/leases/slow-{n}/acquire HTTP/1.1\r\nHost: 127.0.0.1\r\n\
                 Content-Type: application/json\r\nContent-Length: 1000\r\n\r\n{{"
            )
        } else {
            format!(
                "PUT /v1/resources/slow-{n} HTTP/1.1\r\nHost: 127.0.0.1\r\n\
                 Fencing-Token: 1\r\nContent-Length: 1000\r\n\r\nx"
            )
        };
        stream.write_all(head.as_bytes()).await.unwrap();
        slow.push(stream);
    }
    // Every slot is taken and every slow body has stalled.
    tokio::time::sleep(Duration::from_secs(1)).await;

    let started = Instant::now();
    let health = tokio::time::timeout(
        Duration::from_secs(30),
        crate::helpers::http_client()
            .get(format!("{}/healthz", daemon.base))
            .send(),
    )
    .await
    .expect("/healthz answers at all while the slots are full")
    .unwrap();
    let took = started.elapsed();
    println!("/healthz answered in {took:?} with {SLOTS} slow bodies holding every slot");
    assert_eq!(health.status().as_u16(), 200);
    assert!(
        took < Duration::from_secs(1),
        "/healthz took {took:?} with every slot held by a slow body"
    );

    // Each slow body ends: cut to make room, or answered 408 at the body read timeout.
    let (mut timed_out, mut cut) = (0, 0);
    for mut stream in slow {
        let (answer, _) = until_closed(&mut stream, Duration::from_secs(15))
            .await
            .expect("every slow body is ended by the body read timeout");
        let answer = String::from_utf8_lossy(&answer).to_string();
        if answer.is_empty() {
            cut += 1;
        } else {
            assert!(answer.starts_with("HTTP/1.1 408"), "{answer}");
            timed_out += 1;
        }
    }
    println!("slow bodies: {timed_out} answered 408, {cut} cut to make room");
    assert!(timed_out > 0, "the body read timeout answered none");
    daemon.kill().await;
}

/// Follows the live stream on a connection of its own: a request being served for as long as
/// the connection lasts.
async fn following_events(daemon: &Daemon) -> TcpStream {
    let mut stream = TcpStream::connect(address(daemon)).await.unwrap();
    stream
        .write_all(b"GET /v1/events HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
        .await
        .unwrap();
    let mut buffer = [0u8; 1024];
    let n = tokio::time::timeout(Duration::from_secs(10), stream.read(&mut buffer))
        .await
        .expect("the stream's headers")
        .unwrap();
    assert!(buffer[..n].starts_with(b"HTTP/1.1 200"));
    stream
}

/// Connections serving requests are never cut to make room: beyond the cap, a client waits
/// until one of them ends. Here one follows the live stream (subscribers alone may hold only
/// half the slots) and one is a write whose handler waits for the database, held by another
/// connection's write lock.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn connections_beyond_the_cap_wait_their_turn() {
    use sqlx::Connection;
    let db = TestDb::new(Backend::Sqlite).await;
    let daemon = Daemon::spawn(&db, &["--max-connections", "2", "--header-timeout", "60s"]).await;
    let first = following_events(&daemon).await;
    // The database's write lock, held: the next write waits for it in its handler.
    let mut holder = sqlx::SqliteConnection::connect(&db.url).await.unwrap();
    sqlx::query("BEGIN IMMEDIATE")
        .execute(&mut holder)
        .await
        .unwrap();
    let base = daemon.base.clone();
    let second = tokio::spawn(async move {
        crate::helpers::http_client()
            .put(format!("{base}/v1/resources/held"))
            .header("Fencing-Token", "1")
            .body("value")
            .send()
            .await
            .map(|response| response.status().as_u16())
    });
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(!second.is_finished(), "the write waits for the lock");
    let base = daemon.base.clone();
    let third = tokio::spawn(async move {
        crate::helpers::http_client()
            .get(format!("{base}/healthz"))
            .send()
            .await
            .map(|response| response.status().as_u16())
    });
    tokio::time::sleep(Duration::from_millis(1500)).await;
    assert!(
        !third.is_finished(),
        "a third connection is not served while two are being served"
    );
    drop(first);
    let status = tokio::time::timeout(Duration::from_secs(10), third)
        .await
        .expect("served once a slot frees")
        .unwrap()
        .unwrap();
    assert_eq!(status, 200);
    sqlx::query("ROLLBACK").execute(&mut holder).await.unwrap();
    let _ = second.await;
    daemon.kill().await;
}

/// Connections that only hold a slot (idle, or in the middle of their headers) make room for a
/// new client once every slot is taken, long before their own timeout.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn idle_connections_make_room_when_every_slot_is_taken() {
    let db = TestDb::new(Backend::Sqlite).await;
    let daemon = Daemon::spawn(&db, &["--max-connections", "2", "--header-timeout", "60s"]).await;
    let mut idle = TcpStream::connect(address(&daemon)).await.unwrap();
    let mut trickling = TcpStream::connect(address(&daemon)).await.unwrap();
    trickling
        .write_all(b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n")
        .await
        .unwrap();
    tokio::time::sleep(Duration::from_secs(1)).await;
    let started = Instant::now();
    let status = tokio::time::timeout(
        Duration::from_secs(30),
        crate::helpers::http_client()
            .get(format!("{}/healthz", daemon.base))
            .send(),
    )
    .await
    .expect("served long before the 60 s header timeout")
    .unwrap()
    .status();
    println!("served in {:?} with both slots held", started.elapsed());
    assert_eq!(status, 200);
    // One of the two was cut to make room; the other is still open.
    let mut cut = 0;
    for stream in [&mut idle, &mut trickling] {
        if until_closed(stream, Duration::from_millis(300))
            .await
            .is_some()
        {
            cut += 1;
        }
    }
    assert_eq!(cut, 1, "one connection made room, and only one");
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

/// Opens a connection that sends a write's headers announcing a large body, then drips one
/// body byte every `every`, for as long as the returned task runs.
async fn dripper(daemon: &Daemon, n: usize, every: Duration) -> tokio::task::JoinHandle<()> {
    let mut stream = TcpStream::connect(address(daemon)).await.unwrap();
    stream
        .write_all(
            format!(
                "PUT /v1/resources/drip-{n} HTTP/1.1\r\nHost: 127.0.0.1\r\n\
                 Fencing-Token: 1\r\nContent-Length: 1000000\r\n\r\nx"
            )
            .as_bytes(),
        )
        .await
        .unwrap();
    tokio::spawn(async move {
        loop {
            tokio::time::sleep(every).await;
            if stream.write_all(b"x").await.is_err() {
                return;
            }
        }
    })
}

/// The drip attack: every `--max-connections` slot held by a client sending one body byte at a
/// time, each byte sooner than the overload grace (so that, counted from its last byte, no
/// dripper ever looks stalled) and far within the body read timeout. `/healthz` still answers
/// within 1 s: a connection's wait is counted from when its request started, not from its last
/// byte, so the dripper waiting longest is cut to make room.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn healthz_answers_within_a_second_while_every_slot_drips_a_body() {
    const SLOTS: usize = 8;
    let db = TestDb::new(Backend::Sqlite).await;
    let daemon = Daemon::spawn(
        &db,
        &[
            "--max-connections",
            "8",
            BODY_READ_TIMEOUT,
            "60s",
            "--header-timeout",
            "60s",
        ],
    )
    .await;
    let mut drippers = Vec::new();
    for n in 0..SLOTS {
        drippers.push(dripper(&daemon, n, Duration::from_millis(200)).await);
    }
    // Every slot is taken, each dripper well past the grace since its request started.
    tokio::time::sleep(Duration::from_millis(1500)).await;
    let started = Instant::now();
    let health = tokio::time::timeout(
        Duration::from_secs(30),
        crate::helpers::http_client()
            .get(format!("{}/healthz", daemon.base))
            .send(),
    )
    .await
    .expect("/healthz answers at all while drippers hold every slot")
    .unwrap();
    let took = started.elapsed();
    println!("/healthz answered in {took:?} with {SLOTS} drippers holding every slot");
    assert_eq!(health.status().as_u16(), 200);
    assert!(
        took < Duration::from_secs(1),
        "/healthz took {took:?} with every slot held by a dripper"
    );
    for dripper in drippers {
        dripper.abort();
    }
    daemon.kill().await;
}

/// SIGTERM: connections not being served (idle, in their headers, or waiting for body bytes)
/// are closed at once rather than waited for up to their timeouts; the daemon stops within
/// seconds, cleanly.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigterm_closes_connections_that_are_not_being_served() {
    let db = TestDb::new(Backend::Sqlite).await;
    let daemon = Daemon::spawn(&db, &[BODY_READ_TIMEOUT, "60s", "--header-timeout", "60s"]).await;
    let mut drippers = Vec::new();
    for n in 0..2 {
        drippers.push(dripper(&daemon, n, Duration::from_millis(200)).await);
    }
    let mut stalled = TcpStream::connect(address(&daemon)).await.unwrap();
    stalled
        .write_all(
            b"POST /v1/leases/jobs/acquire HTTP/1.1\r\nHost: 127.0.0.1\r\n\
              Content-Type: application/json\r\nContent-Length: 100\r\n\r\n{",
        )
        .await
        .unwrap();
    let mut in_headers = TcpStream::connect(address(&daemon)).await.unwrap();
    in_headers
        .write_all(b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n")
        .await
        .unwrap();
    let _idle = TcpStream::connect(address(&daemon)).await.unwrap();
    tokio::time::sleep(Duration::from_millis(500)).await;

    let mut daemon = daemon;
    let started = Instant::now();
    daemon.signal("TERM");
    let status = tokio::time::timeout(Duration::from_secs(20), daemon.child.wait())
        .await
        .expect("the daemon stops without waiting for the slow clients' timeouts")
        .unwrap();
    let took = started.elapsed();
    println!("stopped {took:?} after SIGTERM");
    assert!(status.success(), "{status:?}");
    assert!(took < Duration::from_secs(3), "stopped only after {took:?}");
    until_closed(&mut stalled, Duration::from_secs(1))
        .await
        .expect("the stalled body's connection is closed");
    for dripper in drippers {
        dripper.abort();
    }
}

/// Live event subscribers are requests served for as long as they last, never cut to make
/// room: `--max-subscribers` above half of `--max-connections` is lowered to half, with a
/// warning, so that subscribers can never hold every slot and `/healthz` is still served.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn subscribers_never_hold_more_than_half_the_connection_slots() {
    let db = TestDb::new(Backend::Sqlite).await;
    let (daemon, log) = Daemon::on(&db.url)
        .args(&["--max-connections", "4", "--max-subscribers", "100"])
        .spawn_logged()
        .await;
    let mut warned = log.lines_with(&["--max-subscribers", "--max-connections"]);
    for _ in 0..20 {
        if !warned.is_empty() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
        warned = log.lines_with(&["--max-subscribers", "--max-connections"]);
    }
    assert_eq!(warned.len(), 1, "one warning saying both flags: {warned:?}");
    assert!(warned[0].contains("WARN"), "{}", warned[0]);
    let _first = following_events(&daemon).await;
    let _second = following_events(&daemon).await;
    let mut third = TcpStream::connect(address(&daemon)).await.unwrap();
    third
        .write_all(b"GET /v1/events HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
        .await
        .unwrap();
    let mut buffer = [0u8; 1024];
    let n = tokio::time::timeout(Duration::from_secs(10), third.read(&mut buffer))
        .await
        .expect("an answer to a third subscriber")
        .unwrap();
    let answer = String::from_utf8_lossy(&buffer[..n]).to_string();
    assert!(answer.starts_with("HTTP/1.1 503"), "{answer}");
    drop(third);
    let started = Instant::now();
    let health = tokio::time::timeout(
        Duration::from_secs(10),
        crate::helpers::http_client()
            .get(format!("{}/healthz", daemon.base))
            .send(),
    )
    .await
    .expect("/healthz is served beside the subscribers")
    .unwrap();
    assert_eq!(health.status().as_u16(), 200);
    assert!(started.elapsed() < Duration::from_secs(1));
    daemon.kill().await;
}
