//! Refusals decided before the fence (no key, a wrong key, a key's scopes, a foreign web
//! origin, an address over its budget of refusals) cost no row lock and grow no table with the
//! attempts: they are counted in memory, in `/metrics` and as one aggregated row per source,
//! reason and interval in `refusals`. A no-key flood aimed at a legitimate writer's resource
//! does not make that writer fail.

use crate::both_backends;
use crate::helpers::RawPool;
use crate::helpers::{http_client, Backend, Daemon, Reply, TestDb};
use crate::on_raw;
use crate::test_db;
use rstest::rstest;
use rstest_reuse::apply;
use std::collections::{BTreeMap, HashMap};
use std::time::{Duration, Instant};

const KEYS: &str = "writer:k-writer-5e1f0a9c3b write=ledger/\nreader:k-reader-5e1f0a9c3b read\n";
const RESOURCE: &str = "ledger/main";

/// A daemon with the keys above, and the folder holding its key file.
async fn keyed_daemon(db: &TestDb) -> (Daemon, tempfile::TempDir) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("keys");
    std::fs::write(&path, KEYS).unwrap();
    let daemon = Daemon::spawn(db, &["--api-key-file", path.to_str().unwrap()]).await;
    (daemon, dir)
}

async fn count(pool: &RawPool, sql: &str) -> i64 {
    on_raw!(pool, h => sqlx::query_scalar::<_, i64>(sql)
        .fetch_one(h)
        .await
        .unwrap_or_else(|error| panic!("{sql}: {error}")))
}

/// One legitimate write: the writer's key, its resource, generation 1.
async fn write(http: &reqwest::Client, base: &str, n: usize) -> Result<Duration, String> {
    let started = Instant::now();
    let response = http
        .put(format!("{base}/v1/resources/{RESOURCE}"))
        .bearer_auth("k-writer-5e1f0a9c3b")
        .header("Fencing-Token", "1")
        .body(format!("value {n}"))
        .send()
        .await
        .map_err(|error| format!("write {n}: {error}"))?;
    let status = response.status().as_u16();
    let body = response.text().await.unwrap_or_default();
    let took = started.elapsed();
    match status {
        200 | 201 => Ok(took),
        _ => Err(format!("write {n}: {status} {body}")),
    }
}

fn percentile(sorted: &[Duration], share: f64) -> Duration {
    if sorted.is_empty() {
        return Duration::ZERO;
    }
    let at = ((sorted.len() as f64 - 1.0) * share).round() as usize;
    sorted[at.min(sorted.len() - 1)]
}

fn summary(latencies: &mut [Duration]) -> String {
    latencies.sort();
    format!(
        "{} writes, median {:.2?}, p99 {:.2?}",
        latencies.len(),
        percentile(latencies, 0.5),
        percentile(latencies, 0.99)
    )
}

/// `fencewatch_refusals_total` by reason, from a scrape.
async fn refusal_metrics(base: &str) -> BTreeMap<String, u64> {
    let text = http_client()
        .get(format!("{base}/metrics"))
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    text.lines()
        .filter_map(|line| line.strip_prefix("fencewatch_refusals_total{reason=\""))
        .map(|rest| {
            let (reason, value) = rest.split_once("\"} ").expect("a sample line");
            (
                reason.to_owned(),
                value.trim().parse::<f64>().unwrap() as u64,
            )
        })
        .collect()
}

/// The acceptance case of the flood: 32 connections without a key, for 10 s, at the resource a
/// legitimate writer (with its key) writes to sequentially. The writer gets no error; the audit
/// grows by the writer's rows alone, `chain_heads` by nothing (a fresh resource is among the
/// flood's targets); `/metrics` and the aggregated rows count every refusal. The writer's
/// latency is printed against a baseline taken just before, never asserted.
#[apply(both_backends)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_no_key_flood_costs_a_legitimate_writer_no_error_and_the_audit_no_rows(
    #[case] backend: Backend,
) {
    const CONNECTIONS: usize = 32;
    const FLOOD: Duration = Duration::from_secs(10);
    let db = test_db!(backend);
    let (daemon, _keys) = keyed_daemon(&db).await;
    let base = daemon.base.clone();
    let writer = http_client();

    let mut baseline = Vec::new();
    for n in 0..300 {
        baseline.push(write(&writer, &base, n).await.expect("a baseline write"));
    }
    let pool = db.raw_pool().await;
    let audit_before = count(&pool, "SELECT COUNT(*) FROM audit").await;
    let heads_before = count(&pool, "SELECT COUNT(*) FROM chain_heads").await;

    let deadline = Instant::now() + FLOOD;
    let mut flood = Vec::new();
    for connection in 0..CONNECTIONS {
        let base = base.clone();
        flood.push(tokio::spawn(async move {
            // A client each: a connection each.
            let http = http_client();
            let mut statuses: HashMap<String, u64> = HashMap::new();
            let mut n = 0u64;
            while Instant::now() < deadline {
                n += 1;
                // Mostly the writer's resource; now and then one never written.
                let resource = if n % 16 == 0 {
                    format!("ledger/never-{connection}-{n}")
                } else {
                    RESOURCE.to_owned()
                };
                let answer = http
                    .put(format!("{base}/v1/resources/{resource}"))
                    .header("Fencing-Token", "99")
                    .body("flood")
                    .send()
                    .await;
                let status = match answer {
                    Ok(response) => {
                        let status = response.status().as_u16().to_string();
                        let _ = response.bytes().await;
                        status
                    }
                    Err(error) => format!("transport error: {error}"),
                };
                *statuses.entry(status).or_default() += 1;
            }
            statuses
        }));
    }
    let legitimate = {
        let base = base.clone();
        tokio::spawn(async move {
            let (mut latencies, mut errors) = (Vec::new(), Vec::new());
            let mut n = 1000;
            while Instant::now() < deadline {
                n += 1;
                match write(&writer, &base, n).await {
                    Ok(took) => latencies.push(took),
                    Err(error) => errors.push(error),
                }
            }
            (latencies, errors)
        })
    };
    let mut statuses: BTreeMap<String, u64> = BTreeMap::new();
    for task in flood {
        for (status, n) in task.await.unwrap() {
            *statuses.entry(status).or_default() += n;
        }
    }
    let (mut during, errors) = legitimate.await.unwrap();
    let sent: u64 = statuses.values().sum();
    println!(
        "{backend:?}: {sent} refused requests in {FLOOD:?} at {CONNECTIONS} connections ({:.0}/s), \
         answers {statuses:?}",
        sent as f64 / FLOOD.as_secs_f64()
    );
    println!(
        "{backend:?}: legitimate writer before the flood: {}",
        summary(&mut baseline)
    );
    println!(
        "{backend:?}: legitimate writer during the flood: {}",
        summary(&mut during)
    );

    assert!(
        errors.is_empty(),
        "the legitimate writer failed: {errors:?}"
    );
    assert!(
        !during.is_empty(),
        "the legitimate writer wrote during the flood"
    );
    assert!(
        statuses
            .keys()
            .all(|status| status == "401" || status == "429"),
        "every flood request is refused with 401 or 429: {statuses:?}"
    );

    let audit_after = count(&pool, "SELECT COUNT(*) FROM audit").await;
    assert_eq!(
        audit_after - audit_before,
        during.len() as i64,
        "the audit grew by the legitimate writes alone"
    );
    assert_eq!(
        count(&pool, "SELECT COUNT(*) FROM chain_heads").await,
        heads_before,
        "no refused resource left a chain_heads row"
    );
    let metrics = refusal_metrics(&base).await;
    assert_eq!(metrics.values().sum::<u64>(), sent, "{metrics:?}");

    // A clean stop flushes what is still counted in memory.
    assert!(daemon.terminate().await, "the daemon stops cleanly");
    let rows = count(&pool, "SELECT COUNT(*) FROM refusals").await;
    let counted = count(
        &pool,
        "SELECT CAST(COALESCE(SUM(count), 0) AS BIGINT) FROM refusals",
    )
    .await;
    println!("{backend:?}: {rows} aggregated rows for {counted} refusals");
    assert_eq!(
        counted as u64, sent,
        "the aggregated rows count every refusal"
    );
    // One source (this address), two reasons (no key, over its budget), and the flood spans at
    // most three 10 s intervals.
    assert!((1..=6).contains(&rows), "{rows} rows");
    pool.close().await;
}

/// The aggregation, end to end: refusals of every kind from two sources, counted per source,
/// reason and interval; the counts add up to the requests sent, in `/metrics` and in the rows
/// `fencewatch audit refusals` prints, and nothing reached the audit or `chain_heads`.
#[apply(both_backends)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn refusals_are_counted_per_source_and_reason_and_add_up(#[case] backend: Backend) {
    let db = test_db!(backend);
    let (daemon, _keys) = keyed_daemon(&db).await;
    let base = daemon.base.clone();
    let http = http_client();
    let send = |request: reqwest::RequestBuilder| async move {
        Reply::from(request.send().await.unwrap()).await
    };
    for _ in 0..7 {
        send(http.get(format!("{base}/v1/stats")))
            .await
            .assert_problem(401, "unauthorized");
    }
    for _ in 0..5 {
        let reply = send(
            http.put(format!("{base}/v1/resources/agg/x"))
                .bearer_auth("k-wrong-5e1f0a9c3b")
                .header("Fencing-Token", "1")
                .body("x"),
        )
        .await;
        reply.assert_problem(401, "unauthorized");
        assert!(
            reply.json.get("audit_id").is_none(),
            "nothing was audited row by row: {}",
            reply.json
        );
    }
    for _ in 0..3 {
        send(
            http.put(format!("{base}/v1/resources/agg/y"))
                .bearer_auth("k-reader-5e1f0a9c3b")
                .header("Fencing-Token", "1")
                .body("y"),
        )
        .await
        .assert_problem(403, "forbidden");
    }
    for _ in 0..2 {
        send(
            http.get(format!("{base}/v1/stats"))
                .header("Origin", "http://evil.example"),
        )
        .await
        .assert_problem(403, "cross-origin");
    }
    let expected = BTreeMap::from([
        ("cross-origin".to_owned(), 2),
        ("forbidden".to_owned(), 3),
        ("unauthorized".to_owned(), 12),
    ]);
    let metrics = refusal_metrics(&base).await;
    let nonzero: BTreeMap<String, u64> = metrics.into_iter().filter(|(_, n)| *n > 0).collect();
    assert_eq!(nonzero, expected);

    assert!(daemon.terminate().await, "the daemon stops cleanly");
    let output = tokio::process::Command::new(env!("CARGO_BIN_EXE_fencewatch"))
        .args(["audit", "refusals", "--database", &db.url, "--json"])
        .output()
        .await
        .unwrap();
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let rows: Vec<serde_json::Value> = String::from_utf8(output.stdout)
        .unwrap()
        .lines()
        .map(|line| serde_json::from_str(line).unwrap())
        .collect();
    let mut by_source: BTreeMap<(String, String, String), i64> = BTreeMap::new();
    for row in &rows {
        let key = (
            row["source_kind"].as_str().unwrap().to_owned(),
            row["source"].as_str().unwrap().to_owned(),
            row["reason"].as_str().unwrap().to_owned(),
        );
        *by_source.entry(key).or_default() += row["count"].as_i64().unwrap();
        assert!(row["first_at"].as_str() <= row["last_at"].as_str(), "{row}");
    }
    let address = |reason: &str| {
        (
            "address".to_owned(),
            "127.0.0.1".to_owned(),
            reason.to_owned(),
        )
    };
    assert_eq!(
        by_source,
        BTreeMap::from([
            (address("cross-origin"), 2),
            (address("unauthorized"), 12),
            (
                (
                    "caller".to_owned(),
                    "reader".to_owned(),
                    "forbidden".to_owned()
                ),
                3
            ),
        ]),
        "{rows:?}"
    );
    let forbidden = rows
        .iter()
        .find(|row| row["reason"] == "forbidden")
        .unwrap();
    assert_eq!(forbidden["sample_resource"], "agg/y", "{forbidden}");
    assert!(
        forbidden["detail"].as_str().unwrap().contains("reader"),
        "{forbidden}"
    );

    let pool = db.raw_pool().await;
    assert_eq!(count(&pool, "SELECT COUNT(*) FROM audit").await, 0);
    assert_eq!(count(&pool, "SELECT COUNT(*) FROM chain_heads").await, 0);
    pool.close().await;
}

/// Past its budget of refusals an address gets `429` with `Retry-After`, at no cost; a request
/// from the same address with a valid key is never limited.
#[rstest]
#[case::sqlite(Backend::Sqlite)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_address_over_its_refusal_budget_gets_429_but_a_valid_key_never_does(
    #[case] backend: Backend,
) {
    let db = test_db!(backend);
    let (daemon, _keys) = keyed_daemon(&db).await;
    let base = daemon.base.clone();
    let http = http_client();
    let (mut refused, mut limited) = (0, 0);
    for n in 0..400 {
        let reply = Reply::from(
            http.put(format!("{base}/v1/resources/{RESOURCE}"))
                .header("Fencing-Token", "99")
                .body("no key")
                .send()
                .await
                .unwrap(),
        )
        .await;
        match reply.status.as_u16() {
            401 => refused += 1,
            429 => {
                reply.assert_problem(429, "too-many-requests");
                let wait: u64 = reply
                    .header("retry-after")
                    .expect("Retry-After")
                    .parse()
                    .unwrap();
                assert!(wait >= 1, "Retry-After: {wait}");
                limited += 1;
            }
            other => panic!("{other}: {}", reply.json),
        }
        if n % 10 == 0 {
            write(&http, &base, n)
                .await
                .expect("a valid key is never limited");
        }
    }
    println!("400 refused requests: {refused} answered 401, {limited} answered 429");
    assert!(limited > 0, "the budget never ran out");
    assert!(refused >= 10, "the budget allowed only {refused}");
    let metrics = refusal_metrics(&base).await;
    assert_eq!(metrics.get("too-many-requests").copied(), Some(limited));
    assert_eq!(metrics.get("unauthorized").copied(), Some(refused));
    daemon.kill().await;
}

/// Aggregated rows are history beside the audit: `audit prune` (and `--audit-retention`)
/// deletes those whose last refusal is older than its cutoff, and keeps the rest.
#[apply(both_backends)]
#[tokio::test]
async fn old_refusal_rows_are_pruned_with_the_audit(#[case] backend: Backend) {
    use fencewatch::domain::refusal::{RefusalCount, RefusalReason, RefusalSample, RefusalSource};
    let db = test_db!(backend);
    let store = db.store().await;
    let now_us = chrono::Utc::now().timestamp_micros();
    let day_us = 86_400_000_000;
    let row = |at_us: i64, count: i64| RefusalCount {
        interval_start_us: at_us - at_us.rem_euclid(10_000_000),
        source: RefusalSource::Address("192.0.2.7".parse().unwrap()),
        reason: RefusalReason::Unauthorized,
        count,
        first_at_us: at_us,
        last_at_us: at_us,
        sample: RefusalSample::new(None, "GET /v1/stats".into(), "no key".into()),
    };
    store
        .record_refusals(&[row(now_us - 2 * day_us, 5), row(now_us, 3)])
        .await
        .unwrap();
    // Written again for the same interval: the counts add up in one row.
    store.record_refusals(&[row(now_us, 4)]).await.unwrap();
    store.close().await;

    let output = tokio::process::Command::new(env!("CARGO_BIN_EXE_fencewatch"))
        .args([
            "audit",
            "prune",
            "--before",
            "1d",
            "--json",
            "--database",
            &db.url,
        ])
        .output()
        .await
        .unwrap();
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let report: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(report["refusals"], 1, "{report}");
    let pool = db.raw_pool().await;
    assert_eq!(count(&pool, "SELECT COUNT(*) FROM refusals").await, 1);
    assert_eq!(count(&pool, "SELECT MAX(count) FROM refusals").await, 7);
    pool.close().await;
}

/// Refused requests from `addresses` distinct client addresses (127.x.y.1: every address of
/// 127.0.0.0/8 is this machine's), one connection each without a key; answers how many were
/// refused `401`.
async fn spray(base: &str, addresses: u16, per_address: usize) -> i64 {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let target: std::net::SocketAddr = base.trim_start_matches("http://").parse().unwrap();
    let mut refused = 0;
    for n in 0..addresses {
        let source = std::net::Ipv4Addr::new(127, 1 + (n >> 8) as u8, (n & 0xff) as u8, 1);
        for _ in 0..per_address {
            let socket = tokio::net::TcpSocket::new_v4().unwrap();
            socket.bind((source, 0).into()).unwrap();
            let mut stream = socket.connect(target).await.unwrap();
            stream
                .write_all(
                    b"GET /v1/stats HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n",
                )
                .await
                .unwrap();
            let mut answer = Vec::new();
            stream.read_to_end(&mut answer).await.unwrap();
            assert!(
                answer.starts_with(b"HTTP/1.1 401"),
                "{}",
                String::from_utf8_lossy(&answer)
            );
            refused += 1;
        }
    }
    refused
}

/// Rows of `refusals` by interval: how many name a source (not `other`), and the total count.
async fn rows_by_interval(pool: &RawPool) -> BTreeMap<i64, (i64, i64, i64)> {
    let rows: Vec<(i64, String, i64)> = on_raw!(pool, h => sqlx::query_as("SELECT interval_start_us, source_kind, count FROM refusals")
            .fetch_all(h)
            .await
            .unwrap());
    let mut by_interval: BTreeMap<i64, (i64, i64, i64)> = BTreeMap::new();
    for (interval, kind, count) in rows {
        let entry = by_interval.entry(interval).or_default();
        match kind.as_str() {
            "other" => entry.1 += 1,
            _ => entry.0 += 1,
        }
        entry.2 += count;
    }
    by_interval
}

/// A spray of refused requests from many distinct addresses grows `refusals` by a bounded
/// number of rows: per one-minute interval at most `MAX_NAMED_REFUSAL_ROWS` rows naming a
/// source, the rest counted together in an `other` row (one per reason), every refusal counted.
#[apply(both_backends)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_spray_from_many_addresses_adds_a_bounded_number_of_rows(#[case] backend: Backend) {
    use fencewatch::domain::refusal::MAX_NAMED_REFUSAL_ROWS;
    let db = test_db!(backend);
    let (daemon, _keys) = keyed_daemon(&db).await;
    let sent = spray(&daemon.base, 300, 1).await + spray(&daemon.base, 20, 2).await;
    assert!(daemon.terminate().await, "the daemon stops cleanly");
    let pool = db.raw_pool().await;
    let by_interval = rows_by_interval(&pool).await;
    println!("{sent} refusals from 300 addresses: rows by interval {by_interval:?}");
    for (interval, (named, other, _)) in &by_interval {
        assert!(
            *named <= MAX_NAMED_REFUSAL_ROWS as i64,
            "interval {interval}: {named} rows name a source"
        );
        assert!(
            *other <= 1,
            "interval {interval}: {other} other rows (one reason)"
        );
    }
    let total: i64 = by_interval.values().map(|(_, _, count)| count).sum();
    assert_eq!(total, sent, "every refusal is counted");
    assert!(
        by_interval.len() <= 2,
        "one-minute intervals: {by_interval:?}"
    );
    pool.close().await;
}

/// The bound holds in the table, not only in one daemon's memory: counts of one interval
/// written in several flushes (or by several daemons), each naming other sources, leave at most
/// `MAX_NAMED_REFUSAL_ROWS` rows naming a source, the largest counts kept by name, and every
/// refusal counted.
#[apply(both_backends)]
#[tokio::test]
async fn refusal_rows_of_an_interval_stay_bounded_across_flushes(#[case] backend: Backend) {
    use fencewatch::domain::refusal::{
        RefusalCount, RefusalReason, RefusalSample, RefusalSource, MAX_NAMED_REFUSAL_ROWS,
    };
    let db = test_db!(backend);
    let store = db.store().await;
    let interval_us = 1_700_000_040_000_000;
    let row = |n: u32, count: i64, reason: RefusalReason| RefusalCount {
        interval_start_us: interval_us,
        source: RefusalSource::Address(std::net::IpAddr::from((0x0a00_0000 + n).to_be_bytes())),
        reason,
        count,
        first_at_us: interval_us + i64::from(n),
        last_at_us: interval_us + i64::from(n),
        sample: RefusalSample::new(None, "GET /v1/stats".into(), "no key".into()),
    };
    let mut sent = 0;
    for flush in 0..4u32 {
        let batch: Vec<RefusalCount> = (0..80u32)
            .map(|n| {
                let reason = match n % 2 {
                    0 => RefusalReason::Unauthorized,
                    _ => RefusalReason::CrossOrigin,
                };
                row(flush * 80 + n, 1, reason)
            })
            .collect();
        sent += batch.len() as i64;
        store.record_refusals(&batch).await.unwrap();
    }
    // One source far above the rest keeps its own row.
    store
        .record_refusals(&[row(9999, 500, RefusalReason::Unauthorized)])
        .await
        .unwrap();
    sent += 500;
    let rows = store.refusals(None, None).await.unwrap();
    let named = rows
        .iter()
        .filter(|r| r.source != RefusalSource::Other)
        .count();
    let others = rows.len() - named;
    assert!(
        named <= MAX_NAMED_REFUSAL_ROWS,
        "{named} rows name a source"
    );
    assert!(others <= 2, "{others} other rows: one per reason");
    assert_eq!(rows.iter().map(|r| r.count).sum::<i64>(), sent);
    for reason in [RefusalReason::Unauthorized, RefusalReason::CrossOrigin] {
        let counted: i64 = rows
            .iter()
            .filter(|r| r.reason == reason)
            .map(|r| r.count)
            .sum();
        let expected = match reason {
            RefusalReason::Unauthorized => 160 + 500,
            _ => 160,
        };
        assert_eq!(counted, expected, "{reason:?}");
    }
    assert!(
        rows.iter()
            .any(|r| r.count == 500 && r.source != RefusalSource::Other),
        "the largest source keeps its row"
    );
    store.close().await;
}

/// Refusal rows have a short retention of their own (`REFUSAL_RETENTION`), whatever the
/// audit's: a daemon whose database keeps the audit for ever still deletes refusal rows older
/// than it, and keeps newer ones.
#[apply(both_backends)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn refusal_rows_are_pruned_past_their_own_retention(#[case] backend: Backend) {
    use fencewatch::app::refusals::REFUSAL_RETENTION;
    use fencewatch::domain::refusal::{RefusalCount, RefusalReason, RefusalSample, RefusalSource};
    let db = test_db!(backend);
    let store = db.store().await;
    let now_us = chrono::Utc::now().timestamp_micros();
    let retention_us = REFUSAL_RETENTION.as_micros() as i64;
    let row = |at_us: i64| RefusalCount {
        interval_start_us: at_us - at_us.rem_euclid(60_000_000),
        source: RefusalSource::Address("192.0.2.7".parse().unwrap()),
        reason: RefusalReason::Unauthorized,
        count: 1,
        first_at_us: at_us,
        last_at_us: at_us,
        sample: RefusalSample::new(None, "GET /v1/stats".into(), "no key".into()),
    };
    store
        .record_refusals(&[row(now_us - retention_us - 3_600_000_000), row(now_us)])
        .await
        .unwrap();
    store.close().await;
    let daemon = Daemon::spawn(&db, &[]).await;
    let pool = db.raw_pool().await;
    let mut left = count(&pool, "SELECT COUNT(*) FROM refusals").await;
    for _ in 0..100 {
        if left == 1 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
        left = count(&pool, "SELECT COUNT(*) FROM refusals").await;
    }
    assert_eq!(left, 1, "the old row is pruned, the new one kept");
    let kept = count(&pool, "SELECT MAX(last_at_us) FROM refusals").await;
    assert_eq!(kept, now_us);
    pool.close().await;
    daemon.kill().await;
}
