//! ZooKeeper locks as the authority of writes (`serve --zookeeper`, `Fencing-Lease: zk:/PATH`),
//! against a real ZooKeeper started per test on free loopback ports in a temporary folder, and
//! real kazoo `Lock` holders (tests/peers/kazoo_lock.py).

use crate::both_backends;
use crate::helpers::{audit_of, http_client, Backend, Daemon, Put, Reply, TestDb};
use rstest::rstest;
use rstest_reuse::apply;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader, Lines};
use tokio::process::{Child, ChildStdin, ChildStdout, Command};
use zookeeper_client as zk;

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

fn jar() -> String {
    std::env::var("FENCEWATCH_ZOOKEEPER_JAR")
        .unwrap_or_else(|_| "/usr/share/java/zookeeper.jar".to_owned())
}

/// One standalone ZooKeeper server, killed when dropped.
struct ZooKeeper {
    child: Option<Child>,
    port: u16,
    dir: tempfile::TempDir,
}

impl ZooKeeper {
    async fn start() -> ZooKeeper {
        let dir = tempfile::tempdir().unwrap();
        let mut zookeeper = ZooKeeper {
            child: None,
            port: free_port(),
            dir,
        };
        let data = zookeeper.data();
        zookeeper.run_on(&data).await;
        zookeeper
    }

    fn data(&self) -> PathBuf {
        self.dir.path().join("data")
    }

    fn hosts(&self) -> String {
        format!("127.0.0.1:{}", self.port)
    }

    /// Starts the server on `data` (a tick of 500 ms: sessions of 1 s to 60 s).
    async fn run_on(&mut self, data: &Path) {
        std::fs::create_dir_all(data).unwrap();
        let config = self.dir.path().join("zoo.cfg");
        std::fs::write(
            &config,
            format!(
                "tickTime=500\ndataDir={}\nclientPort={}\nclientPortAddress=127.0.0.1\n\
                 admin.enableServer=false\nminSessionTimeout=1000\nmaxSessionTimeout=60000\n",
                data.display(),
                self.port
            ),
        )
        .unwrap();
        let child = Command::new("java")
            .args(["-Xmx256m", "-cp", &jar()])
            .arg("org.apache.zookeeper.server.quorum.QuorumPeerMain")
            .arg(&config)
            .current_dir(self.dir.path())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .kill_on_drop(true)
            .spawn()
            .expect("start ZooKeeper (java)");
        self.child = Some(child);
        let started = Instant::now();
        loop {
            if let Ok(Ok(client)) = tokio::time::timeout(
                Duration::from_secs(2),
                zk::Client::connector()
                    .with_session_timeout(Duration::from_secs(5))
                    .with_fail_eagerly()
                    .connect(&self.hosts()),
            )
            .await
            {
                if client.check_stat("/").await.is_ok() {
                    return;
                }
            }
            assert!(
                started.elapsed() < Duration::from_secs(60),
                "ZooKeeper did not start"
            );
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    }

    async fn stop(&mut self) {
        if let Some(mut child) = self.child.take() {
            child.kill().await.unwrap();
        }
    }

    async fn client(&self) -> zk::Client {
        zk::Client::connector()
            .with_session_timeout(Duration::from_secs(30))
            .connect(&self.hosts())
            .await
            .unwrap()
    }

    /// A contender that waits behind the holder, as a waiting kazoo `Lock` leaves its node:
    /// returns the node's czxid. The node lives as long as the returned client.
    async fn waiter(&self, path: &str) -> (zk::Client, i64) {
        let client = self.client().await;
        let options = zk::CreateMode::EphemeralSequential.with_acls(zk::Acls::anyone_all());
        let (stat, _) = client
            .create(&format!("{path}/waiter__lock__"), b"waiter", &options)
            .await
            .unwrap();
        (client, stat.czxid)
    }
}

/// A kazoo `Lock(path, identifier)` holder, a Python process.
struct Holder {
    child: Child,
    stdin: Option<ChildStdin>,
    lines: Lines<BufReader<ChildStdout>>,
    node: String,
    czxid: i64,
}

impl Holder {
    /// Starts contending; returns once the lock is held.
    async fn take(zookeeper: &ZooKeeper, path: &str, identifier: &str, session_s: u32) -> Holder {
        let (child, stdin, mut lines) = Self::spawn(zookeeper, path, identifier, session_s);
        let line = tokio::time::timeout(Duration::from_secs(60), lines.next_line())
            .await
            .expect("kazoo took the lock within 60 s")
            .unwrap()
            .expect("kazoo printed HELD");
        let mut parts = line.split(' ');
        assert_eq!(parts.next(), Some("HELD"), "{line}");
        let node = parts.next().unwrap().to_owned();
        let czxid = parts.next().unwrap().parse().unwrap();
        Holder {
            child,
            stdin: Some(stdin),
            lines,
            node,
            czxid,
        }
    }

    fn spawn(
        zookeeper: &ZooKeeper,
        path: &str,
        identifier: &str,
        session_s: u32,
    ) -> (Child, ChildStdin, Lines<BufReader<ChildStdout>>) {
        let script = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/peers/kazoo_lock.py");
        let mut child = Command::new("python3")
            .args([
                script,
                &zookeeper.hosts(),
                path,
                identifier,
                &session_s.to_string(),
            ])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .kill_on_drop(true)
            .spawn()
            .expect("python3 with kazoo");
        let stdin = child.stdin.take().unwrap();
        let lines = BufReader::new(child.stdout.take().unwrap()).lines();
        (child, stdin, lines)
    }

    async fn release(mut self) {
        let mut stdin = self.stdin.take().unwrap();
        stdin.write_all(b"release\n").await.unwrap();
        stdin.flush().await.unwrap();
        // Generous: after a restart the holder first reconnects to a JVM that a loaded machine
        // may still be warming up.
        let line = tokio::time::timeout(Duration::from_secs(60), self.lines.next_line())
            .await
            .unwrap()
            .unwrap();
        assert_eq!(line.as_deref(), Some("RELEASED"));
        let _ = tokio::time::timeout(Duration::from_secs(20), self.child.wait()).await;
    }

    fn signal(&self, signal: &str) {
        let pid = self.child.id().unwrap().to_string();
        let status = std::process::Command::new("kill")
            .args([signal, &pid])
            .status()
            .unwrap();
        assert!(status.success());
    }
}

async fn daemon(db: &TestDb, zookeeper: &ZooKeeper, extra: &[&str]) -> Daemon {
    let hosts = zookeeper.hosts();
    let mut args = vec!["--zookeeper", hosts.as_str(), "--db-timeout", "2s"];
    args.extend_from_slice(extra);
    Daemon::spawn(db, &args).await
}

fn put(daemon: &Daemon, key: &str, lock: &str, token: i64) -> Put {
    Put::new(
        &http_client(),
        format!("{}/v1/resources/{key}", daemon.base),
    )
    .token(token)
    .lease(&format!("zk:{lock}"))
}

async fn last_audit(daemon: &Daemon, resource: &str) -> serde_json::Value {
    audit_of(&http_client(), &daemon.base, resource)
        .await
        .last()
        .cloned()
        .unwrap()
}

async fn get_json(daemon: &Daemon, path: &str) -> serde_json::Value {
    let reply = Reply::from(
        http_client()
            .get(format!("{}{path}", daemon.base))
            .send()
            .await
            .unwrap(),
    )
    .await;
    assert!(reply.status.is_success(), "{path}: {}", reply.json);
    reply.json
}

/// The contract's rows: the holder's czxid accepted and named; a waiter's czxid and a made-up
/// number refused as unknown; a released holder's czxid superseded once another holds, even
/// where the new holder never wrote; the last holder's accepted as lapsed when nobody holds.
#[apply(both_backends)]
#[cfg_attr(
    not(fencewatch_zookeeper),
    ignore = "needs ZooKeeper (Debian zookeeper) and kazoo"
)]
#[tokio::test]
async fn every_row_of_the_contract(#[case] backend: Backend) {
    let zookeeper = ZooKeeper::start().await;
    let db = TestDb::new(backend).await;
    let fw = daemon(&db, &zookeeper, &[]).await;

    let first = Holder::take(&zookeeper, "/locks/jobs", "worker-a", 30).await;
    let reply = put(&fw, "a", "/locks/jobs", first.czxid).send().await;
    assert_eq!(reply.status.as_u16(), 201, "{}", reply.json);
    let row = last_audit(&fw, "a").await;
    assert_eq!(row["lease"], "zk:/locks/jobs");
    let detail = row["detail"].as_str().unwrap();
    assert!(
        detail.contains(&format!("held by {} (worker-a)", first.node)),
        "{row}"
    );
    assert!(detail.contains("ZooKeeper zxid"), "{row}");

    // A waiter's czxid, above the holder's: no holder's.
    let (_waiting, waiter) = zookeeper.waiter("/locks/jobs").await;
    assert!(waiter > first.czxid);
    put(&fw, "a", "/locks/jobs", waiter)
        .send()
        .await
        .assert_problem(403, "unknown-generation");
    // A made-up token.
    put(&fw, "a", "/locks/jobs", first.czxid + 1_000_000)
        .send()
        .await
        .assert_problem(403, "unknown-generation");
    drop(_waiting);

    let first_czxid = first.czxid;
    first.release().await;
    let second = Holder::take(&zookeeper, "/locks/jobs", "worker-b", 30).await;
    assert!(second.czxid > first_czxid);
    let reply = put(&fw, "never-seen-second", "/locks/jobs", first_czxid)
        .send()
        .await;
    reply.assert_problem(409, "stale-token");
    assert_eq!(reply.json["outcome"], "superseded");
    let reply = put(&fw, "a", "/locks/jobs", second.czxid).send().await;
    assert_eq!(reply.status.as_u16(), 200, "{}", reply.json);

    // Nobody holds it: the last holder's is accepted with the lapse said.
    let second_czxid = second.czxid;
    second.release().await;
    let reply = put(&fw, "a", "/locks/jobs", second_czxid).send().await;
    assert_eq!(reply.status.as_u16(), 200, "{}", reply.json);
    let row = last_audit(&fw, "a").await;
    assert!(
        row["detail"].as_str().unwrap().contains("lock lapsed"),
        "{row}"
    );
    put(&fw, "a", "/locks/jobs", first_czxid)
        .send()
        .await
        .assert_problem(409, "stale-token");

    // A name that is no znode path is bad input.
    put(&fw, "a", "locks/jobs", second_czxid)
        .send()
        .await
        .assert_problem(400, "invalid-request");
}

#[cfg_attr(
    not(fencewatch_zookeeper),
    ignore = "needs ZooKeeper (Debian zookeeper) and kazoo"
)]
#[tokio::test]
async fn without_zookeeper_a_zk_lease_is_bad_input() {
    let db = TestDb::new(Backend::Sqlite).await;
    let fw = Daemon::spawn(&db, &[]).await;
    let reply = Put::new(&http_client(), format!("{}/v1/resources/a", fw.base))
        .token(5)
        .lease("zk:/locks/jobs")
        .send()
        .await;
    reply.assert_problem(400, "invalid-request");
}

/// A kazoo holder paused (SIGSTOP) past its session timeout loses the lock to another kazoo
/// client; woken, it is refused as superseded on a resource its successor never wrote. The
/// audit, the overlap and the lock's history name both.
#[cfg_attr(
    not(fencewatch_zookeeper),
    ignore = "needs ZooKeeper (Debian zookeeper) and kazoo"
)]
#[tokio::test]
async fn a_paused_kazoo_holder_is_refused_where_its_successor_never_wrote() {
    let zookeeper = ZooKeeper::start().await;
    let db = TestDb::new(Backend::Sqlite).await;
    let fw = daemon(&db, &zookeeper, &[]).await;
    let paused = Holder::take(&zookeeper, "/billing", "worker-paused", 2).await;
    let reply = put(&fw, "billing/ledger", "/billing", paused.czxid)
        .owner("worker-paused")
        .body("first")
        .send()
        .await;
    assert_eq!(reply.status.as_u16(), 201, "{}", reply.json);

    paused.signal("-STOP");
    // The successor waits until the paused holder's session expires, then holds the lock.
    let successor = Holder::take(&zookeeper, "/billing", "worker-next", 30).await;
    assert!(successor.czxid > paused.czxid);
    let reply = put(&fw, "billing/invoices", "/billing", successor.czxid)
        .owner("worker-next")
        .send()
        .await;
    assert_eq!(reply.status.as_u16(), 201, "{}", reply.json);

    paused.signal("-CONT");
    let reply = put(&fw, "billing/ledger", "/billing", paused.czxid)
        .owner("worker-paused")
        .body("late")
        .send()
        .await;
    reply.assert_problem(409, "stale-token");
    assert_eq!(reply.json["outcome"], "superseded");
    // The refusal names the holder that superseded it.
    let row = last_audit(&fw, "billing/ledger").await;
    assert_eq!(row["outcome"], "superseded");
    let detail = row["detail"].as_str().unwrap();
    assert!(
        detail.contains(&format!("held by {} (worker-next)", successor.node)),
        "{row}"
    );

    // The overlap names both owners and generations.
    let started = Instant::now();
    let overlap = loop {
        let overlaps = get_json(&fw, "/v1/overlaps").await;
        let found = overlaps["overlaps"]
            .as_array()
            .unwrap()
            .iter()
            .find(|o| o["resource"] == "billing/ledger")
            .cloned();
        if let Some(found) = found {
            break found;
        }
        assert!(started.elapsed() < Duration::from_secs(10), "{overlaps}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    let text = overlap.to_string();
    assert!(text.contains("worker-paused"), "{text}");
    assert!(text.contains(&paused.czxid.to_string()), "{text}");
    assert!(text.contains(&successor.czxid.to_string()), "{text}");

    // Who held the lock when: both holders, by node and kazoo identifier.
    let history = get_json(
        &fw,
        &format!(
            "/v1/lease-history/{}",
            crate::helpers::encode("zk:/billing")
        ),
    )
    .await;
    let holders: Vec<(String, i64)> = history["events"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| {
            (
                e["holder"].as_str().unwrap().to_owned(),
                e["token"].as_i64().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        holders,
        [
            (format!("{} (worker-next)", successor.node), successor.czxid),
            (format!("{} (worker-paused)", paused.node), paused.czxid),
        ],
        "{history}"
    );
    let output = Command::new(env!("CARGO_BIN_EXE_fencewatch"))
        .args(["audit", "--database", &db.url, "timeline", "billing/ledger"])
        .env("FENCEWATCH_LOG", "warn")
        .output()
        .await
        .unwrap();
    let text = String::from_utf8_lossy(&output.stdout);
    assert!(output.status.success(), "{text}");
    for (holder, czxid) in &holders {
        assert!(
            text.contains(&format!(
                "lease zk:/billing generation {czxid} held by {holder} from"
            )),
            "{text}"
        );
    }
    successor.release().await;
}

/// ZooKeeper stopped while writes go on: every write after is 503 within the timeout, and none
/// is accepted unchecked.
#[cfg_attr(
    not(fencewatch_zookeeper),
    ignore = "needs ZooKeeper (Debian zookeeper) and kazoo"
)]
#[tokio::test]
async fn zookeeper_stopped_mid_load_gives_503_within_the_timeout() {
    let mut zookeeper = ZooKeeper::start().await;
    let db = TestDb::new(Backend::Sqlite).await;
    let fw = daemon(&db, &zookeeper, &[]).await;
    let holder = Holder::take(&zookeeper, "/load", "loader", 30).await;
    let token = holder.czxid;
    let base = fw.base.clone();
    let writers: Vec<_> = (0..4)
        .map(|w| {
            let base = base.clone();
            tokio::spawn(async move {
                let http = http_client();
                let mut statuses = Vec::new();
                let until = Instant::now() + Duration::from_secs(5);
                while Instant::now() < until {
                    let sent = Instant::now();
                    let reply = Put::new(&http, format!("{base}/v1/resources/load/{w}"))
                        .token(token)
                        .lease("zk:/load")
                        .send()
                        .await;
                    statuses.push((sent, Instant::now(), reply.status.as_u16()));
                }
                statuses
            })
        })
        .collect();
    tokio::time::sleep(Duration::from_millis(1500)).await;
    // The server may be gone (and writes refused) before `stop` has reaped it.
    let stopping = Instant::now();
    zookeeper.stop().await;
    let stopped = Instant::now();
    let (mut accepted, mut unavailable) = (0, 0);
    for writer in writers {
        for (sent, answered, status) in writer.await.unwrap() {
            match status {
                200 | 201 => {
                    assert!(sent < stopped, "a write sent after the stop was accepted");
                    accepted += 1;
                }
                503 => {
                    assert!(answered > stopping, "503 before the stop");
                    // --db-timeout 2s, with a margin for a loaded machine.
                    assert!(
                        answered - sent < Duration::from_secs(4),
                        "a 503 took {:?}",
                        answered - sent
                    );
                    unavailable += 1;
                }
                other => panic!("status {other}"),
            }
        }
    }
    assert!(accepted > 0 && unavailable > 0, "{accepted} {unavailable}");
    for w in 0..4 {
        for row in audit_of(&http_client(), &fw.base, &format!("load/{w}")).await {
            assert_eq!(row["outcome"], "accepted");
            assert!(
                row["detail"].as_str().unwrap().contains("held by /load/"),
                "{row}"
            );
        }
    }
    drop(holder);
}

/// ZooKeeper restarted on an older copy of its data: its lock is held by a node older than
/// one the daemon saw hold it. Refused (503), and `AuthorityRegressed` fires.
#[cfg_attr(
    not(fencewatch_zookeeper),
    ignore = "needs ZooKeeper (Debian zookeeper) and kazoo"
)]
#[tokio::test]
async fn zookeeper_on_older_data_is_refused_and_raised() {
    let mut zookeeper = ZooKeeper::start().await;
    let db = TestDb::new(Backend::Sqlite).await;
    let fw = daemon(&db, &zookeeper, &[]).await;
    let first = Holder::take(&zookeeper, "/orders", "worker-old", 60).await;
    assert_eq!(
        put(&fw, "o", "/orders", first.czxid)
            .send()
            .await
            .status
            .as_u16(),
        201
    );
    // A copy of the data while the first holder holds the lock.
    zookeeper.stop().await;
    let older = zookeeper.dir.path().join("older");
    copy_dir(&zookeeper.data(), &older);
    let data = zookeeper.data();
    zookeeper.run_on(&data).await;
    let first_czxid = first.czxid;
    first.release().await;
    let second = Holder::take(&zookeeper, "/orders", "worker-new", 60).await;
    let reply = put(&fw, "o", "/orders", second.czxid).send().await;
    assert_eq!(reply.status.as_u16(), 200, "{}", reply.json);

    // Back to the older data: the first holder's node holds the lock again there.
    zookeeper.stop().await;
    zookeeper.run_on(&older).await;
    let started = Instant::now();
    loop {
        let reply = put(&fw, "o", "/orders", first_czxid).send().await;
        assert_ne!(reply.status.as_u16(), 200, "{}", reply.json);
        reply.assert_problem(503, "unavailable");
        if reply.json["detail"]
            .as_str()
            .unwrap_or_default()
            .contains("went backwards")
            || alert_firing(&fw, "zk:/orders").await
        {
            break;
        }
        assert!(
            started.elapsed() < Duration::from_secs(20),
            "{}",
            reply.json
        );
        tokio::time::sleep(Duration::from_millis(300)).await;
    }
    // Even the newest token it knows is not obeyed while ZooKeeper answers below it.
    put(&fw, "o", "/orders", second.czxid)
        .send()
        .await
        .assert_problem(503, "unavailable");
    let started = Instant::now();
    while !alert_firing(&fw, "zk:/orders").await {
        assert!(started.elapsed() < Duration::from_secs(15));
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    drop(second);
}

async fn alert_firing(fw: &Daemon, lock: &str) -> bool {
    let alerts = get_json(fw, "/v1/alerts").await;
    alerts["alerts"].as_array().unwrap().iter().any(|a| {
        a["rule"] == "AuthorityRegressed" && a["state"] == "firing" && a["resource"] == lock
    })
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let target = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            copy_dir(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), target).unwrap();
        }
    }
}

/// Two daemons on one PostgreSQL share the highest czxid they have seen hold a lock: the one
/// that never saw the second holder still refuses the first.
#[rstest]
#[cfg_attr(
    not(fencewatch_pg),
    ignore = "needs PostgreSQL: set FENCEWATCH_TEST_PG"
)]
#[case::postgres(Backend::Postgres)]
#[cfg_attr(
    not(fencewatch_zookeeper),
    ignore = "needs ZooKeeper (Debian zookeeper) and kazoo"
)]
#[tokio::test]
async fn two_daemons_on_postgres_agree(#[case] backend: Backend) {
    let zookeeper = ZooKeeper::start().await;
    let db = TestDb::new(backend).await;
    let one = daemon(&db, &zookeeper, &[]).await;
    let two = daemon(&db, &zookeeper, &[]).await;
    let first = Holder::take(&zookeeper, "/shared", "w1", 30).await;
    assert_eq!(
        put(&one, "x", "/shared", first.czxid)
            .send()
            .await
            .status
            .as_u16(),
        201
    );
    let first_czxid = first.czxid;
    first.release().await;
    let second = Holder::take(&zookeeper, "/shared", "w2", 30).await;
    assert_eq!(
        put(&two, "y", "/shared", second.czxid)
            .send()
            .await
            .status
            .as_u16(),
        201
    );
    let second_czxid = second.czxid;
    second.release().await;
    // Nobody holds it now; daemon one never saw the second holder itself.
    let reply = put(&one, "z", "/shared", first_czxid).send().await;
    reply.assert_problem(409, "stale-token");
    assert_eq!(reply.json["outcome"], "superseded");
    let lapsed = put(&one, "z", "/shared", second_czxid).send().await;
    assert_eq!(lapsed.status.as_u16(), 201, "{}", lapsed.json);
}

/// `fencewatch lock zk:/PATH -- CMD`: CMD runs holding the lock, with FENCEWATCH_TOKEN (the
/// lock node's czxid) and FENCEWATCH_LEASE set, so `fencewatch write` in it needs no flags; the
/// lock is released when CMD exits, and CMD's exit code is passed through.
#[cfg_attr(
    not(fencewatch_zookeeper),
    ignore = "needs ZooKeeper (Debian zookeeper) and kazoo"
)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn lock_runs_a_command_holding_a_zookeeper_lock() {
    let zookeeper = ZooKeeper::start().await;
    let db = TestDb::new(Backend::Sqlite).await;
    let fw = daemon(&db, &zookeeper, &[]).await;
    let exe = env!("CARGO_BIN_EXE_fencewatch");
    let script = format!(
        "echo \"$FENCEWATCH_LEASE $FENCEWATCH_TOKEN\"; echo hello | {exe} write jobs/1 --url {} || exit 99; exit 7",
        fw.base
    );
    let output = Command::new(exe)
        .args([
            "lock",
            "zk:/locks/runner",
            "--zookeeper",
            &zookeeper.hosts(),
        ])
        .args(["--name", "runner-1", "--", "sh", "-c", &script])
        .env("FENCEWATCH_LOG", "warn")
        .output()
        .await
        .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
    assert_eq!(
        output.status.code(),
        Some(7),
        "{stdout} {}",
        String::from_utf8_lossy(&output.stderr)
    );
    let (lease, token) = stdout.lines().next().unwrap().split_once(' ').unwrap();
    assert_eq!(lease, "zk:/locks/runner");
    let token: i64 = token.parse().unwrap();
    // The write inside was checked against the lock: its holder named, by the name given.
    let row = last_audit(&fw, "jobs/1").await;
    assert_eq!(row["outcome"], "accepted", "{row}");
    assert_eq!(row["token"], token, "{row}");
    assert!(
        row["detail"].as_str().unwrap().contains("(runner-1)"),
        "{row}"
    );
    // Released on exit: nobody holds the lock, and the next holder's czxid is higher.
    let (children, _) = zookeeper
        .client()
        .await
        .get_children("/locks/runner")
        .await
        .unwrap();
    assert!(children.is_empty(), "{children:?}");
    let next = Holder::take(&zookeeper, "/locks/runner", "next", 30).await;
    assert!(next.czxid > token);
    // A name that is no lock: exit 2, nothing run.
    let output = Command::new(exe)
        .args(["lock", "jobs", "--", "sh", "-c", "exit 0"])
        .output()
        .await
        .unwrap();
    assert_eq!(output.status.code(), Some(2));
    next.release().await;
}

/// `bench --zookeeper` runs the HTTP load with every write naming a ZooKeeper lock beside the
/// plain fence, and releases the lock at the end.
#[cfg_attr(
    not(fencewatch_zookeeper),
    ignore = "needs ZooKeeper (Debian zookeeper) and kazoo"
)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_bench_measures_zookeeper_checked_writes_beside_the_plain_fence() {
    let zookeeper = ZooKeeper::start().await;
    let hosts = zookeeper.hosts();
    let report = crate::helpers::bench_report(
        &[
            "--zookeeper",
            hosts.as_str(),
            "--duration",
            "1s",
            "--connections",
            "2",
            "--resources",
            "10",
            "--stale",
            "0.5",
            "--no-baseline",
            "--json",
        ],
        Duration::from_secs(90),
    )
    .await;
    let checked = &report["zookeeper"];
    assert_eq!(checked["lease"], "zk:/bench-zookeeper", "{report}");
    assert!(checked["token"].as_i64().unwrap() > 0, "{report}");
    for path in [&report["http"], &checked["writes"]] {
        assert_eq!(path["errors"], 0, "{report}");
        assert!(path["accepted"].as_u64().unwrap() > 0, "{report}");
        assert!(path["rejected"].as_u64().unwrap() > 0, "{report}");
    }
    assert_eq!(checked["writes"]["path"], "http zk", "{report}");
    let (children, _) = zookeeper
        .client()
        .await
        .get_children("/bench-zookeeper")
        .await
        .unwrap();
    assert!(children.is_empty(), "{children:?}");
}

/// `demo --authority zookeeper` starts its own ZooKeeper; its workers take ZooKeeper locks and
/// the one whose session ended while paused is refused as superseded.
#[cfg_attr(
    not(fencewatch_zookeeper),
    ignore = "needs ZooKeeper (Debian zookeeper) and kazoo"
)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_demo_runs_on_zookeeper_locks() {
    let output = tokio::time::timeout(
        Duration::from_secs(120),
        Command::new(env!("CARGO_BIN_EXE_fencewatch"))
            .args(["demo", "--authority", "zookeeper", "--headless", "--json"])
            .args(["--duration", "10s", "--workers", "4", "--resources", "2"])
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
    assert_eq!(summary["authority"], "zookeeper", "{summary}");
    assert!(
        summary["writes"]["accepted"].as_u64().unwrap() > 0,
        "{summary}"
    );
    assert!(
        summary["writes"]["superseded"].as_u64().unwrap() > 0,
        "{summary}"
    );
    // One pause soon after the start, the next only `--every` (12 s) later.
    let incidents = summary["incidents"].as_array().unwrap();
    assert_eq!(incidents.len(), 1, "{summary}");
    assert_eq!(summary["database"]["kept"], false, "{summary}");
}
