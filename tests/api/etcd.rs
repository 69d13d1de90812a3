//! etcd locks as the authority of writes (`serve --etcd`, `Fencing-Lease: etcd:PREFIX`), against
//! a real etcd started per test on free loopback ports.

use crate::both_backends;
use crate::helpers::{audit_of, bench_report, http_client, Backend, Daemon, Put, Reply, TestDb};
use fencewatch::authority::etcd::{EtcdClient, EtcdError};
use rstest::rstest;
use rstest_reuse::apply;
use std::process::Stdio;
use std::time::{Duration, Instant};
use tokio::process::{Child, Command};

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// One etcd member, killed when dropped.
struct Etcd {
    child: Option<Child>,
    url: String,
    _dir: tempfile::TempDir,
}

impl Etcd {
    async fn start() -> Etcd {
        Self::start_on(free_port()).await
    }

    /// A fresh member (new data, revisions from 1) listening for clients on `port`.
    async fn start_on(port: u16) -> Etcd {
        let dir = tempfile::tempdir().unwrap();
        let url = format!("http://127.0.0.1:{port}");
        let peer = format!("http://127.0.0.1:{}", free_port());
        let child = Command::new("etcd")
            .arg("--data-dir")
            .arg(dir.path().join("data"))
            .args([
                "--listen-client-urls",
                &url,
                "--advertise-client-urls",
                &url,
            ])
            .args([
                "--listen-peer-urls",
                &peer,
                "--initial-advertise-peer-urls",
                &peer,
            ])
            .args([
                "--initial-cluster",
                &format!("default={peer}"),
                "--name",
                "default",
            ])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .kill_on_drop(true)
            .spawn()
            .expect("start etcd");
        let etcd = Etcd {
            child: Some(child),
            url,
            _dir: dir,
        };
        let started = Instant::now();
        loop {
            if let Ok(client) = etcd.try_client() {
                if client.status().await.is_ok() {
                    return etcd;
                }
            }
            assert!(
                started.elapsed() < Duration::from_secs(30),
                "etcd did not start"
            );
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    fn try_client(&self) -> Result<EtcdClient, EtcdError> {
        EtcdClient::new(vec![self.url.clone()], Duration::from_secs(10))
    }

    fn client(&self) -> EtcdClient {
        self.try_client().unwrap()
    }

    async fn kill(&mut self) {
        if let Some(mut child) = self.child.take() {
            child.kill().await.unwrap();
        }
    }

    /// Takes `prefix`'s lock under a lease of `ttl_s` seconds (never kept alive) and returns
    /// the lock key with its create revision, the token.
    async fn lock(&self, prefix: &str, ttl_s: i64) -> (String, i64) {
        let client = self.client();
        let lease = client.grant(ttl_s).await.unwrap();
        let key = client.lock(prefix, lease).await.unwrap();
        (key.clone(), create_revision(&client, &key).await)
    }

    async fn unlock(&self, key: &str) {
        self.client().unlock(key).await.unwrap();
    }

    /// A contender's key under the lock that does not hold it (as a waiting `Lock` leaves).
    async fn waiter(&self, prefix: &str) -> i64 {
        let client = self.client();
        let lease = client.grant(60).await.unwrap();
        let key = format!("{prefix}/{lease:x}");
        client.put(&key, b"", lease).await.unwrap();
        create_revision(&client, &key).await
    }

    /// Moves the cluster's revision on by `count` writes elsewhere.
    async fn bump(&self, count: usize) {
        let client = self.client();
        for i in 0..count {
            client
                .put("unrelated", i.to_string().as_bytes(), 0)
                .await
                .unwrap();
        }
    }
}

async fn create_revision(client: &EtcdClient, key: &str) -> i64 {
    client.get(key).await.unwrap().unwrap().create_revision
}

async fn daemon(db: &TestDb, etcd: &Etcd, extra: &[&str]) -> Daemon {
    let mut args = vec!["--etcd", etcd.url.as_str(), "--db-timeout", "2s"];
    args.extend_from_slice(extra);
    Daemon::spawn(db, &args).await
}

fn put(daemon: &Daemon, key: &str, lock: &str, token: i64) -> Put {
    Put::new(
        &http_client(),
        format!("{}/v1/resources/{key}", daemon.base),
    )
    .token(token)
    .lease(&format!("etcd:{lock}"))
}

async fn last_audit(daemon: &Daemon, resource: &str) -> serde_json::Value {
    audit_of(&http_client(), &daemon.base, resource)
        .await
        .last()
        .cloned()
        .unwrap()
}

async fn metric(daemon: &Daemon, line_start: &str) -> f64 {
    let text = http_client()
        .get(format!("{}/metrics", daemon.base))
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    text.lines()
        .find(|line| line.starts_with(line_start))
        .and_then(|line| line.rsplit(' ').next())
        .and_then(|value| value.parse().ok())
        .unwrap_or_else(|| panic!("no {line_start} in\n{text}"))
}

#[apply(both_backends)]
#[cfg_attr(not(fencewatch_etcd), ignore = "needs etcd on the PATH")]
#[tokio::test]
async fn every_row_of_the_contract(#[case] backend: Backend) {
    let etcd = Etcd::start().await;
    let db = TestDb::new(backend).await;
    let fw = daemon(&db, &etcd, &[]).await;

    let (first_key, first) = etcd.lock("jobs", 60).await;
    // The holder's token is decided as usual, and the audit names the lock and its holder.
    put(&fw, "a", "jobs", first)
        .owner("w1")
        .body("one")
        .send()
        .await;
    let row = last_audit(&fw, "a").await;
    assert_eq!(row["outcome"], "accepted", "{row}");
    assert_eq!(row["lease"], "etcd:jobs");
    assert!(
        row["detail"].as_str().unwrap().contains(&first_key),
        "{row}"
    );

    // A waiter's key, or a made-up number above the holder's: not a holder's.
    let waiter = etcd.waiter("jobs").await;
    assert!(waiter > first);
    let reply = put(&fw, "a", "jobs", waiter).send().await;
    reply.assert_problem(403, "unknown-generation");
    assert_eq!(reply.json["outcome"], "unauthorized");
    put(&fw, "a", "jobs", first + 1_000_000)
        .send()
        .await
        .assert_problem(403, "unknown-generation");

    // A new holder: the old token is superseded even where the new one never wrote.
    etcd.unlock(&first_key).await;
    // The waiter would hold it next; it gives up instead.
    let client = etcd.client();
    while let (Some(waiter), _) = client.first_created("jobs/").await.unwrap() {
        client.delete(&waiter.key).await.unwrap();
    }
    let (second_key, second) = etcd.lock("jobs", 60).await;
    let reply = put(&fw, "never-seen-second", "jobs", first).send().await;
    reply.assert_problem(409, "stale-token");
    assert_eq!(reply.json["outcome"], "superseded");
    assert_eq!(
        put(&fw, "b", "jobs", second).send().await.status.as_u16(),
        201
    );

    // Released by all: the last holder's is accepted with the lapse in the audit...
    etcd.unlock(&second_key).await;
    let reply = put(&fw, "b", "jobs", second).body("after").send().await;
    assert_eq!(reply.status.as_u16(), 200, "{}", reply.json);
    let row = last_audit(&fw, "b").await;
    assert!(row["detail"].as_str().unwrap().contains("lapsed"), "{row}");
    // ...and a revision seen holding stays a floor when nobody holds it.
    put(&fw, "c", "jobs", first)
        .send()
        .await
        .assert_problem(409, "stale-token");

    // Under --strict-leases, the lapsed holder's is refused.
    let strict = daemon(&db, &etcd, &["--strict-leases"]).await;
    put(&strict, "b", "jobs", second)
        .send()
        .await
        .assert_problem(409, "lease-expired");

    // Not a valid key prefix.
    put(&fw, "b", "", second)
        .send()
        .await
        .assert_problem(400, "invalid-request");
}

#[cfg_attr(not(fencewatch_etcd), ignore = "needs etcd on the PATH")]
#[tokio::test]
async fn without_etcd_an_etcd_lease_is_bad_input() {
    let db = TestDb::new(Backend::Sqlite).await;
    let fw = Daemon::spawn(&db, &[]).await;
    let reply = Put::new(&http_client(), format!("{}/v1/resources/a", fw.base))
        .token(5)
        .lease("etcd:jobs")
        .send()
        .await;
    reply.assert_problem(400, "invalid-request");
}

#[cfg_attr(not(fencewatch_etcd), ignore = "needs etcd on the PATH")]
#[tokio::test]
async fn an_etcd_that_is_not_there_makes_the_daemon_unready_and_writes_unavailable() {
    let db = TestDb::new(Backend::Sqlite).await;
    let nowhere = format!("http://127.0.0.1:{}", free_port());
    let fw = Daemon::spawn(&db, &["--etcd", &nowhere, "--db-timeout", "1s"]).await;
    let ready = Reply::from(
        http_client()
            .get(format!("{}/readyz", fw.base))
            .send()
            .await
            .unwrap(),
    )
    .await;
    ready.assert_problem(503, "unavailable");
    let started = Instant::now();
    Put::new(&http_client(), format!("{}/v1/resources/a", fw.base))
        .token(5)
        .lease("etcd:jobs")
        .send()
        .await
        .assert_problem(503, "unavailable");
    assert!(started.elapsed() < Duration::from_secs(5));
    // The daemon's own leases and plain tokens still work.
    let plain = Put::new(&http_client(), format!("{}/v1/resources/a", fw.base))
        .token(5)
        .send()
        .await;
    assert_eq!(plain.status.as_u16(), 201);
}

/// A worker whose lock lapsed while it was paused is refused at a resource its successor
/// (holding an `etcdctl lock`) never wrote.
#[cfg_attr(not(fencewatch_etcd), ignore = "needs etcd on the PATH")]
#[tokio::test]
async fn a_paused_worker_is_refused_where_its_successor_never_wrote() {
    let etcd = Etcd::start().await;
    let db = TestDb::new(Backend::Sqlite).await;
    let fw = daemon(&db, &etcd, &[]).await;
    let (_, paused) = etcd.lock("billing", 2).await;
    assert_eq!(
        put(&fw, "billing/ledger", "billing", paused)
            .send()
            .await
            .status
            .as_u16(),
        201
    );
    // The pause: its lease runs out, and etcdctl's worker takes the lock and writes elsewhere.
    let script = format!(
        "echo \"$ETCD_LOCK_KEY $ETCD_LOCK_REV\"; curl -s -o /dev/null -X PUT \
         -H \"Fencing-Token: $ETCD_LOCK_REV\" -H 'Fencing-Lease: etcd:billing' \
         --data-binary second {}/v1/resources/billing/invoices; sleep 30",
        fw.base
    );
    let mut holder = Command::new("etcdctl")
        .env("ETCDCTL_API", "3")
        .args([
            "--endpoints",
            &etcd.url,
            "lock",
            "billing",
            "--",
            "sh",
            "-c",
            &script,
        ])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let stdout = holder.stdout.take().unwrap();
    let mut lines = tokio::io::AsyncBufReadExt::lines(tokio::io::BufReader::new(stdout));
    let line = tokio::time::timeout(Duration::from_secs(20), lines.next_line())
        .await
        .unwrap()
        .unwrap()
        .unwrap();
    let (key, rev) = line.split_once(' ').unwrap();
    let rev: i64 = rev.trim().parse().unwrap();
    assert!(key.starts_with("billing/"), "{line}");
    assert!(rev > paused);
    // The successor's write reaches the daemon.
    let started = Instant::now();
    while audit_of(&http_client(), &fw.base, "billing/invoices")
        .await
        .is_empty()
    {
        assert!(started.elapsed() < Duration::from_secs(10));
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    // The paused worker wakes up and writes where the successor never did.
    let reply = put(&fw, "billing/ledger", "billing", paused).send().await;
    reply.assert_problem(409, "stale-token");
    assert_eq!(reply.json["outcome"], "superseded");
    holder.kill().await.unwrap();
}

/// etcd killed while writes go on: every write after is 503, and none is accepted unchecked.
#[cfg_attr(not(fencewatch_etcd), ignore = "needs etcd on the PATH")]
#[tokio::test]
async fn etcd_killed_mid_load_gives_503_and_accepts_nothing_unchecked() {
    let mut etcd = Etcd::start().await;
    let db = TestDb::new(Backend::Sqlite).await;
    let fw = daemon(&db, &etcd, &[]).await;
    let (_, token) = etcd.lock("load", 60).await;
    let base = fw.base.clone();
    let writers: Vec<_> = (0..4)
        .map(|w| {
            let base = base.clone();
            tokio::spawn(async move {
                let http = http_client();
                let mut statuses = Vec::new();
                let until = Instant::now() + Duration::from_secs(4);
                while Instant::now() < until {
                    let sent = Instant::now();
                    let reply = Put::new(&http, format!("{base}/v1/resources/load/{w}"))
                        .token(token)
                        .lease("etcd:load")
                        .send()
                        .await;
                    let detail = reply.json["detail"].as_str().unwrap_or_default().to_owned();
                    statuses.push((sent, Instant::now(), reply.status.as_u16(), detail));
                }
                statuses
            })
        })
        .collect();
    tokio::time::sleep(Duration::from_millis(1500)).await;
    etcd.kill().await;
    let killed = Instant::now();
    let mut accepted_before = 0;
    for writer in writers {
        for (sent, answered, status, detail) in writer.await.unwrap() {
            match status {
                200 | 201 => {
                    // A request in flight at the kill may still have been checked before it;
                    // one sent after it cannot have been, however slow the machine.
                    assert!(sent < killed, "a write sent after the kill was accepted");
                    accepted_before += 1;
                }
                // Before the kill only a check that outlasted the timeout (a loaded machine's
                // etcd, or the daemon's) may be refused, and said so.
                503 => assert!(
                    answered > killed || detail.contains("did not answer within"),
                    "503 before the kill: {detail}"
                ),
                other => panic!("status {other}"),
            }
        }
    }
    assert!(accepted_before > 0);
    // Every accepted row was checked against etcd: it names the holder it saw.
    for w in 0..4 {
        for row in audit_of(&http_client(), &fw.base, &format!("load/{w}")).await {
            assert_eq!(row["outcome"], "accepted");
            assert!(
                row["detail"].as_str().unwrap().contains("held by load/"),
                "{row}"
            );
        }
    }
}

/// Two daemons on one PostgreSQL share what they have seen hold a lock.
#[rstest]
#[cfg_attr(
    not(fencewatch_pg),
    ignore = "needs PostgreSQL: set FENCEWATCH_TEST_PG"
)]
#[case::postgres(Backend::Postgres)]
#[cfg_attr(not(fencewatch_etcd), ignore = "needs etcd on the PATH")]
#[tokio::test]
async fn two_daemons_on_postgres_agree(#[case] backend: Backend) {
    let etcd = Etcd::start().await;
    let db = TestDb::new(backend).await;
    let one = daemon(&db, &etcd, &[]).await;
    let two = daemon(&db, &etcd, &[]).await;
    let (first_key, first) = etcd.lock("shared", 60).await;
    assert_eq!(
        put(&one, "x", "shared", first).send().await.status.as_u16(),
        201
    );
    etcd.unlock(&first_key).await;
    let (second_key, second) = etcd.lock("shared", 60).await;
    assert_eq!(
        put(&two, "y", "shared", second)
            .send()
            .await
            .status
            .as_u16(),
        201
    );
    etcd.unlock(&second_key).await;
    // Nobody holds it now; daemon one never saw the second holder itself.
    put(&one, "z", "shared", first)
        .send()
        .await
        .assert_problem(409, "stale-token");
    let lapsed = put(&one, "z", "shared", second).send().await;
    assert_eq!(lapsed.status.as_u16(), 201, "{}", lapsed.json);
}

/// A fresh etcd on the same address, whose revisions are lower than those seen: refused.
#[cfg_attr(not(fencewatch_etcd), ignore = "needs etcd on the PATH")]
#[tokio::test]
async fn a_restored_etcd_is_refused_and_raised() {
    let port = free_port();
    let mut old = Etcd::start_on(port).await;
    let db = TestDb::new(Backend::Sqlite).await;
    let fw = daemon(&db, &old, &[]).await;
    old.bump(30).await;
    let (_, high) = old.lock("orders", 60).await;
    assert_eq!(
        put(&fw, "o", "orders", high).send().await.status.as_u16(),
        201
    );
    old.kill().await;
    drop(old);

    let restored = Etcd::start_on(port).await;
    let (_, low) = restored.lock("orders", 60).await;
    assert!(low < high);
    let reply = put(&fw, "o", "orders", low).send().await;
    reply.assert_problem(503, "unavailable");
    // Even the token it knows is not obeyed while etcd answers below it.
    put(&fw, "o", "orders", high)
        .send()
        .await
        .assert_problem(503, "unavailable");
    assert!(
        metric(
            &fw,
            "fencewatch_authority_anomalies_total{kind=\"regressed\"}"
        )
        .await
            >= 1.0
    );
    let started = Instant::now();
    loop {
        let alerts = Reply::from(
            http_client()
                .get(format!("{}/v1/alerts", fw.base))
                .send()
                .await
                .unwrap(),
        )
        .await;
        let firing = alerts.json["alerts"].as_array().unwrap().iter().any(|a| {
            a["rule"] == "AuthorityRegressed"
                && a["state"] == "firing"
                && a["resource"] == "etcd:orders"
        });
        if firing {
            break;
        }
        assert!(
            started.elapsed() < Duration::from_secs(15),
            "{}",
            alerts.json
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

/// One generation presented by two owners is recorded as an anomaly.
#[cfg_attr(not(fencewatch_etcd), ignore = "needs etcd on the PATH")]
#[tokio::test]
async fn one_generation_from_two_owners_is_recorded() {
    let etcd = Etcd::start().await;
    let db = TestDb::new(Backend::Sqlite).await;
    let fw = daemon(&db, &etcd, &[]).await;
    let (_, token) = etcd.lock("dup", 60).await;
    put(&fw, "d", "dup", token).owner("w1").send().await;
    put(&fw, "d", "dup", token).owner("w2").send().await;
    let row = last_audit(&fw, "d").await;
    assert!(
        row["detail"]
            .as_str()
            .unwrap()
            .contains("presented before by owner w1"),
        "{row}"
    );
    assert_eq!(
        metric(
            &fw,
            "fencewatch_authority_anomalies_total{kind=\"shared_generation\"}"
        )
        .await,
        1.0
    );
}

/// Under `--lease-scope prefix` an etcd lock fences its prefix and what is under it, as the
/// daemon's own leases do; one leading `/` of the prefix is etcd's root, not the resource's.
#[cfg_attr(not(fencewatch_etcd), ignore = "needs etcd on the PATH")]
#[tokio::test]
async fn lease_scope_prefix_holds_etcd_locks_to_their_prefix() {
    let etcd = Etcd::start().await;
    let db = TestDb::new(Backend::Sqlite).await;
    let fw = daemon(&db, &etcd, &["--lease-scope", "prefix"]).await;
    let (_, rooted) = etcd.lock("/locks/jobs", 60).await;
    let (_, plain) = etcd.lock("billing", 60).await;
    for (key, lock, token, status) in [
        ("locks/jobs", "/locks/jobs", rooted, 201),
        ("locks/jobs/7", "/locks/jobs", rooted, 201),
        ("billing", "billing", plain, 201),
        ("billing/ledger", "billing", plain, 201),
        ("locks/jobs2", "/locks/jobs", rooted, 403),
        ("locks", "/locks/jobs", rooted, 403),
        ("billingx", "billing", plain, 403),
        ("ledger/billing", "billing", plain, 403),
    ] {
        let reply = put(&fw, key, lock, token).body("v").send().await;
        assert_eq!(reply.status.as_u16(), status, "{key}: {}", reply.json);
        if status == 403 {
            reply.assert_problem(403, "out-of-scope");
            assert_eq!(reply.json["outcome"], "unauthorized");
            let row = last_audit(&fw, key).await;
            assert_eq!(row["outcome"], "unauthorized", "{key}: {row}");
            assert_eq!(row["lease"], format!("etcd:{lock}"), "{row}");
        }
    }
    // A superseded token outside the prefix is out of scope first, as for a daemon's lease.
    put(&fw, "elsewhere", "billing", plain - 1)
        .send()
        .await
        .assert_problem(403, "out-of-scope");

    // Without the option, the same lock fences any resource.
    let any = daemon(&db, &etcd, &[]).await;
    let reply = put(&any, "elsewhere", "billing", plain).send().await;
    assert_eq!(reply.status.as_u16(), 201, "{}", reply.json);
}

/// `bench --etcd` runs the etcd-checked path beside the plain fence, holding a real lock that it
/// releases at the end.
#[cfg_attr(not(fencewatch_etcd), ignore = "needs etcd on the PATH")]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_bench_measures_etcd_checked_writes_beside_the_plain_fence() {
    let etcd = Etcd::start().await;
    let report = bench_report(
        &[
            "--etcd",
            etcd.url.as_str(),
            "--duration",
            "1s",
            "--connections",
            "2",
            "--resources",
            "10",
            "--stale",
            "0.5",
            "--readers",
            "1",
            "--no-baseline",
            "--json",
        ],
        Duration::from_secs(90),
    )
    .await;
    let checked = &report["etcd"];
    assert_eq!(checked["lease"], "etcd:bench-etcd", "{report}");
    assert!(checked["token"].as_i64().unwrap() > 1, "{report}");
    for path in [&report["http"], &checked["writes"]] {
        assert_eq!(path["errors"], 0, "{report}");
        // The holder's writes went through; the share one below the holder was superseded.
        assert!(path["accepted"].as_u64().unwrap() > 0, "{report}");
        assert!(path["rejected"].as_u64().unwrap() > 0, "{report}");
    }
    assert_eq!(checked["writes"]["path"], "http etcd", "{report}");
    assert!(
        checked["cpu"]["daemon_us"].as_f64().unwrap() > 0.0,
        "{report}"
    );
    assert_eq!(report["reads"]["errors"], 0, "{report}");
    // The lock was released when the bench ended.
    let (held, _) = etcd.client().first_created("bench-etcd/").await.unwrap();
    assert!(held.is_none(), "{held:?}");
}

/// `demo --authority etcd` starts its own etcd, its workers take etcd locks, and the paused one
/// is refused as superseded; nothing it started outlives it.
#[cfg_attr(not(fencewatch_etcd), ignore = "needs etcd on the PATH")]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_demo_runs_on_etcd_locks() {
    let output = tokio::time::timeout(
        Duration::from_secs(90),
        Command::new(env!("CARGO_BIN_EXE_fencewatch"))
            .args(["demo", "--authority", "etcd", "--headless", "--json"])
            .args(["--duration", "8s", "--workers", "4", "--resources", "2"])
            .env("FENCEWATCH_LOG", "error")
            .output(),
    )
    .await
    .expect("the demo ends after its duration")
    .unwrap();
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let summary: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(summary["authority"], "etcd", "{summary}");
    assert!(
        summary["writes"]["accepted"].as_u64().unwrap() > 0,
        "{summary}"
    );
    // The first pause comes soon after the start, the next `--every` (12 s) later: one
    // incident in 8 s, as in the plain demo, not one every few seconds.
    assert!(
        summary["writes"]["superseded"].as_u64().unwrap() > 0,
        "{summary}"
    );
    let incidents = summary["incidents"].as_array().unwrap();
    assert_eq!(incidents.len(), 1, "{summary}");
    assert!(incidents[0]["stale_owner"]
        .as_str()
        .unwrap()
        .starts_with("worker-"));
    assert_eq!(summary["database"]["kept"], false, "{summary}");
}

async fn lease_history(daemon: &Daemon, lease: &str, query: &str) -> Reply {
    Reply::from(
        http_client()
            .get(format!(
                "{}/v1/lease-history/{}{query}",
                daemon.base,
                crate::helpers::encode(lease)
            ))
            .send()
            .await
            .unwrap(),
    )
    .await
}

/// Two holders of one lock write in turn: the lock's history names both holder keys with
/// their generations, in order, as the daemon's own leases' history names their holders; and
/// the timeline of a resource they wrote says who held which generation.
#[apply(both_backends)]
#[cfg_attr(not(fencewatch_etcd), ignore = "needs etcd on the PATH")]
#[tokio::test]
async fn the_holders_written_under_are_the_locks_history(#[case] backend: Backend) {
    let etcd = Etcd::start().await;
    let db = TestDb::new(backend).await;
    let fw = daemon(&db, &etcd, &[]).await;
    lease_history(&fw, "etcd:/locks/report", "")
        .await
        .assert_problem(404, "not-found");

    let (first_key, first) = etcd.lock("/locks/report", 60).await;
    for body in ["one", "two"] {
        let reply = put(&fw, "report", "/locks/report", first)
            .owner("w1")
            .body(body)
            .send()
            .await;
        assert!(reply.status.is_success(), "{}", reply.json);
    }
    etcd.unlock(&first_key).await;
    let (second_key, second) = etcd.lock("/locks/report", 60).await;
    assert!(second > first);
    let reply = put(&fw, "report", "/locks/report", second)
        .owner("w2")
        .body("three")
        .send()
        .await;
    assert_eq!(reply.status.as_u16(), 200, "{}", reply.json);
    // The first holder, late: refused, and its history is not changed by it.
    put(&fw, "report", "/locks/report", first)
        .send()
        .await
        .assert_problem(409, "stale-token");

    let history = lease_history(&fw, "etcd:/locks/report", "").await;
    assert_eq!(history.status.as_u16(), 200, "{}", history.json);
    assert_eq!(history.json["lease"], "etcd:/locks/report");
    let events = history.json["events"].as_array().unwrap();
    let seen: Vec<(&str, &str, i64)> = events
        .iter()
        .map(|e| {
            (
                e["event"].as_str().unwrap(),
                e["holder"].as_str().unwrap(),
                e["token"].as_i64().unwrap(),
            )
        })
        .collect();
    // Newest first, as for a lease of the daemon's own.
    assert_eq!(
        seen,
        [
            ("observed", second_key.as_str(), second),
            ("observed", first_key.as_str(), first)
        ],
        "{}",
        history.json
    );
    let time = |e: &serde_json::Value, field: &str| {
        chrono::DateTime::parse_from_rfc3339(e[field].as_str().unwrap()).unwrap()
    };
    // The first holder was seen by two writes, over a span; the second after it.
    assert!(time(&events[1], "at") < time(&events[1], "expires_at"));
    assert!(time(&events[1], "expires_at") <= time(&events[0], "at"));
    // Paged like any lease's history.
    let page = lease_history(&fw, "etcd:/locks/report", "?limit=1").await;
    assert_eq!(page.json["events"].as_array().unwrap().len(), 1);
    assert_eq!(page.json["events"][0]["token"], second);

    // `audit timeline` names both holders and their generations.
    let output = Command::new(env!("CARGO_BIN_EXE_fencewatch"))
        .args(["audit", "--database", &db.url, "timeline", "report"])
        .env("FENCEWATCH_LOG", "warn")
        .output()
        .await
        .unwrap();
    let text = String::from_utf8_lossy(&output.stdout);
    assert!(output.status.success(), "{text}");
    let holds = |key: &str, generation: i64| {
        format!("lease etcd:/locks/report generation {generation} held by {key} from")
    };
    let first_line = text.find(&holds(&first_key, first)).expect(&text);
    let second_line = text.find(&holds(&second_key, second)).expect(&text);
    assert!(first_line < second_line, "{text}");
    assert!(
        text.contains(&format!("(superseded by generation {second})")),
        "{text}"
    );
    assert!(text.contains("(last seen holding)"), "{text}");
    assert!(text.contains("no write of a superseded generation was accepted"));
    let output = Command::new(env!("CARGO_BIN_EXE_fencewatch"))
        .args([
            "audit",
            "--database",
            &db.url,
            "timeline",
            "report",
            "--json",
        ])
        .env("FENCEWATCH_LOG", "warn")
        .output()
        .await
        .unwrap();
    let timeline: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
    let writes: Vec<i64> = timeline["entries"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["kind"] == "write" && e["outcome"] == "accepted")
        .map(|e| e["lease_generation_at_write"].as_i64().unwrap())
        .collect();
    // Each accepted write lands after the sighting of the holder it was checked against.
    assert_eq!(writes, [first, first, second], "{timeline}");
}

/// etcd killed between a write and its retry: the retry (same key, token and body) gets the
/// original answer from the store; anything else is 503 and changes nothing.
#[apply(both_backends)]
#[cfg_attr(not(fencewatch_etcd), ignore = "needs etcd on the PATH")]
#[tokio::test]
async fn a_replay_is_answered_while_etcd_is_down(#[case] backend: Backend) {
    let mut etcd = Etcd::start().await;
    let db = TestDb::new(backend).await;
    let fw = daemon(&db, &etcd, &["--lease-scope", "prefix"]).await;
    let (_, token) = etcd.lock("pay", 60).await;
    let first = put(&fw, "pay/1", "pay", token)
        .key("op-1")
        .body("+10")
        .send()
        .await;
    assert_eq!(first.status.as_u16(), 201, "{}", first.json);
    etcd.kill().await;

    let retry = put(&fw, "pay/1", "pay", token)
        .key("op-1")
        .body("+10")
        .send()
        .await;
    assert_eq!(retry.status.as_u16(), 201, "{}", retry.json);
    assert_eq!(retry.header("idempotent-replayed"), Some("true"));
    assert_eq!(retry.header("etag"), Some("\"1\""));
    assert_eq!(retry.json["outcome"], "replayed");
    for field in ["revision", "token", "idempotency_key", "highest_token"] {
        assert_eq!(
            retry.json[field], first.json[field],
            "{field}: {}",
            retry.json
        );
    }
    assert_ne!(retry.json["audit_id"], first.json["audit_id"]);

    // Another body under the key, another key, no key: not checked, so not decided.
    for reply in [
        put(&fw, "pay/1", "pay", token)
            .key("op-1")
            .body("+99")
            .send()
            .await,
        put(&fw, "pay/1", "pay", token)
            .key("op-2")
            .body("+10")
            .send()
            .await,
        put(&fw, "pay/1", "pay", token).body("+10").send().await,
    ] {
        reply.assert_problem(503, "unavailable");
    }
    // Outside the lock's prefix the answer needs no etcd: out of scope, as with etcd up.
    let outside = put(&fw, "elsewhere", "pay", token).body("x").send().await;
    outside.assert_problem(403, "out-of-scope");

    // Nothing changed: the value is the first write's, and the audit has it and its replay.
    let value = Reply::from(
        http_client()
            .get(format!("{}/v1/resources/pay/1", fw.base))
            .send()
            .await
            .unwrap(),
    )
    .await;
    assert_eq!(value.body, b"+10");
    assert_eq!(value.header("etag"), Some("\"1\""));
    let outcomes: Vec<String> = audit_of(&http_client(), &fw.base, "pay/1")
        .await
        .iter()
        .map(|row| row["outcome"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(outcomes, ["accepted", "replayed"]);
}
