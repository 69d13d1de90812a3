//! The HTTP load: writers on keep-alive connections, readers and live-event subscribers beside
//! them, against a daemon the bench starts or one at `--url`.

use super::connection::{exchange, Endpoint};
use super::cpu::{peak_rss_mib, CpuMark, CpuPerWrite};
use super::tally::{finish, summarise, Tally};
use super::{BenchOptions, EventsResult, PathResult, Picks};
use crate::api::problem::ProblemType;
use anyhow::Context;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::io::AsyncBufReadExt;

/// What the HTTP run measured: the writes, and the reads and streams beside them.
pub(super) struct HttpRun {
    pub(super) writes: PathResult,
    pub(super) reads: Option<PathResult>,
    pub(super) events: Option<EventsResult>,
    pub(super) cpu: Option<CpuPerWrite>,
}

/// What the writers of one HTTP path present: the plain fence's tokens, or an external lock's
/// holder generation with the lock named in `Fencing-Lease`.
#[derive(Debug, Clone)]
pub(super) struct Fence {
    /// Resources are `NAMESPACE/N`; each path writes its own, so that a shared database
    /// (PostgreSQL) keeps their generations apart.
    pub(super) namespace: String,
    /// The generation the writers hold; the stale share sends the one below it.
    pub(super) token: i64,
    /// `Fencing-Lease`, e.g. `etcd:bench-etcd`.
    pub(super) lease: Option<String>,
    /// Extra `serve` arguments of a daemon the bench starts (e.g. `--etcd URL`).
    pub(super) serve_args: Vec<String>,
    /// The daemon's SQLite file when no `--database` is given: a fresh one per path.
    pub(super) database_file: &'static str,
    /// The path's name in the report (`http`, `http etcd`, …).
    pub(super) path: &'static str,
}

/// The plain fence's resources are `bench/N`.
pub(super) const PLAIN_NAMESPACE: &str = "bench";
/// The plain fence's writers' generation.
pub(super) const PLAIN_GENERATION: i64 = 1000;

/// The body each writer sends (`--fill` records the same).
pub(super) fn body_of(client: usize) -> String {
    format!("value from client {client}")
}

impl Fence {
    /// Every resource first sees generation 1000, so that 999 is stale from then on.
    pub(super) fn plain() -> Self {
        Self {
            namespace: PLAIN_NAMESPACE.to_owned(),
            token: PLAIN_GENERATION,
            lease: None,
            serve_args: Vec::new(),
            database_file: "bench.db",
            path: "http",
        }
    }

    fn token(&self, stale: bool) -> i64 {
        if stale {
            self.token - 1
        } else {
            self.token
        }
    }
}

/// The HTTP path against the daemon at `--url`, or one it starts (with its peak memory).
pub(super) async fn run_daemon_and_http(
    options: &BenchOptions,
    folder: &std::path::Path,
    fence: &Fence,
) -> anyhow::Result<(HttpRun, Option<f64>)> {
    let (base, mut daemon) = match &options.url {
        Some(url) => (url.trim_end_matches('/').to_owned(), None),
        None => {
            let database = options.database.clone().unwrap_or_else(|| {
                format!("sqlite://{}", folder.join(fence.database_file).display())
            });
            let (base, child) = start_daemon(&database, &fence.serve_args).await?;
            (base, Some(child))
        }
    };
    let daemon_pid = daemon.as_ref().and_then(tokio::process::Child::id);
    let http = run_http(&base, options, fence, daemon_pid).await;
    let peak = daemon_pid.and_then(peak_rss_mib);
    if let Some(child) = daemon.as_mut() {
        let _ = child.kill().await;
    }
    Ok((http?, peak))
}

/// Starts `fencewatch serve` as a child process and waits for its address.
pub(crate) async fn start_daemon(
    database: &str,
    extra: &[String],
) -> anyhow::Result<(String, tokio::process::Child)> {
    let exe = std::env::current_exe().context("cannot find this executable")?;
    let mut child = tokio::process::Command::new(exe)
        .args(["serve", "--listen", "127.0.0.1:0"])
        .args(extra)
        // Through the environment, not the arguments, which any user of the machine can read
        // (`ps`): the URL may carry a password.
        .env("FENCEWATCH_DATABASE_URL", database)
        .env("FENCEWATCH_LOG", "error")
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::inherit())
        .kill_on_drop(true)
        .spawn()
        .context("failed to start the daemon")?;
    let stdout = child.stdout.take().context("no stdout")?;
    let mut lines = tokio::io::BufReader::new(stdout).lines();
    let first = tokio::time::timeout(Duration::from_secs(30), lines.next_line())
        .await
        .context("the daemon did not start within 30 s")??
        .context("the daemon exited before announcing its address")?;
    let base = first
        .strip_prefix("listening on ")
        .context("unexpected first line from the daemon")?
        .to_owned();
    Ok((base, child))
}

async fn run_http(
    base: &str,
    options: &BenchOptions,
    fence: &Fence,
    daemon_pid: Option<u32>,
) -> anyhow::Result<HttpRun> {
    let ca_cert = options.ca_cert.as_deref();
    let http = crate::tls::http_client(
        reqwest::Client::builder().pool_max_idle_per_host(options.connections),
        ca_cert,
    )?;
    // Every resource first sees the writers' generation, so that the one below is stale.
    for resource in 0..options.resources {
        let mut seed = http
            .put(format!(
                "{base}/v1/resources/{}/{resource}",
                fence.namespace
            ))
            .header("Fencing-Token", fence.token);
        if let Some(lease) = &fence.lease {
            seed = seed.header("Fencing-Lease", lease);
        }
        let answer = seed
            .body("seed")
            .send()
            .await
            .context("the daemon did not answer")?;
        anyhow::ensure!(
            answer.status().is_success(),
            "the daemon refused the seed write of {}/{resource}: {}",
            fence.namespace,
            answer.text().await.unwrap_or_default()
        );
    }
    let stop = Arc::new(AtomicBool::new(false));
    // Subscribed before the writes start, on connections of their own.
    let streams = crate::tls::http_client(reqwest::Client::builder(), ca_cert)?;
    let subscribers: Vec<_> = (0..options.subscribers)
        .map(|_| {
            tokio::spawn(follow_events(
                streams.clone(),
                base.to_owned(),
                stop.clone(),
            ))
        })
        .collect();
    let endpoint = Arc::new(Endpoint::of(base, ca_cert)?);
    let cpu_at_start = CpuMark::now(daemon_pid);
    let started = Instant::now();
    let mut tasks = Vec::new();
    for client in 0..options.connections {
        tasks.push(tokio::spawn(write_on_one_connection(
            endpoint.clone(),
            client,
            options.clone(),
            fence.clone(),
            stop.clone(),
            Tally::new()?,
        )));
    }
    let mut readers = Vec::with_capacity(options.readers);
    for reader in 0..options.readers {
        readers.push(tokio::spawn(read_values(
            http.clone(),
            format!("{base}/v1/resources/{}", fence.namespace),
            reader,
            options.resources,
            stop.clone(),
            Tally::new()?,
        )));
    }
    let tallies = finish(tasks, &stop, options.duration).await?;
    let elapsed = started.elapsed();
    let cpu_at_end = CpuMark::now(daemon_pid);
    let mut read_tallies = Vec::with_capacity(readers.len());
    for reader in readers {
        read_tallies.push(reader.await.context("a reader failed")?);
    }
    let mut events = 0;
    let mut stream_errors = 0;
    for subscriber in subscribers {
        match subscriber.await.context("a subscriber failed")? {
            Ok(received) => events += received,
            Err(_) => stream_errors += 1,
        }
    }
    let writes = summarise(fence.path, options.connections, tallies, elapsed)?;
    Ok(HttpRun {
        cpu: cpu_at_end.per_write_since(&cpu_at_start, writes.requests),
        writes,
        reads: (options.readers > 0)
            .then(|| summarise("http reads", options.readers, read_tallies, elapsed))
            .transpose()?,
        events: (options.subscribers > 0).then(|| EventsResult {
            subscribers: options.subscribers,
            events,
            per_subscriber_per_second: events as f64
                / options.subscribers as f64
                / elapsed.as_secs_f64().max(f64::EPSILON),
            errors: stream_errors,
        }),
    })
}

/// One keep-alive connection writing until `stop`, through hyper's connection API rather than
/// a pooled client: the load generator shares the machine with the daemon, and the CPU
/// reqwest's client spent on its pool, connector and body wrappers was taken from the daemon
/// it measures (see docs/performance.md).
async fn write_on_one_connection(
    endpoint: Arc<Endpoint>,
    client: usize,
    options: BenchOptions,
    fence: Fence,
    stop: Arc<AtomicBool>,
    mut tally: Tally,
) -> Tally {
    let mut picks = Picks::seeded(client as u64 + 1);
    let mut sent = 0u64;
    let body = bytes::Bytes::from(body_of(client));
    let mut connection = None;
    while !stop.load(Ordering::Relaxed) {
        let sender = match &mut connection {
            Some(sender) => sender,
            None => match endpoint.connect().await {
                Ok(sender) => connection.insert(sender),
                Err(_) => {
                    tally.errors += 1;
                    tokio::time::sleep(Duration::from_millis(10)).await;
                    continue;
                }
            },
        };
        let resource = picks.resource(options.resources);
        let (_, stale) = picks.token(options.stale_fraction);
        let mut request =
            axum::http::Request::put(format!("/v1/resources/{}/{resource}", fence.namespace))
                .header(axum::http::header::HOST, endpoint.authority.as_str())
                .header("fencing-token", fence.token(stale));
        if let Some(lease) = &fence.lease {
            request = request.header("fencing-lease", lease.as_str());
        }
        if options.idempotency_keys {
            request = request.header("idempotency-key", format!("c{client}-{sent}"));
        }
        sent += 1;
        let Ok(request) = request.body(http_body_util::Full::new(body.clone())) else {
            tally.errors += 1;
            continue;
        };
        let began = Instant::now();
        match exchange(sender, request).await {
            Ok(status) => {
                let took = began.elapsed();
                match status {
                    200 | 201 => tally.record(took, false),
                    // By status alone, the problem's type unread: a stale token's status is the
                    // refusal the stale share is sent to get.
                    status if status == ProblemType::StaleToken.status() => {
                        tally.record(took, true)
                    }
                    _ => tally.errors += 1,
                }
            }
            Err(_) => {
                tally.errors += 1;
                connection = None;
            }
        }
    }
    tally
}

/// Reads random values until `stop`; a 200 counts as accepted.
async fn read_values(
    http: reqwest::Client,
    namespace_url: String,
    reader: usize,
    resources: usize,
    stop: Arc<AtomicBool>,
    mut tally: Tally,
) -> Tally {
    let mut picks = Picks::seeded(reader as u64 + 101);
    while !stop.load(Ordering::Relaxed) {
        let resource = picks.resource(resources);
        let began = Instant::now();
        let outcome = http.get(format!("{namespace_url}/{resource}")).send().await;
        match outcome {
            Ok(response) if response.status() == reqwest::StatusCode::OK => {
                let took = began.elapsed();
                let _ = response.bytes().await;
                tally.record(took, false);
            }
            _ => tally.errors += 1,
        }
    }
    tally
}

/// Follows the live event stream until `stop`, counting the events it receives.
async fn follow_events(
    http: reqwest::Client,
    base: String,
    stop: Arc<AtomicBool>,
) -> anyhow::Result<u64> {
    use eventsource_stream::Eventsource;
    use futures_util::StreamExt;
    let response = http
        .get(format!("{base}/v1/events"))
        .send()
        .await?
        .error_for_status()?;
    let mut events = response.bytes_stream().eventsource();
    let mut received = 0;
    while !stop.load(Ordering::Relaxed) {
        // Wakes now and then to notice `stop` when no event comes.
        match tokio::time::timeout(Duration::from_millis(100), events.next()).await {
            Ok(Some(Ok(_))) => received += 1,
            Ok(Some(Err(error))) => anyhow::bail!("the event stream broke: {error}"),
            Ok(None) => anyhow::bail!("the event stream ended"),
            Err(_) => {}
        }
    }
    Ok(received)
}
