//! `serve --watch [NAME=]URL`: a daemon following the fence audit of the user's own database.
//! A stale write in the user's table shows up as an overlap with its `source` in
//! `/v1/overlaps`, `/metrics`, the live stream, the dashboard and a real Alertmanager; the
//! watched database restarting is survived; a restarted daemon resumes from the stored
//! position, neither replaying nor losing a row. Real PostgreSQL and SQLite on both sides.

use crate::helpers::{http_client, peer, Backend, Daemon, SseClient, TestDb, UserConn, UserDb};
use crate::test_db;
use rstest::rstest;
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

#[rstest]
#[case::sqlite(Backend::Sqlite)]
#[cfg_attr(
    not(fencewatch_pg),
    ignore = "needs PostgreSQL: set FENCEWATCH_TEST_PG"
)]
#[case::postgres(Backend::Postgres)]
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
