//! Fault injection: daemons killed with SIGKILL again and again under load, alone or beside
//! others on one PostgreSQL. Every client records what it was told; afterwards the audit and
//! those observations must show that
//! 1. no accepted write carried a generation below one accepted before it on its resource,
//! 2. every acknowledged write and its audit row survived, and each resource holds the value of
//!    its last accepted write,
//! 3. the lease authority never granted a generation twice,
//! 4. the audit's hash chains verify.
//!
//! A few cycles run by default; `FENCEWATCH_FAULT_CYCLES=N` runs more.

use crate::helpers::{Backend, Daemon, Reply, Rng, SseClient, TestDb};
use crate::test_db;
use fencewatch::domain::{Outcome, ResourceKey};
use fencewatch::store::{AuditQuery, Store};
use rstest::rstest;
use serde_json::json;
use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::watch;
use tokio::task::JoinSet;

const RESOURCES: i64 = 6;
/// Acknowledged writes each kill cycle waits for before its kill, so that every cycle proves
/// something on a slow machine as on a fast one.
const MIN_ACKS_PER_CYCLE: u64 = 21;

fn cycles() -> usize {
    std::env::var("FENCEWATCH_FAULT_CYCLES")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(4)
}

/// A write the daemon answered (2xx or 409): what the client was told.
#[derive(Debug, Clone)]
struct Ack {
    resource: String,
    audit_id: i64,
    outcome: String,
    token: i64,
    revision: i64,
}

/// A lease generation the authority said it granted.
#[derive(Debug, Clone)]
struct Grant {
    token: i64,
    holder: String,
}

#[derive(Default)]
struct Observed {
    acks: Vec<Ack>,
    grants: Vec<Grant>,
    /// Requests that got no answer (the daemon died under them): their outcome is unknown.
    unanswered: usize,
    /// Writes refused with 503 while the database was unreachable.
    refused: usize,
}

/// Writers and lease clients spread over `bases` until told to stop or their daemon dies.
/// Tokens rise with each cycle and round, with some stale ones mixed in.
fn start_load(
    bases: &[String],
    cycle: usize,
    stop: &watch::Receiver<bool>,
    acknowledged: &Arc<AtomicU64>,
) -> JoinSet<Observed> {
    let mut clients = JoinSet::new();
    for client in 0..6_i64 {
        let base = bases[client as usize % bases.len()].clone();
        let stop = stop.clone();
        let acknowledged = acknowledged.clone();
        clients.spawn(async move {
            let http = crate::helpers::http_builder()
                .timeout(Duration::from_secs(10))
                .build()
                .unwrap();
            let mut rng = Rng::new(cycle as u64 * 100 + client as u64);
            let mut seen = Observed::default();
            for round in 0_i64.. {
                if *stop.borrow() {
                    break;
                }
                let resource = format!("faults/r{}", rng.below(RESOURCES as u64));
                let stale = rng.below(10) == 0;
                let token =
                    cycle as i64 * 100_000 + round * 10 + client - if stale { 50 } else { 0 };
                let sent = http
                    .put(format!("{base}/v1/resources/{resource}"))
                    .header("Fencing-Token", token.max(1).to_string())
                    .header("Fencing-Owner", format!("client-{client}"))
                    .body(format!("cycle {cycle} client {client} round {round}"))
                    .send()
                    .await;
                let Ok(response) = sent else {
                    seen.unanswered += 1;
                    break;
                };
                let Some(reply) = Reply::from_checked(response).await else {
                    seen.unanswered += 1;
                    break;
                };
                assert!(
                    reply.status.as_u16() != 500,
                    "a fault must never surface as a 500: {:?}",
                    reply.json
                );
                if reply.status.is_server_error() {
                    // 503 while the database is unreachable: refused, not acknowledged.
                    seen.refused += 1;
                    tokio::time::sleep(Duration::from_millis(20)).await;
                    continue;
                }
                acknowledged.fetch_add(1, Ordering::Relaxed);
                seen.acks.push(Ack {
                    resource,
                    audit_id: reply.json["audit_id"].as_i64().expect("audit_id"),
                    outcome: reply.json["outcome"].as_str().unwrap().to_owned(),
                    token: token.max(1),
                    revision: reply.json["revision"].as_i64().unwrap(),
                });
            }
            seen
        });
    }
    for client in 0..2_usize {
        let base = bases[client % bases.len()].clone();
        let stop = stop.clone();
        clients.spawn(async move {
            let http = crate::helpers::http_builder()
                .timeout(Duration::from_secs(10))
                .build()
                .unwrap();
            let holder = format!("holder-{cycle}-{client}");
            let mut seen = Observed::default();
            while !*stop.borrow() {
                let acquired = http
                    .post(format!("{base}/v1/leases/faults/lease/acquire"))
                    .json(&json!({"holder": holder, "ttl_ms": 60_000}))
                    .send()
                    .await;
                let Ok(response) = acquired else {
                    seen.unanswered += 1;
                    break;
                };
                let Some(reply) = Reply::from_checked(response).await else {
                    seen.unanswered += 1;
                    break;
                };
                if reply.status.as_u16() != 200 {
                    tokio::time::sleep(Duration::from_millis(2)).await;
                    continue;
                }
                let token = reply.json["token"].as_i64().expect("a granted token");
                seen.grants.push(Grant {
                    token,
                    holder: holder.clone(),
                });
                // Give it back so the other client (or the next cycle) can take the next one.
                let released = http
                    .post(format!("{base}/v1/leases/faults/lease/release"))
                    .json(&json!({"holder": holder, "token": token}))
                    .send()
                    .await;
                if released.is_err() {
                    seen.unanswered += 1;
                    break;
                }
            }
            seen
        });
    }
    clients
}

/// Runs `cycles()` rounds of load in which a fresh daemon is SIGKILLed at a random moment,
/// beside `survivors` daemons that stay up throughout (PostgreSQL only), then checks.
async fn kill_repeatedly(db: &TestDb, survivors: usize, outages: Option<&Proxy>) -> Report {
    // With a proxy, the daemons reach PostgreSQL through it, and it is cut now and then.
    let database_url = match outages {
        Some(proxy) => proxied_url(&db.url, proxy),
        None => db.url.clone(),
    };
    let stable: Vec<Daemon> = {
        let mut daemons = Vec::new();
        for _ in 0..survivors {
            daemons.push(Daemon::spawn_on(&database_url, &[]).await);
        }
        daemons
    };
    let mut observed = Observed::default();
    let mut rng = Rng::new(7);
    let cycles = cycles();
    for cycle in 0..cycles {
        let victim = Daemon::spawn_on(&database_url, &[]).await;
        let mut bases = vec![victim.base.clone()];
        bases.extend(stable.iter().map(|d| d.base.clone()));
        let (stop_tx, stop_rx) = watch::channel(false);
        let acknowledged = Arc::new(AtomicU64::new(0));
        let mut clients = start_load(&bases, cycle + 1, &stop_rx, &acknowledged);
        tokio::time::sleep(Duration::from_millis(300 + rng.below(500))).await;
        // Enough writes in flight to prove something, however slow the machine is today: the
        // kill waits for them rather than the test asserting a throughput.
        let enough = tokio::time::Instant::now() + Duration::from_secs(30);
        while acknowledged.load(Ordering::Relaxed) < MIN_ACKS_PER_CYCLE
            && tokio::time::Instant::now() < enough
        {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        if let Some(proxy) = outages {
            proxy.cut();
            tokio::time::sleep(Duration::from_millis(200 + rng.below(400))).await;
            proxy.restore();
            tokio::time::sleep(Duration::from_millis(rng.below(300))).await;
        }
        victim.kill().await;
        // The survivors' clients go on a little after the kill, then everyone stops.
        tokio::time::sleep(Duration::from_millis(100)).await;
        stop_tx.send(true).ok();
        while let Some(done) = clients.join_next().await {
            let done = done.expect("a client task panicked");
            observed.acks.extend(done.acks);
            observed.grants.extend(done.grants);
            observed.unanswered += done.unanswered;
            observed.refused += done.refused;
        }
    }
    for daemon in stable {
        daemon.kill().await;
    }
    let store = db.store().await;
    check(&store, &observed, cycles).await
}

/// Every audit row of `resources`, by id.
async fn audit_by_id(
    store: &Store,
    resources: impl IntoIterator<Item = String>,
) -> HashMap<i64, fencewatch::domain::AuditEntry> {
    let mut audit = HashMap::new();
    for resource in resources {
        let rows = store
            .audit_page(&AuditQuery {
                resource: Some(ResourceKey::parse(resource).unwrap()),
                limit: 1_000_000,
                ..Default::default()
            })
            .await
            .unwrap();
        audit.extend(rows.into_iter().map(|row| (row.id, row)));
    }
    audit
}

/// Every acknowledged write is in the audit as it was acknowledged.
fn assert_acknowledged(audit: &HashMap<i64, fencewatch::domain::AuditEntry>, acks: &[Ack]) {
    for ack in acks {
        let row = audit
            .get(&ack.audit_id)
            .unwrap_or_else(|| panic!("acknowledged {ack:?} is not in the audit"));
        assert_eq!(row.resource, ack.resource);
        assert_eq!(row.outcome.as_str(), ack.outcome);
        assert_eq!(row.token, Some(ack.token));
        assert_eq!(row.revision, ack.revision, "{ack:?}");
    }
}

#[derive(Debug)]
struct Report {
    cycles: usize,
    acknowledged: usize,
    unanswered: usize,
    audit_rows: usize,
    grants: usize,
    refused: usize,
}

async fn check(store: &Store, observed: &Observed, cycles: usize) -> Report {
    // 1. Per resource, in commit order, accepted generations never go down, and every refusal
    //    as stale was below what had been accepted.
    let mut audit: HashMap<i64, fencewatch::domain::AuditEntry> = HashMap::new();
    for resource in 0..RESOURCES {
        let key = ResourceKey::parse(format!("faults/r{resource}")).unwrap();
        let rows = store
            .audit_page(&AuditQuery {
                resource: Some(key.clone()),
                limit: 1_000_000,
                ..Default::default()
            })
            .await
            .unwrap();
        let mut highest = 0;
        let mut last_accepted = None;
        for row in rows.iter().rev() {
            let token = row.token.unwrap();
            match row.outcome {
                Outcome::Accepted => {
                    assert!(
                        token >= highest,
                        "{key}: generation {token} accepted after {highest} (audit {})",
                        row.id
                    );
                    highest = token;
                    last_accepted = Some(row);
                }
                Outcome::Stale => assert!(token < highest, "{key}: {row:?}"),
                other => panic!("{key}: unexpected outcome {other:?}"),
            }
        }
        // 2b. The resource holds what its last accepted write carried.
        if let Some(last) = last_accepted {
            let stored = store.read_value(&key).await.unwrap().unwrap();
            assert_eq!(stored.revision, last.revision, "{key}");
            assert_eq!(stored.highest_token, last.token.unwrap(), "{key}");
            assert_eq!(
                fencewatch::domain::sha256_hex(&stored.value),
                last.body_sha256.clone().unwrap(),
                "{key}"
            );
        }
        audit.extend(rows.into_iter().map(|row| (row.id, row)));
    }
    // 2. Every acknowledged write is in the audit as it was acknowledged.
    assert_acknowledged(&audit, &observed.acks);
    // 3. No generation granted twice, and each holder saw its grants rise.
    let mut granted: BTreeMap<i64, &str> = BTreeMap::new();
    for grant in &observed.grants {
        if let Some(before) = granted.insert(grant.token, &grant.holder) {
            panic!(
                "generation {} was granted to {before} and to {}",
                grant.token, grant.holder
            );
        }
    }
    let mut by_holder: HashMap<&str, Vec<i64>> = HashMap::new();
    for grant in &observed.grants {
        by_holder
            .entry(&grant.holder)
            .or_default()
            .push(grant.token);
    }
    for (holder, tokens) in by_holder {
        assert!(
            tokens.windows(2).all(|w| w[0] < w[1]),
            "{holder}: {tokens:?}"
        );
    }
    // 4. The chains verify.
    let report = store.verify_audit().await.unwrap();
    assert!(report.breaches.is_empty(), "{:?}", report.breaches);
    Report {
        cycles,
        acknowledged: observed.acks.len(),
        unanswered: observed.unanswered,
        audit_rows: audit.len(),
        grants: observed.grants.len(),
        refused: observed.refused,
    }
}

#[rstest]
#[case::sqlite_one_daemon(Backend::Sqlite, 0)]
#[cfg_attr(
    not(fencewatch_pg),
    ignore = "needs PostgreSQL: set FENCEWATCH_TEST_PG"
)]
#[case::postgres_one_daemon(Backend::Postgres, 0)]
#[cfg_attr(
    not(fencewatch_pg),
    ignore = "needs PostgreSQL: set FENCEWATCH_TEST_PG"
)]
#[case::postgres_two_daemons(Backend::Postgres, 1)]
#[cfg_attr(
    not(fencewatch_pg),
    ignore = "needs PostgreSQL: set FENCEWATCH_TEST_PG"
)]
#[case::postgres_three_daemons(Backend::Postgres, 2)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigkill_again_and_again_under_load_loses_nothing(
    #[case] backend: Backend,
    #[case] survivors: usize,
) {
    let db = test_db!(backend);
    let report = kill_repeatedly(&db, survivors, None).await;
    assert!(
        report.acknowledged >= MIN_ACKS_PER_CYCLE as usize * report.cycles,
        "too little load to prove anything: {report:?}"
    );
    assert!(report.grants > 0, "{report:?}");
    eprintln!(
        "faults {backend:?} with {} daemon(s): {} SIGKILL cycles, {} acknowledged writes and \
         {} audit rows checked, {} requests cut off unanswered, {} lease grants all distinct",
        survivors + 1,
        report.cycles,
        report.acknowledged,
        report.audit_rows,
        report.unanswered,
        report.grants
    );
}

/// The article's scenario with real processes: a worker acquires the lease, is stopped
/// (SIGSTOP: a GC pause, a stalled host) past its TTL, a second worker takes over and writes,
/// and the first resumes (SIGCONT) and writes with its old generation. The fence refuses it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_worker_stopped_past_its_lease_is_fenced_when_it_resumes() {
    let db = TestDb::new(Backend::Sqlite).await;
    let daemon = Daemon::spawn(&db, &[]).await;
    let worker = |holder: &str, pause: &str| {
        let mut command = tokio::process::Command::new("sh");
        command
            .arg("-c")
            .arg(
                "token=$(\"$FW\" lease acquire jobs --holder \"$HOLDER\" --ttl 1s --token-only) \
                   || exit 10; \
                 echo \"acquired $token\"; \
                 sleep \"$PAUSE\"; \
                 printf 'result from %s' \"$HOLDER\" | \"$FW\" write jobs/totals --token \"$token\" \
                   --lease jobs --owner \"$HOLDER\" > /dev/null",
            )
            .env("FW", env!("CARGO_BIN_EXE_fencewatch"))
            .env("FENCEWATCH_URL", &daemon.base)
            .env("HOLDER", holder)
            .env("PAUSE", pause)
            .stdout(std::process::Stdio::piped())
            .process_group(0)
            .kill_on_drop(true);
        command.spawn().expect("start a worker")
    };
    let signal_group = |pid: u32, name: &str| {
        let status = std::process::Command::new("kill")
            .args([&format!("-{name}"), "--", &format!("-{pid}")])
            .status()
            .expect("run kill");
        assert!(status.success(), "kill -{name} -{pid}");
    };
    let acquired = |child: &mut tokio::process::Child| {
        let stdout = child.stdout.take().expect("stdout");
        async move {
            let mut lines = tokio::io::AsyncBufReadExt::lines(tokio::io::BufReader::new(stdout));
            let line = tokio::time::timeout(Duration::from_secs(30), lines.next_line())
                .await
                .expect("the worker acquires within 30 s")
                .unwrap()
                .expect("a line");
            line.strip_prefix("acquired ")
                .expect("acquired TOKEN")
                .parse::<i64>()
                .unwrap()
        }
    };

    let mut old = worker("worker-a", "0.5");
    let old_token = acquired(&mut old).await;
    let old_pid = old.id().expect("running");
    signal_group(old_pid, "STOP");
    // Stopped past its one-second lease.
    tokio::time::sleep(Duration::from_millis(1500)).await;

    let mut new = worker("worker-b", "0");
    let new_token = acquired(&mut new).await;
    assert!(new_token > old_token);
    let new_status = tokio::time::timeout(Duration::from_secs(30), new.wait())
        .await
        .unwrap()
        .unwrap();
    assert_eq!(
        new_status.code(),
        Some(0),
        "the new owner's write is accepted"
    );

    signal_group(old_pid, "CONT");
    let old_status = tokio::time::timeout(Duration::from_secs(30), old.wait())
        .await
        .unwrap()
        .unwrap();
    assert_eq!(
        old_status.code(),
        Some(3),
        "the resumed worker is told its generation was superseded"
    );

    let http = crate::helpers::http_client();
    let value = Reply::from(
        http.get(format!("{}/v1/resources/jobs/totals", daemon.base))
            .send()
            .await
            .unwrap(),
    )
    .await;
    assert_eq!(value.body, b"result from worker-b");
    let audit = crate::helpers::audit_of(&http, &daemon.base, "jobs/totals").await;
    let outcomes: Vec<(&str, i64)> = audit
        .iter()
        .map(|row| {
            (
                row["outcome"].as_str().unwrap(),
                row["token"].as_i64().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        outcomes,
        vec![("accepted", new_token), ("superseded", old_token)],
        "in commit order"
    );
    daemon.kill().await;
}

/// Faults mixed: three daemons on one PostgreSQL, one SIGKILLed every cycle, while the network
/// to the database is also cut for a moment in every cycle.
#[cfg_attr(
    not(fencewatch_pg),
    ignore = "needs PostgreSQL: set FENCEWATCH_TEST_PG"
)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigkills_and_database_outages_mixed_lose_nothing() {
    let db = test_db!(Backend::Postgres);
    let proxy = Proxy::start(upstream_of(&db.url)).await;
    let report = kill_repeatedly(&db, 2, Some(&proxy)).await;
    assert!(report.acknowledged > 10 * report.cycles, "{report:?}");
    eprintln!(
        "faults mixed, 3 daemons: {} cycles of a SIGKILL and a database outage, {} acknowledged \
         writes and {} audit rows checked, {} refused with 503, {} cut off unanswered, {} lease \
         grants all distinct",
        report.cycles,
        report.acknowledged,
        report.audit_rows,
        report.refused,
        report.unanswered,
        report.grants
    );
}

/// `host:port` of a PostgreSQL URL.
fn upstream_of(url: &str) -> String {
    let url = reqwest::Url::parse(url).unwrap();
    format!("{}:{}", url.host_str().unwrap(), url.port().unwrap_or(5432))
}

/// The same database URL, through `proxy`.
fn proxied_url(url: &str, proxy: &Proxy) -> String {
    let mut url = reqwest::Url::parse(url).unwrap();
    url.set_host(Some("127.0.0.1")).unwrap();
    url.set_port(Some(proxy.address.port())).unwrap();
    url.to_string()
}

/// A TCP proxy in front of the real PostgreSQL server that can be cut (every connection
/// dropped, new ones refused) or stalled (bytes held, nothing closed, as when a network or a
/// server stops answering without saying so) and restored: the server going away and coming
/// back, as the daemon sees it, without disturbing other tests that share the server.
struct Proxy {
    address: std::net::SocketAddr,
    up: std::sync::Arc<std::sync::atomic::AtomicBool>,
    /// Whether the links opened since the last `abandon_links` may carry bytes.
    flowing: std::sync::Arc<std::sync::Mutex<watch::Sender<bool>>>,
    /// The switches of links stalled for good, kept: a dropped one would end its links.
    abandoned: std::sync::Mutex<Vec<watch::Sender<bool>>>,
    links: std::sync::Arc<std::sync::Mutex<Vec<tokio::task::AbortHandle>>>,
}

impl Proxy {
    async fn start(upstream: String) -> Proxy {
        use std::sync::atomic::Ordering;
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let address = listener.local_addr().unwrap();
        let up = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(true));
        let links = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
        let flowing = std::sync::Arc::new(std::sync::Mutex::new(watch::Sender::new(true)));
        let (accept_up, accept_links, accept_flowing) =
            (up.clone(), links.clone(), flowing.clone());
        tokio::spawn(async move {
            while let Ok((client, _)) = listener.accept().await {
                if !accept_up.load(Ordering::SeqCst) {
                    continue; // dropped: the connection is refused as it opens
                }
                let upstream = upstream.clone();
                let flowing = accept_flowing.lock().unwrap().subscribe();
                let link = tokio::spawn(async move {
                    if let Ok(server) = tokio::net::TcpStream::connect(upstream).await {
                        let (client_in, client_out) = client.into_split();
                        let (server_in, server_out) = server.into_split();
                        tokio::join!(
                            pump(client_in, server_out, flowing.clone()),
                            pump(server_in, client_out, flowing)
                        );
                    }
                });
                accept_links.lock().unwrap().push(link.abort_handle());
            }
        });
        Proxy {
            address,
            up,
            flowing,
            abandoned: std::sync::Mutex::new(Vec::new()),
            links,
        }
    }

    fn cut(&self) {
        self.up.store(false, std::sync::atomic::Ordering::SeqCst);
        for link in self.links.lock().unwrap().drain(..) {
            link.abort();
        }
    }

    fn stall(&self) {
        self.flowing.lock().unwrap().send_replace(false);
    }

    /// Stalls every link open now for good, while new ones work: the server behind them gone
    /// without a word, and another reachable at the same address.
    fn abandon_links(&self) {
        let mut flowing = self.flowing.lock().unwrap();
        flowing.send_replace(false);
        let stalled = std::mem::replace(&mut *flowing, watch::Sender::new(true));
        self.abandoned.lock().unwrap().push(stalled);
    }

    fn restore(&self) {
        self.up.store(true, std::sync::atomic::Ordering::SeqCst);
        self.flowing.lock().unwrap().send_replace(true);
    }
}

/// Copies bytes one way, holding them while the link is stalled.
async fn pump(
    mut from: tokio::net::tcp::OwnedReadHalf,
    mut to: tokio::net::tcp::OwnedWriteHalf,
    mut flowing: watch::Receiver<bool>,
) {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let mut buffer = vec![0; 16 * 1024];
    loop {
        // An end of the stream is held like bytes: a stalled link tells nothing.
        let read = from.read(&mut buffer).await.unwrap_or(0);
        if flowing.wait_for(|flowing| *flowing).await.is_err()
            || read == 0
            || to.write_all(&buffer[..read]).await.is_err()
        {
            break;
        }
    }
    let _ = to.shutdown().await;
}

/// What writers saw around an outage: every answer's status, by phase.
#[derive(Default, Debug)]
struct OutageLog {
    acks: Vec<Ack>,
    unavailable: usize,
    other_errors: Vec<String>,
    acked_after_restore: usize,
}

/// How the database goes away.
enum Outage {
    /// The network to it is cut by a proxy for three seconds.
    Network,
    /// The network to it stops delivering for three seconds, closing nothing.
    Stall,
    /// Every connection open to it stops delivering for good, closing nothing, while new
    /// connections work.
    StallForGood,
    /// The server itself is restarted, by this shell command.
    Restart(String),
}

#[cfg_attr(
    not(fencewatch_pg),
    ignore = "needs PostgreSQL: set FENCEWATCH_TEST_PG"
)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_going_away_under_load_gives_503s_and_the_daemon_recovers_by_itself() {
    outage_under_load(Outage::Network).await;
}

/// Nothing tells the daemon that the database went away: requests must not wait for TCP to
/// give up (minutes) but be answered 503 once `--db-timeout` passes.
#[cfg_attr(
    not(fencewatch_pg),
    ignore = "needs PostgreSQL: set FENCEWATCH_TEST_PG"
)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_that_stops_answering_gives_503s_within_the_timeout_and_the_daemon_recovers() {
    outage_under_load(Outage::Stall).await;
}

/// Connections that never answer again must not hold the write path: the batch waiting on one
/// is abandoned with it, and the next runs on a connection that works.
#[cfg_attr(
    not(fencewatch_pg),
    ignore = "needs PostgreSQL: set FENCEWATCH_TEST_PG"
)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_connections_that_never_answer_again_are_abandoned_and_writes_resume() {
    outage_under_load(Outage::StallForGood).await;
}

/// The server really restarted. Other tests share it, so this runs only when
/// `FENCEWATCH_PG_RESTART` names the command that restarts it; `.ci/run` runs it on its own,
/// after the rest of the suite.
#[ignore = "restarts the shared PostgreSQL: run alone with FENCEWATCH_PG_RESTART (.ci/run does)"]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_restarted_under_load_loses_nothing_and_the_daemon_recovers_by_itself() {
    let Ok(command) = std::env::var("FENCEWATCH_PG_RESTART") else {
        eprintln!("skipping: set FENCEWATCH_PG_RESTART to the command that restarts PostgreSQL");
        return;
    };
    outage_under_load(Outage::Restart(command)).await;
}

/// The live side came back with the writes: a write made now reaches a new subscriber of the
/// event stream.
async fn live_side_recovered(base: &str) {
    let mut events = SseClient::connect(base, None).await;
    let reply = Reply::from(
        crate::helpers::http_client()
            .put(format!("{base}/v1/resources/outage/live"))
            .header("Fencing-Token", "1")
            .body("after")
            .send()
            .await
            .unwrap(),
    )
    .await;
    assert!(
        matches!(reply.status.as_u16(), 200 | 201),
        "{}",
        String::from_utf8_lossy(&reply.body)
    );
    let audit_id = reply.json["audit_id"].as_i64().unwrap();
    // Writes other than this one may come first (the stream starts where the tail stands).
    loop {
        let event = events.next_of("write", Duration::from_secs(15)).await;
        if event.json()["id"].as_i64() == Some(audit_id) {
            break;
        }
    }
}

/// When the shared server last started: a restart changes it.
async fn postmaster_start_time() -> String {
    let base = std::env::var("FENCEWATCH_TEST_PG").unwrap();
    let mut conn = <sqlx::PgConnection as sqlx::Connection>::connect(&base)
        .await
        .unwrap();
    sqlx::query_scalar("SELECT pg_postmaster_start_time()::text")
        .fetch_one(&mut conn)
        .await
        .unwrap()
}

async fn outage_under_load(outage: Outage) {
    let db = test_db!(Backend::Postgres);
    let proxy = Proxy::start(upstream_of(&db.url)).await;
    let database_url = match outage {
        Outage::Network | Outage::Stall | Outage::StallForGood => proxied_url(&db.url, &proxy),
        Outage::Restart(_) => db.url.clone(),
    };
    let daemon = Daemon::spawn_on(&database_url, &["--db-timeout", "1s"]).await;

    let restored = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let (stop_tx, stop_rx) = watch::channel(false);
    let mut writers = JoinSet::new();
    for client in 0..4_i64 {
        let base = daemon.base.clone();
        let stop = stop_rx.clone();
        let restored = restored.clone();
        writers.spawn(async move {
            let http = crate::helpers::http_builder()
                .timeout(Duration::from_secs(20))
                .build()
                .unwrap();
            let mut log = OutageLog::default();
            for round in 0_i64.. {
                if *stop.borrow() {
                    break;
                }
                let resource = format!("outage/r{}", client % 3);
                let token = round * 10 + client + 1;
                let after_restore = restored.load(std::sync::atomic::Ordering::SeqCst);
                let sent = http
                    .put(format!("{base}/v1/resources/{resource}"))
                    .header("Fencing-Token", token.to_string())
                    .body(format!("client {client} round {round}"))
                    .send()
                    .await;
                let reply = match sent {
                    Ok(response) => Reply::from(response).await,
                    Err(error) => {
                        log.other_errors.push(format!("no answer: {error}"));
                        continue;
                    }
                };
                match reply.status.as_u16() {
                    200 | 201 | 409 => {
                        log.acks.push(Ack {
                            resource,
                            audit_id: reply.json["audit_id"].as_i64().unwrap(),
                            outcome: reply.json["outcome"].as_str().unwrap().to_owned(),
                            token,
                            revision: reply.json["revision"].as_i64().unwrap(),
                        });
                        if after_restore {
                            log.acked_after_restore += 1;
                        }
                    }
                    503 => {
                        assert_eq!(reply.content_type(), "application/problem+json");
                        assert_eq!(reply.json["type"], "unavailable", "{:?}", reply.json);
                        log.unavailable += 1;
                        tokio::time::sleep(Duration::from_millis(50)).await;
                    }
                    other => log
                        .other_errors
                        .push(format!("{other}: {}", String::from_utf8_lossy(&reply.body))),
                }
            }
            log
        });
    }
    tokio::time::sleep(Duration::from_millis(800)).await;
    let what = match &outage {
        Outage::Network => {
            proxy.cut();
            tokio::time::sleep(Duration::from_secs(3)).await;
            proxy.restore();
            "a 3 s network outage"
        }
        Outage::Stall => {
            proxy.stall();
            tokio::time::sleep(Duration::from_secs(3)).await;
            proxy.restore();
            "a 3 s stall of the network"
        }
        Outage::StallForGood => {
            proxy.abandon_links();
            tokio::time::sleep(Duration::from_secs(12)).await;
            "every open connection stalled for good"
        }
        Outage::Restart(command) => {
            let started_before = postmaster_start_time().await;
            let status = tokio::process::Command::new("sh")
                .args(["-c", command])
                .status()
                .await
                .expect("run FENCEWATCH_PG_RESTART");
            assert!(status.success(), "{command:?} failed: {status}");
            let base = std::env::var("FENCEWATCH_TEST_PG").unwrap();
            let mut back = false;
            for _ in 0..120 {
                if <sqlx::PgConnection as sqlx::Connection>::connect(&base)
                    .await
                    .is_ok()
                {
                    back = true;
                    break;
                }
                tokio::time::sleep(Duration::from_millis(250)).await;
            }
            assert!(back, "PostgreSQL came back within 30 s");
            assert_ne!(
                postmaster_start_time().await,
                started_before,
                "the server really restarted"
            );
            "a restart of PostgreSQL"
        }
    };
    restored.store(true, std::sync::atomic::Ordering::SeqCst);
    tokio::time::sleep(Duration::from_secs(3)).await;
    stop_tx.send(true).ok();

    let mut total = OutageLog::default();
    while let Some(log) = writers.join_next().await {
        let log = log.unwrap();
        total.acks.extend(log.acks);
        total.unavailable += log.unavailable;
        total.other_errors.extend(log.other_errors);
        total.acked_after_restore += log.acked_after_restore;
    }
    assert!(
        total.other_errors.is_empty(),
        "every answer is a write's or a 503 problem: {:?}",
        total.other_errors
    );
    // A restart can be short enough for every write to wait it out (each batch takes a fresh
    // connection); a 3 s cut cannot, and a 3 s stall outlasts the 1 s timeout.
    match outage {
        Outage::Network | Outage::Stall | Outage::StallForGood => {
            assert!(
                total.unavailable > 0,
                "the outage was seen: {} acks, {} after",
                total.acks.len(),
                total.acked_after_restore
            )
        }
        Outage::Restart(_) => assert!(
            total.acks.len() > total.acked_after_restore,
            "writes were acknowledged before the restart too"
        ),
    }
    assert!(
        total.acked_after_restore > 0,
        "writes go through again once the database is back, without a restart"
    );
    let readiness = reqwest::get(format!("{}/readyz", daemon.base))
        .await
        .unwrap();
    assert_eq!(readiness.status(), 200);
    live_side_recovered(&daemon.base).await;
    daemon.kill().await;

    // Checked on the database directly, not through the proxy.
    let store = db.store().await;
    let observed = Observed {
        acks: total.acks,
        ..Observed::default()
    };
    let audit = audit_by_id(&store, (0..3).map(|r| format!("outage/r{r}"))).await;
    assert_acknowledged(&audit, &observed.acks);
    assert!(store.verify_audit().await.unwrap().breaches.is_empty());
    eprintln!(
        "PostgreSQL outage, {what}: {} writes acknowledged ({} after it), {} answered 503, \
         none lost",
        observed.acks.len(),
        total.acked_after_restore,
        total.unavailable
    );
}

/// A small tmpfs mounted for the test's SQLite file; unmounted when dropped. `None` where this
/// process may not mount (not root, no privilege): the test then says so and skips.
struct SmallDisk {
    dir: tempfile::TempDir,
}

impl SmallDisk {
    fn mount(size: &str) -> Option<SmallDisk> {
        let dir = tempfile::tempdir().ok()?;
        let mounted = std::process::Command::new("mount")
            .args(["-t", "tmpfs", "-o", &format!("size={size}"), "tmpfs"])
            .arg(dir.path())
            .stderr(std::process::Stdio::null())
            .status()
            .is_ok_and(|status| status.success());
        mounted.then_some(SmallDisk { dir })
    }

    fn path(&self) -> &std::path::Path {
        self.dir.path()
    }
}

impl Drop for SmallDisk {
    fn drop(&mut self) {
        let _ = std::process::Command::new("umount")
            .arg(self.dir.path())
            .status();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_full_disk_fails_writes_cleanly_and_loses_nothing_acknowledged() {
    let Some(disk) = SmallDisk::mount("4m") else {
        eprintln!("skipping: cannot mount a small tmpfs here (needs root)");
        return;
    };
    // Room to give back later, to show the daemon recovers once space is free.
    let filler = disk.path().join("filler");
    std::fs::write(&filler, vec![0u8; 512 * 1024]).unwrap();
    let url = format!("sqlite://{}", disk.path().join("fencewatch.db").display());
    let daemon = Daemon::spawn_on(&url, &[]).await;
    let http = crate::helpers::http_client();
    let value = "v".repeat(32 * 1024);

    let mut acks = Vec::new();
    let mut refused = 0;
    for round in 0..400_i64 {
        let resource = format!("disk/r{round}");
        let reply = Reply::from(
            http.put(format!("{}/v1/resources/{resource}", daemon.base))
                .header("Fencing-Token", (round + 1).to_string())
                .body(value.clone())
                .send()
                .await
                .unwrap(),
        )
        .await;
        match reply.status.as_u16() {
            200 | 201 => acks.push(Ack {
                resource,
                audit_id: reply.json["audit_id"].as_i64().unwrap(),
                outcome: reply.json["outcome"].as_str().unwrap().to_owned(),
                token: round + 1,
                revision: reply.json["revision"].as_i64().unwrap(),
            }),
            503 => {
                reply.assert_problem(503, "unavailable");
                refused += 1;
                if refused >= 5 {
                    break;
                }
            }
            other => panic!("a full disk must be a 503, got {other}: {:?}", reply.json),
        }
    }
    assert!(
        refused >= 5,
        "the disk never filled: {} writes went in",
        acks.len()
    );
    assert!(!acks.is_empty());

    // Reads still work, and once space is free again so do writes, without a restart.
    let last = acks.last().unwrap().clone();
    let read = Reply::from(
        http.get(format!("{}/v1/resources/{}", daemon.base, last.resource))
            .send()
            .await
            .unwrap(),
    )
    .await;
    assert_eq!(read.status, 200, "the last acknowledged write is readable");
    std::fs::remove_file(&filler).unwrap();
    let mut recovered = false;
    for attempt in 0..20_i64 {
        let reply = Reply::from(
            http.put(format!("{}/v1/resources/disk/after", daemon.base))
                .header("Fencing-Token", "1")
                .body("small")
                .send()
                .await
                .unwrap(),
        )
        .await;
        if reply.status.is_success() {
            recovered = true;
            break;
        }
        assert_eq!(reply.status, 503, "attempt {attempt}: {:?}", reply.json);
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert!(recovered, "writes succeed again once there is room");
    daemon.kill().await;

    // After a restart on the same file, every acknowledged write is there and the chains verify.
    let store = Store::open(&url, &fencewatch::store::StoreOptions::default())
        .await
        .unwrap();
    let audit = audit_by_id(&store, acks.iter().map(|ack| ack.resource.clone())).await;
    assert_acknowledged(&audit, &acks);
    assert!(store.verify_audit().await.unwrap().breaches.is_empty());
    store.close().await;
    eprintln!(
        "full disk: {} writes acknowledged before it filled, {refused} refused with 503, \
         recovered once space was freed, none lost",
        acks.len()
    );
}

/// A session left inside a transaction without a statement for longer than the daemon's
/// `--db-timeout` (its daemon gave up on it, or vanished) is ended by PostgreSQL, so that its row
/// locks cannot block the other daemons until the server notices the client gone. The store
/// pauses here inside a batch's transaction, after its observation.
#[cfg_attr(
    not(fencewatch_pg),
    ignore = "needs PostgreSQL: set FENCEWATCH_TEST_PG"
)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_ends_a_session_left_inside_a_transaction_longer_than_the_db_timeout() {
    use fencewatch::domain::LeasePolicy;
    use fencewatch::store::{ObserveHook, StoreError, StoreOptions};
    let db = test_db!(Backend::Postgres);
    let pause: ObserveHook =
        std::sync::Arc::new(|| Box::pin(tokio::time::sleep(Duration::from_millis(1500))));
    let open = |db_timeout: Duration| {
        let options = StoreOptions {
            max_connections: 2,
            db_timeout,
            ..StoreOptions::default()
        };
        let (url, pause) = (db.url.clone(), pause.clone());
        async move {
            Store::open(&url, &options)
                .await
                .unwrap()
                .with_observe_hook(pause)
        }
    };
    let write = crate::interleaving::write_for("orphans/r", 1, "paused inside its transaction");

    let impatient = open(Duration::from_millis(500)).await;
    let error = impatient
        .apply_write(&write, LeasePolicy::default())
        .await
        .expect_err("the server ended the session paused inside its transaction");
    assert!(
        matches!(error, StoreError::Unavailable(_)),
        "a session the server ended is unavailability, worth a retry: {error}"
    );

    let patient = open(fencewatch::store::DEFAULT_DB_TIMEOUT).await;
    let applied = patient
        .apply_write(&write, LeasePolicy::default())
        .await
        .expect("the same pause inside the default timeout");
    assert_eq!(applied.entry.outcome, Outcome::Accepted);
}
