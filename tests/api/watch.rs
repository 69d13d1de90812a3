//! `serve --watch [NAME=]URL`: a daemon following the fence audit of the user's own database.
//! A stale write in the user's table shows up as an overlap with its `source` in
//! `/v1/overlaps`, `/metrics`, the live stream, the dashboard and a real Alertmanager; the
//! watched database restarting is survived; a restarted daemon resumes from the stored
//! position, neither replaying nor losing a row. Real PostgreSQL and SQLite on both sides.

use crate::both_backends;
use crate::helpers::{
    http_client, peer, Backend, Daemon, Rng, SseClient, TestDb, UserConn, UserDb,
};
use crate::test_db;
use rstest_reuse::apply;
use serde_json::Value;
use std::time::{Duration, Instant};

const WAIT: Duration = Duration::from_secs(20);
const BIN: &str = env!("CARGO_BIN_EXE_fencewatch");

/// A user's database with `orders` protected and a daemon (a real process, on a database of
/// its own) watching it as `shop`.
struct Watching {
    user: UserDb,
    daemon_db: TestDb,
    daemon: Daemon,
}

impl Watching {
    async fn start(backend: Backend, extra: &[&str]) -> Watching {
        let (user, _fence) = UserDb::with_protected_orders(backend).await;
        let daemon_db = test_db!(backend);
        let daemon = spawn_watching(&daemon_db, &user.url, extra).await;
        Watching {
            user,
            daemon_db,
            daemon,
        }
    }
}

async fn spawn_watching(daemon_db: &TestDb, user_url: &str, extra: &[&str]) -> Daemon {
    let watch = format!("shop={user_url}");
    let mut args = vec!["--watch", watch.as_str()];
    args.extend_from_slice(extra);
    let daemon = Daemon::spawn(daemon_db, &args).await;
    wait_until_watching(&daemon.base).await;
    daemon
}

async fn get_json(base: &str, path: &str) -> Value {
    let reply = http_client()
        .get(format!("{base}{path}"))
        .send()
        .await
        .unwrap();
    assert_eq!(reply.status(), 200, "GET {path}");
    reply.json().await.unwrap()
}

/// `promtool check metrics` reads the exposition with its watched series (when promtool is
/// installed; `FENCEWATCH_REQUIRE_PEERS=1` makes its absence a failure).
fn promtool_accepts(text: &str) {
    use std::io::Write;
    let Some(promtool) = peer("/usr/bin/promtool") else {
        return;
    };
    let mut child = std::process::Command::new(promtool)
        .args(["check", "metrics"])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(text.as_bytes())
        .unwrap();
    let output = child.wait_with_output().unwrap();
    assert!(
        output.status.success(),
        "promtool: {}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
}

async fn metrics(base: &str) -> String {
    http_client()
        .get(format!("{base}/metrics"))
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap()
}

/// Until `/v1/stats` says the watched database answers.
async fn wait_until_watching(base: &str) -> Value {
    let deadline = Instant::now() + WAIT;
    loop {
        let stats = get_json(base, "/v1/stats").await;
        if stats["sources"]["shop"]["up"] == true {
            return stats["sources"]["shop"].clone();
        }
        assert!(Instant::now() < deadline, "never watching: {stats}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// Until `/v1/stats` counts `count` open overlaps of `shop`: the figures follow every half
/// second, as the daemon's own do.
async fn wait_for_open_overlaps(base: &str, count: u64) {
    let deadline = Instant::now() + WAIT;
    while get_json(base, "/v1/stats").await["sources"]["shop"]["open_overlaps"] != count {
        assert!(
            Instant::now() < deadline,
            "{count} open overlaps never counted"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// The watched overlaps of `scope`, once `ready` holds for them.
async fn wait_for_overlaps(
    base: &str,
    scope: &str,
    ready: impl Fn(&[Value]) -> bool,
) -> Vec<Value> {
    let deadline = Instant::now() + WAIT;
    loop {
        let listed = get_json(base, "/v1/overlaps?state=all").await;
        let found: Vec<Value> = listed["overlaps"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|o| o["source"] == "shop" && o["resource"] == scope)
            .cloned()
            .collect();
        if ready(&found) {
            return found;
        }
        assert!(Instant::now() < deadline, "overlaps of {scope}: {listed}");
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}

/// Order `id` in region `scope` written by `owner` with generation `token`; the rows changed.
async fn write_order(conn: &mut UserConn, id: i64, scope: &str, token: i64, owner: &str) -> u64 {
    let insert = format!(
        "INSERT INTO orders (id, tok, region, val, op, who) \
         VALUES ({id}, {token}, '{scope}', 'v{token}', 'op-{id}-{token}', '{owner}')"
    );
    let exists = conn
        .int(&format!("SELECT COUNT(*) FROM orders WHERE id = {id}"))
        .await
        .unwrap_or(0);
    let sql = if exists == 0 {
        insert
    } else {
        format!(
            "UPDATE orders SET tok = {token}, val = 'v{token}', op = 'op-{id}-{token}', \
             who = '{owner}' WHERE id = {id}"
        )
    };
    conn.run(&sql).await.unwrap()
}

#[apply(both_backends)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stale_write_in_a_watched_table_is_an_overlap_everywhere(#[case] backend: Backend) {
    let watching = Watching::start(backend, &[]).await;
    let base = watching.daemon.base.clone();
    let mut events = SseClient::connect(&base, None).await;
    let mut conn = watching.user.connect().await;
    assert_eq!(write_order(&mut conn, 1, "eu", 8, "new-owner").await, 1);
    // The older owner resumes: its write affects zero rows, and the watcher sees the refusal.
    assert_eq!(write_order(&mut conn, 1, "eu", 7, "old-owner").await, 0);

    let overlaps = wait_for_overlaps(&base, "eu", |found| !found.is_empty()).await;
    let overlap = &overlaps[0];
    assert_eq!(overlap["stale_token"], 7);
    assert_eq!(overlap["superseding_token"], 8);
    assert_eq!(overlap["stale_owner"], "old-owner");
    assert_eq!(overlap["superseding_owner"], "new-owner");
    assert_eq!(overlap["rejected_writes"], 1);
    assert_eq!(overlap["state"], "open");
    // The daemon's own overlaps carry no source: none here.
    let all = get_json(&base, "/v1/overlaps?state=all").await;
    assert!(all["overlaps"]
        .as_array()
        .unwrap()
        .iter()
        .all(|o| o["source"] == "shop"));

    // The live stream: both rows as write events with their source and no SSE id, and the
    // overlap opening.
    let mut writes = Vec::new();
    let mut opened = None;
    let deadline = tokio::time::Instant::now() + WAIT;
    while writes.len() < 2 || opened.is_none() {
        let left = deadline.saturating_duration_since(tokio::time::Instant::now());
        let message = events
            .next_within(left)
            .await
            .expect("the watched rows and their overlap on the stream");
        match message.event.as_str() {
            "write" => writes.push(message),
            "overlap" => opened = Some(message.json()),
            _ => {}
        }
    }
    for write in &writes {
        assert_eq!(write.id, None, "a watched row has no SSE id");
        assert_eq!(write.json()["source"], "shop");
        assert_eq!(write.json()["resource"], "eu");
    }
    assert_eq!(writes[0].json()["outcome"], "accepted");
    assert_eq!(writes[1].json()["outcome"], "stale");
    assert_eq!(writes[1].json()["owner"], "old-owner");
    let opened = opened.unwrap();
    assert_eq!(
        (opened["source"].clone(), opened["change"].clone()),
        ("shop".into(), "opened".into())
    );

    // /v1/stats and /metrics: the source's own figures; the daemon's own unchanged.
    wait_for_open_overlaps(&base, 1).await;
    let stats = get_json(&base, "/v1/stats").await;
    assert_eq!(stats["sources"]["shop"]["totals"]["stale"], 1);
    assert_eq!(stats["sources"]["shop"]["totals"]["accepted"], 1);
    assert_eq!(stats["sources"]["shop"]["open_overlaps"], 1);
    assert_eq!(stats["totals"]["stale"], 0);
    assert_eq!(stats["open_overlaps"], 0);
    let text = metrics(&base).await;
    for line in [
        "fencewatch_writes_total{outcome=\"stale\",source=\"shop\"} 1\n",
        "fencewatch_writes_total{outcome=\"accepted\",source=\"shop\"} 1\n",
        "fencewatch_writes_total{outcome=\"stale\"} 0\n",
        "fencewatch_open_overlaps{source=\"shop\"} 1\n",
        "fencewatch_open_overlaps 0\n",
        "fencewatch_watch_up{source=\"shop\"} 1\n",
    ] {
        assert!(text.contains(line), "{line:?} not in /metrics:\n{text}");
    }
    promtool_accepts(&text);

    // The dashboard, as scripts read it.
    let output = tokio::process::Command::new(BIN)
        .args(["tui", "--once", "--json", "--url", &base])
        .output()
        .await
        .unwrap();
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let overview: Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(overview["open_overlaps"][0]["source"], "shop");
    assert_eq!(overview["open_overlaps"][0]["resource"], "eu");
    assert_eq!(overview["sources"]["shop"]["totals"]["stale"], 1);
    conn.close().await;
    watching.daemon.kill().await;
    drop(watching.daemon_db);
}

/// The time from a stale write's commit in the watched database to its overlap in
/// `/v1/overlaps`, over 50 stale writes each opening an overlap of its own. Measured, printed
/// and written in docs/performance.md; not asserted (timing is not a test's business).
#[apply(both_backends)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn commit_to_overlaps_latency_is_measured(#[case] backend: Backend) {
    let watching = Watching::start(backend, &[]).await;
    let base = watching.daemon.base.clone();
    let mut conn = watching.user.connect().await;
    let mut latencies = Vec::new();
    // A pause of its own before each stale write, so that writes do not fall in step with the
    // watcher's reads (each would then wait a whole poll).
    let mut rng = Rng::new(36);
    for i in 1..=50 {
        let scope = format!("r{i}");
        assert_eq!(write_order(&mut conn, i, &scope, 8, "new-owner").await, 1);
        tokio::time::sleep(Duration::from_millis(rng.below(150))).await;
        // Autocommit: the statement has committed when it returns.
        assert_eq!(write_order(&mut conn, i, &scope, 7, "old-owner").await, 0);
        let committed = Instant::now();
        wait_for_overlaps(&base, &scope, |found| !found.is_empty()).await;
        latencies.push(committed.elapsed());
    }
    latencies.sort();
    let ms = |d: Duration| d.as_secs_f64() * 1000.0;
    eprintln!(
        "commit -> /v1/overlaps over {} stale writes ({backend:?} watched by a {backend:?} \
         daemon): min {:.1} ms, median {:.1} ms, max {:.1} ms",
        latencies.len(),
        ms(latencies[0]),
        ms(latencies[latencies.len() / 2]),
        ms(latencies[latencies.len() - 1])
    );
    let stats = get_json(&base, "/v1/stats").await;
    assert_eq!(stats["sources"]["shop"]["totals"]["stale"], 50);
    wait_for_open_overlaps(&base, 50).await;
    conn.close().await;
    watching.daemon.kill().await;
}

/// A spike of stale writes in the watched database pages through a real Alertmanager, the
/// alert labelled with the source and the resource.
#[cfg_attr(
    not(fencewatch_alertmanager),
    ignore = "needs prometheus-alertmanager on the PATH"
)]
#[apply(both_backends)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stale_spike_in_a_watched_database_pages_through_alertmanager(#[case] backend: Backend) {
    use crate::alerts::{Alertmanager, Receiver};
    let (paged, page_hook) = Receiver::start().await;
    let Some(manager) = Alertmanager::start(&page_hook, "5m").await else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("fencewatch.toml");
    std::fs::write(
        &config,
        format!(
            r#"
[alerts]
evaluation_interval = "200ms"
resend_interval = "1s"

[[alerts.rules]]
name = "Spike"
threshold = 2
window = "1m"
for = "500ms"
per_resource = true
labels = {{ severity = "page" }}

[alerts.alertmanager]
url = "{}"
timeout = "1s"
"#,
            manager.base()
        ),
    )
    .unwrap();
    let config = config.display().to_string();
    let watching = Watching::start(backend, &["--config", &config]).await;
    let base = watching.daemon.base.clone();
    let mut conn = watching.user.connect().await;
    write_order(&mut conn, 1, "eu", 8, "new-owner").await;
    for _ in 0..3 {
        assert_eq!(write_order(&mut conn, 1, "eu", 7, "old-owner").await, 0);
    }
    let deadline = Instant::now() + WAIT;
    let alert = loop {
        let active = manager.alerts().await;
        if let Some(alert) = active.into_iter().next() {
            break alert;
        }
        assert!(
            Instant::now() < deadline,
            "Alertmanager never got the alert"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    assert_eq!(alert["labels"]["alertname"], "Spike");
    assert_eq!(alert["labels"]["source"], "shop");
    assert_eq!(alert["labels"]["resource"], "eu");
    assert_eq!(alert["status"]["state"], "active");
    // Alertmanager paged, and fencewatch shows the instance with its source.
    let (_, page) = paged.wait_for("firing", WAIT).await;
    assert_eq!(page["alerts"][0]["labels"]["source"], "shop");
    let alerts = get_json(&base, "/v1/alerts").await;
    let firing: Vec<&Value> = alerts["alerts"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|a| a["state"] == "firing")
        .collect();
    assert_eq!(firing.len(), 1, "{alerts}");
    assert_eq!(firing[0]["source"], "shop");
    assert_eq!(firing[0]["resource"], "eu");
    conn.close().await;
    watching.daemon.kill().await;
}

/// The watched PostgreSQL database goes away for a while (every session ended, new ones
/// refused, as while its server restarts): the watcher logs it (never the URL's password),
/// retries with backoff, says the database is down in `/v1/stats` and `/metrics`, and takes in
/// what was written meanwhile once it is back. The daemon stays ready throughout.
#[cfg_attr(
    not(fencewatch_pg),
    ignore = "needs PostgreSQL: set FENCEWATCH_TEST_PG"
)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_watcher_survives_its_database_going_away() {
    const PASSWORD: &str = "s3cret-watch-pw";
    let (user, _fence) = UserDb::with_protected_orders(Backend::Postgres).await;
    // The test server trusts local connections: the password is never asked for, only carried.
    let url = user
        .url
        .replacen("://postgres@", &format!("://postgres:{PASSWORD}@"), 1);
    assert!(url.contains(PASSWORD), "{}", user.url);
    let daemon_db = test_db!(Backend::Postgres);
    let watch = format!("shop={url}");
    let (daemon, log) = Daemon::on(&daemon_db.url)
        .args(&["--watch", &watch])
        .spawn_logged()
        .await;
    let base = daemon.base.clone();
    wait_until_watching(&base).await;
    let mut conn = user.connect().await;
    write_order(&mut conn, 1, "eu", 8, "new-owner").await;
    write_order(&mut conn, 1, "eu", 7, "old-owner").await;
    wait_for_overlaps(&base, "eu", |found| found.len() == 1).await;

    // The database refuses new sessions and every one but this test's ends.
    let name: String = conn.text("SELECT current_database()::text").await.unwrap();
    let ours = conn.int("SELECT pg_backend_pid()::bigint").await.unwrap();
    let server = std::env::var("FENCEWATCH_TEST_PG").unwrap();
    let mut admin = UserConn::Pg(sqlx::Connection::connect(&server).await.unwrap());
    admin
        .run(&format!("ALTER DATABASE {name} ALLOW_CONNECTIONS false"))
        .await
        .unwrap();
    let terminated = admin
        .int(&format!(
            "SELECT COUNT(*) FILTER (WHERE pg_terminate_backend(pid)) FROM pg_stat_activity \
             WHERE datname = '{name}' AND pid <> {ours}"
        ))
        .await
        .unwrap();
    assert!(terminated >= 1, "the watcher had a session to end");
    for _ in 0..2 {
        assert_eq!(write_order(&mut conn, 1, "eu", 7, "old-owner").await, 0);
    }
    let deadline = Instant::now() + WAIT;
    loop {
        let stats = get_json(&base, "/v1/stats").await;
        if stats["sources"]["shop"]["up"] == false {
            break;
        }
        assert!(Instant::now() < deadline, "never noticed: {stats}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert!(metrics(&base)
        .await
        .contains("fencewatch_watch_up{source=\"shop\"} 0\n"));
    let ready = http_client()
        .get(format!("{base}/readyz"))
        .send()
        .await
        .unwrap();
    assert_eq!(
        ready.status(),
        200,
        "the daemon's readiness is its own database's"
    );

    admin
        .run(&format!("ALTER DATABASE {name} ALLOW_CONNECTIONS true"))
        .await
        .unwrap();
    admin.close().await;
    let grown = wait_for_overlaps(&base, "eu", |found| {
        found.first().is_some_and(|o| o["rejected_writes"] == 3)
    })
    .await;
    assert_eq!(grown.len(), 1);
    let deadline = Instant::now() + WAIT;
    while wait_until_watching(&base).await["totals"]["stale"] != 3 {
        assert!(
            Instant::now() < deadline,
            "the three refusals never counted"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let retried = log.lines_with(&["shop", "retrying"]);
    assert!(!retried.is_empty(), "the outage was logged");
    for text in [
        metrics(&base).await,
        get_json(&base, "/v1/stats").await.to_string(),
        log.lines_with(&[]).join("\n"),
    ] {
        assert!(!text.contains(PASSWORD), "the password leaked: {text}");
    }
    conn.close().await;
    daemon.kill().await;
}

/// A daemon stopped while the watched database takes more stale writes resumes from the stored
/// position when it starts again: the overlap counts each refusal once, none replayed and none
/// lost.
#[apply(both_backends)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_restarted_daemon_resumes_from_the_stored_position(#[case] backend: Backend) {
    let watching = Watching::start(backend, &[]).await;
    let mut conn = watching.user.connect().await;
    write_order(&mut conn, 1, "eu", 8, "new-owner").await;
    for _ in 0..3 {
        write_order(&mut conn, 1, "eu", 7, "old-owner").await;
    }
    wait_for_overlaps(&watching.daemon.base, "eu", |found| {
        found.first().is_some_and(|o| o["rejected_writes"] == 3)
    })
    .await;
    assert!(watching.daemon.terminate().await, "stopped cleanly");

    // Written while no daemon watches.
    for _ in 0..2 {
        write_order(&mut conn, 1, "eu", 7, "old-owner").await;
    }
    let mut admin = watching.user.connect_admin().await;
    let last_id = admin
        .int(&format!(
            "SELECT MAX(id) FROM {}",
            watching.user.audit_table()
        ))
        .await
        .unwrap();
    admin.close().await;
    let daemon = spawn_watching(&watching.daemon_db, &watching.user.url, &[]).await;
    let base = daemon.base.clone();
    let resumed = wait_for_overlaps(&base, "eu", |found| {
        found.first().is_some_and(|o| o["rejected_writes"] == 5)
    })
    .await;
    assert_eq!(resumed.len(), 1, "the same overlap, grown: {resumed:?}");
    // Nothing more arrives: the first four rows were not taken in again.
    tokio::time::sleep(Duration::from_millis(500)).await;
    let settled = wait_for_overlaps(&base, "eu", |found| !found.is_empty()).await;
    assert_eq!(settled[0]["rejected_writes"], 5);
    // Taken in through the last row (the overlap is committed a moment before the figures
    // move).
    let deadline = Instant::now() + WAIT;
    let source = loop {
        let source = wait_until_watching(&base).await;
        if source["through_id"] == last_id {
            break source;
        }
        assert!(
            Instant::now() < deadline,
            "stopped short of {last_id}: {source}"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    };
    assert_eq!(
        source["totals"]["stale"], 2,
        "only the rows written while it was down are new to this daemon"
    );
    assert_eq!(source["totals"]["accepted"], 0);
    conn.close().await;
    daemon.kill().await;
}

/// The name a watched database goes by without `NAME=` is what the fence calls it once open.
#[apply(both_backends)]
#[tokio::test]
async fn a_watched_database_is_named_as_it_names_itself(#[case] backend: Backend) {
    let user = UserDb::new(backend).await;
    let fence = user.fence().await;
    assert_eq!(
        fencewatch::owndb::source_name_of(&user.url).as_deref(),
        Some(fence.source_name())
    );
    fence.close().await;
}

/// The dashboard in a real pseudo-terminal (util-linux `script`) against a daemon watching a
/// SQLite file of the user's: the watched overlap is listed with its source.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_dashboard_shows_which_database_an_overlap_came_from() {
    use std::process::Stdio;
    use tokio::io::AsyncWriteExt;
    let watching = Watching::start(Backend::Sqlite, &[]).await;
    let base = watching.daemon.base.clone();
    let mut conn = watching.user.connect().await;
    write_order(&mut conn, 1, "eu-north", 8, "new-owner").await;
    write_order(&mut conn, 1, "eu-north", 7, "old-owner").await;
    wait_for_overlaps(&base, "eu-north", |found| !found.is_empty()).await;
    let mut child = tokio::process::Command::new("script")
        .args([
            "-qfec",
            &format!("stty cols 120 rows 30; exec {BIN} tui --url {base}"),
            "/dev/null",
        ])
        .env("TERM", "xterm-256color")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .expect("the dashboard test needs `script` (util-linux) for a pseudo-terminal");
    let mut keys = child.stdin.take().unwrap();
    tokio::time::sleep(Duration::from_millis(1500)).await;
    keys.write_all(b"2").await.unwrap();
    tokio::time::sleep(Duration::from_millis(800)).await;
    keys.write_all(b"q").await.unwrap();
    keys.flush().await.unwrap();
    let output = tokio::time::timeout(Duration::from_secs(20), child.wait_with_output())
        .await
        .expect("the dashboard quits on q")
        .unwrap();
    assert!(output.status.success(), "exit status {}", output.status);
    let screen = String::from_utf8_lossy(&output.stdout);
    for expected in [
        "SOURCE",
        "shop",
        "eu-north",
        "old-owner",
        "new-owner",
        "OPEN",
    ] {
        assert!(
            screen.contains(expected),
            "{expected:?} never appeared on the screen"
        );
    }
    conn.close().await;
    watching.daemon.kill().await;
}

/// Two daemons on one PostgreSQL database watch the same user's database: each row is taken in
/// by one of them only, so the overlap counts every refusal once.
#[cfg_attr(
    not(fencewatch_pg),
    ignore = "needs PostgreSQL: set FENCEWATCH_TEST_PG"
)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_daemons_watching_one_database_take_each_row_once() {
    let watching = Watching::start(Backend::Postgres, &[]).await;
    let second = spawn_watching(&watching.daemon_db, &watching.user.url, &[]).await;
    let mut conn = watching.user.connect().await;
    write_order(&mut conn, 1, "eu", 8, "new-owner").await;
    for _ in 0..40 {
        assert_eq!(write_order(&mut conn, 1, "eu", 7, "old-owner").await, 0);
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let found = wait_for_overlaps(&second.base, "eu", |found| {
        found.first().is_some_and(|o| o["rejected_writes"] == 40)
    })
    .await;
    assert_eq!(found.len(), 1);
    tokio::time::sleep(Duration::from_millis(500)).await;
    let settled = wait_for_overlaps(&watching.daemon.base, "eu", |found| !found.is_empty()).await;
    assert_eq!(settled[0]["rejected_writes"], 40, "no row taken in twice");
    // Between them the two daemons published every row once.
    let mut stale = 0;
    for base in [&watching.daemon.base, &second.base] {
        let source = wait_until_watching(base).await;
        stale += source["totals"]["stale"].as_u64().unwrap();
    }
    assert_eq!(stale, 40);
    conn.close().await;
    second.kill().await;
    watching.daemon.kill().await;
}

/// PostgreSQL draws audit ids from a sequence: a transaction of the user's holding a lower id
/// holds the rows after it back (they are not taken in past it, where its row would be lost),
/// and its commit releases them all; a rollback releases them as soon as a snapshot proves it.
#[cfg_attr(
    not(fencewatch_pg),
    ignore = "needs PostgreSQL: set FENCEWATCH_TEST_PG"
)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_row_that_commits_late_is_taken_in_in_its_place() {
    let watching = Watching::start(Backend::Postgres, &[]).await;
    let base = watching.daemon.base.clone();
    let mut slow = watching.user.connect().await;
    let mut quick = watching.user.connect().await;
    for (round, end) in [(1, "COMMIT"), (2, "ROLLBACK")] {
        let (held, after) = (format!("held{round}"), format!("after{round}"));
        slow.run("BEGIN").await.unwrap();
        // Draws an audit id and holds it uncommitted.
        assert_eq!(
            write_order(&mut slow, round * 10, &held, 8, "slow").await,
            1
        );
        assert_eq!(
            write_order(&mut quick, round * 10 + 1, &after, 8, "new").await,
            1
        );
        assert_eq!(
            write_order(&mut quick, round * 10 + 1, &after, 7, "old").await,
            0
        );
        let through = get_json(&base, "/v1/stats").await["sources"]["shop"]["through_id"].clone();
        tokio::time::sleep(Duration::from_millis(600)).await;
        let stats = get_json(&base, "/v1/stats").await;
        assert_eq!(
            stats["sources"]["shop"]["through_id"], through,
            "nothing taken in past the uncommitted row"
        );
        let listed = get_json(&base, "/v1/overlaps?state=all").await;
        assert!(
            !listed.to_string().contains(&after),
            "the overlap behind the gap is held back: {listed}"
        );
        slow.run(end).await.unwrap();
        wait_for_overlaps(&base, &after, |found| found.len() == 1).await;
    }
    // The committed row was taken in (accepted: 2 of `after…`, 1 of `held1`), the rolled-back
    // one never existed.
    let deadline = Instant::now() + WAIT;
    while wait_until_watching(&base).await["totals"]["accepted"] != 3 {
        assert!(Instant::now() < deadline, "the late row never counted");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    slow.close().await;
    quick.close().await;
    watching.daemon.kill().await;
}

/// A transaction held open for a minute, far past the 30 s a missing id holds later rows back:
/// the watcher reads past its audit ids, looks for them again until the transaction ends, and
/// takes its rows in then (an accepted row and a stale one behind it, in the overlap).
#[cfg_attr(
    not(fencewatch_pg),
    ignore = "needs PostgreSQL: set FENCEWATCH_TEST_PG"
)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_transaction_held_a_minute_still_reaches_the_live_side() {
    let watching = Watching::start(Backend::Postgres, &[]).await;
    let base = watching.daemon.base.clone();
    let mut slow = watching.user.connect().await;
    let mut quick = watching.user.connect().await;
    assert_eq!(write_order(&mut quick, 1, "late", 8, "new").await, 1);
    slow.run("BEGIN").await.unwrap();
    // Draws audit ids and holds them uncommitted.
    assert_eq!(write_order(&mut slow, 2, "held", 5, "slow").await, 1);
    assert_eq!(write_order(&mut slow, 1, "late", 7, "slow").await, 0);
    assert_eq!(write_order(&mut quick, 3, "after", 4, "quick").await, 1);
    tokio::time::sleep(Duration::from_secs(60)).await;
    let stats = get_json(&base, "/v1/stats").await;
    assert_eq!(
        stats["sources"]["shop"]["totals"]["accepted"], 2,
        "the row after the held ones was taken in past them: {stats}"
    );
    slow.run("COMMIT").await.unwrap();
    let found = wait_for_overlaps(&base, "late", |found| {
        found.first().is_some_and(|o| o["rejected_writes"] == 1)
    })
    .await;
    assert_eq!(found[0]["source"], "shop");
    let deadline = Instant::now() + WAIT;
    while wait_until_watching(&base).await["totals"]["accepted"] != 3 {
        assert!(
            Instant::now() < deadline,
            "the row committed a minute late never counted"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    slow.close().await;
    quick.close().await;
    watching.daemon.kill().await;
}

/// The resident memory of process `pid`, in bytes (Linux).
fn resident_bytes(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    let kib: u64 = status
        .lines()
        .find_map(|line| line.strip_prefix("VmRSS:"))
        .and_then(|rest| rest.split_whitespace().next())
        .and_then(|kib| kib.parse().ok())
        .unwrap();
    kib * 1024
}

/// A writer of a watched table chooses what its rows hold: 60 stale writes with an owner of 20 MB
/// each grow the watching daemon by less than 100 MB (the watcher takes in each text cut to
/// 512 characters; the audit keeps them whole).
#[cfg_attr(
    not(fencewatch_pg),
    ignore = "needs PostgreSQL: set FENCEWATCH_TEST_PG"
)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn huge_texts_in_a_watched_table_do_not_grow_the_daemon() {
    let watching = Watching::start(Backend::Postgres, &[]).await;
    let base = watching.daemon.base.clone();
    let pid = watching.daemon.child.id().unwrap();
    let mut conn = watching.user.connect().await;
    assert_eq!(write_order(&mut conn, 1, "big", 8, "new").await, 1);
    wait_until_watching(&base).await;
    tokio::time::sleep(Duration::from_millis(500)).await;
    let before = resident_bytes(pid);
    for _ in 0..60 {
        let refused = conn
            .run("UPDATE orders SET tok = 7, who = repeat('x', 20000000) WHERE id = 1")
            .await
            .unwrap();
        assert_eq!(refused, 0);
    }
    let found = wait_for_overlaps(&base, "big", |found| {
        found.first().is_some_and(|o| o["rejected_writes"] == 60)
    })
    .await;
    let grown = resident_bytes(pid).saturating_sub(before);
    println!(
        "the daemon's resident memory grew by {} MB",
        grown / 1_000_000
    );
    assert!(grown < 100_000_000, "grew by {grown} bytes");
    let owner = found[0]["stale_owner"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    assert!(owner.chars().count() <= 513, "{} characters", owner.len());
    let mut admin = watching.user.connect_admin().await;
    assert_eq!(
        admin
            .int("SELECT max(length(owner))::bigint FROM fencewatch.audit")
            .await,
        Some(20_000_000),
        "the audit keeps the owner whole"
    );
    admin.close().await;
    conn.close().await;
    watching.daemon.kill().await;
}
