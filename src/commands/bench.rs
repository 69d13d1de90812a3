//! `fencewatch bench`: fenced writes over HTTP with keep-alive connections against a daemon it
//! starts (or one at `--url`), and in the same run the same writes straight through the store
//! without HTTP, so the two can be compared side by side.

use crate::app::group_commit::GroupCommit;
use crate::domain::{FencedWrite, FencingToken, LeasePolicy, ResourceKey};
use crate::store::{Store, StoreOptions};
use anyhow::Context;
use serde::Serialize;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::io::AsyncBufReadExt;

#[derive(Debug, Clone)]
pub struct BenchOptions {
    pub url: Option<String>,
    /// Trust only this CA for an `https://` URL.
    pub ca_cert: Option<std::path::PathBuf>,
    pub database: Option<String>,
    pub connections: usize,
    pub resources: usize,
    pub stale_fraction: f64,
    pub idempotency_keys: bool,
    pub duration: Duration,
    pub baseline: bool,
    pub http: bool,
    pub json: bool,
    /// Clients reading values over HTTP beside the writers.
    pub readers: usize,
    /// Live event streams (`/v1/events`) consumed beside the writers.
    pub subscribers: usize,
}

/// What one path reached.
#[derive(Debug, Clone, Serialize)]
pub struct PathResult {
    pub path: String,
    pub clients: usize,
    pub requests: u64,
    pub seconds: f64,
    pub per_second: f64,
    pub p50_ms: f64,
    pub p99_ms: f64,
    pub p999_ms: f64,
    pub accepted: u64,
    pub rejected: u64,
    pub errors: u64,
}

/// What the live event streams received while the writers ran.
#[derive(Debug, Clone, Serialize)]
pub struct EventsResult {
    pub subscribers: usize,
    pub events: u64,
    /// Events each subscriber received per second, on average.
    pub per_subscriber_per_second: f64,
    /// Streams that failed or ended early.
    pub errors: u64,
}

#[derive(Debug, Clone, Serialize)]
pub struct BenchReport {
    pub http: Option<PathResult>,
    /// Reads of values beside the HTTP writers (`--readers`).
    pub reads: Option<PathResult>,
    /// Live event streams beside the HTTP writers (`--subscribers`).
    pub events: Option<EventsResult>,
    /// The same writes through the store, one transaction each: what a user would otherwise do.
    pub baseline: Option<PathResult>,
    /// The same writes through the store's group commit, no HTTP: what the HTTP hop costs.
    pub group_commit: Option<PathResult>,
    /// HTTP throughput over the baseline's.
    pub ratio: Option<f64>,
    /// The daemon's peak resident memory, when it was started by the bench.
    pub daemon_peak_rss_mib: Option<f64>,
    /// CPU time (user and system) per HTTP write while the writers ran: the daemon's, when it
    /// was started by the bench, and this process's (the load generator, with any readers and
    /// streams), which shares the machine with it.
    pub cpu: Option<CpuPerWrite>,
}

/// Where the HTTP run's CPU went, per write, and the throughput it bounds.
#[derive(Debug, Clone, Serialize)]
pub struct CpuPerWrite {
    pub daemon_us: Option<f64>,
    pub load_generator_us: f64,
    pub cores: usize,
    /// Writes per second were both processes to use every core and nothing else: the ceiling
    /// the CPU sets, whatever the latency. Only with the daemon's CPU known.
    pub ceiling_per_second: Option<f64>,
}

/// The token a client sends: the resource's generation, or one below it for the stale share.
fn token_for(rng: &mut u64, stale_fraction: f64) -> (i64, bool) {
    *rng ^= *rng << 13;
    *rng ^= *rng >> 7;
    *rng ^= *rng << 17;
    let roll = (*rng % 10_000) as f64 / 10_000.0;
    if roll < stale_fraction {
        (999, true)
    } else {
        (1000, false)
    }
}

fn resource_for(rng: &mut u64, resources: usize) -> usize {
    *rng ^= *rng << 13;
    *rng ^= *rng >> 7;
    *rng ^= *rng << 17;
    (*rng % resources.max(1) as u64) as usize
}

fn percentile(sorted: &[u32], q: f64) -> f64 {
    if sorted.is_empty() {
        return 0.0;
    }
    let index = ((sorted.len() as f64 - 1.0) * q).round() as usize;
    f64::from(sorted[index.min(sorted.len() - 1)]) / 1000.0
}

struct Tally {
    latencies_us: Vec<u32>,
    accepted: u64,
    rejected: u64,
    errors: u64,
}

fn summarise(path: &str, clients: usize, tallies: Vec<Tally>, elapsed: Duration) -> PathResult {
    let mut latencies: Vec<u32> = Vec::new();
    let (mut accepted, mut rejected, mut errors) = (0, 0, 0);
    for tally in tallies {
        latencies.extend(tally.latencies_us);
        accepted += tally.accepted;
        rejected += tally.rejected;
        errors += tally.errors;
    }
    latencies.sort_unstable();
    let requests = latencies.len() as u64;
    let seconds = elapsed.as_secs_f64();
    PathResult {
        path: path.to_owned(),
        clients,
        requests,
        seconds,
        per_second: requests as f64 / seconds.max(f64::EPSILON),
        p50_ms: percentile(&latencies, 0.50),
        p99_ms: percentile(&latencies, 0.99),
        p999_ms: percentile(&latencies, 0.999),
        accepted,
        rejected,
        errors,
    }
}

pub async fn run(options: BenchOptions) -> anyhow::Result<BenchReport> {
    let folder = tempfile::tempdir().context("failed to create a temporary folder")?;
    let (http, peak) = if options.http {
        let (http, peak) = run_daemon_and_http(&options, folder.path()).await?;
        (Some(http), peak)
    } else {
        (None, None)
    };
    let (http, reads, events, cpu) = match http {
        Some(run) => (Some(run.writes), run.reads, run.events, run.cpu),
        None => (None, None, None, None),
    };
    let baseline = if options.baseline {
        let database = format!("sqlite://{}", folder.path().join("baseline.db").display());
        let url = match (&options.url, &options.database) {
            (None, Some(url)) if url.starts_with("postgres") => url.clone(),
            _ => database,
        };
        Some(url)
    } else {
        None
    };
    let (baseline, group_commit) = match baseline {
        Some(url) => (
            Some(run_store(&url, &options, StorePath::OneTransactionPerWrite).await?),
            Some(run_store(&url, &options, StorePath::GroupCommit).await?),
        ),
        None => (None, None),
    };
    let ratio = http
        .as_ref()
        .zip(baseline.as_ref())
        .map(|(h, b)| h.per_second / b.per_second.max(f64::EPSILON));
    Ok(BenchReport {
        http,
        reads,
        events,
        baseline,
        group_commit,
        ratio,
        daemon_peak_rss_mib: peak,
        cpu,
    })
}

/// The HTTP path against the daemon at `--url`, or one it starts (with its peak memory).
/// What the HTTP run measured: the writes, and the reads and streams beside them.
struct HttpRun {
    writes: PathResult,
    reads: Option<PathResult>,
    events: Option<EventsResult>,
    cpu: Option<CpuPerWrite>,
}

async fn run_daemon_and_http(
    options: &BenchOptions,
    folder: &std::path::Path,
) -> anyhow::Result<(HttpRun, Option<f64>)> {
    let (base, mut daemon) = match &options.url {
        Some(url) => (url.trim_end_matches('/').to_owned(), None),
        None => {
            let database = options
                .database
                .clone()
                .unwrap_or_else(|| format!("sqlite://{}", folder.join("bench.db").display()));
            let (base, child) = start_daemon(&database).await?;
            (base, Some(child))
        }
    };
    let daemon_pid = daemon.as_ref().and_then(tokio::process::Child::id);
    let http = run_http(&base, options, daemon_pid).await;
    let peak = daemon_pid.and_then(peak_rss_mib);
    if let Some(child) = daemon.as_mut() {
        let _ = child.kill().await;
    }
    Ok((http?, peak))
}

/// Lets the clients run for `duration`, stops them and collects what they counted.
async fn finish(
    tasks: Vec<tokio::task::JoinHandle<Tally>>,
    stop: &AtomicBool,
    duration: Duration,
) -> anyhow::Result<Vec<Tally>> {
    tokio::time::sleep(duration).await;
    stop.store(true, Ordering::Relaxed);
    let mut tallies = Vec::new();
    for task in tasks {
        tallies.push(task.await.context("a client failed")?);
    }
    Ok(tallies)
}

impl Tally {
    fn new() -> Self {
        Self {
            latencies_us: Vec::new(),
            accepted: 0,
            rejected: 0,
            errors: 0,
        }
    }

    fn record(&mut self, took: Duration, rejected: bool) {
        self.latencies_us
            .push(u32::try_from(took.as_micros()).unwrap_or(u32::MAX));
        if rejected {
            self.rejected += 1;
        } else {
            self.accepted += 1;
        }
    }
}

/// Starts `fencewatch serve` as a child process and waits for its address.
async fn start_daemon(database: &str) -> anyhow::Result<(String, tokio::process::Child)> {
    let exe = std::env::current_exe().context("cannot find this executable")?;
    let mut child = tokio::process::Command::new(exe)
        .args(["serve", "--listen", "127.0.0.1:0", "--database", database])
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

/// VmHWM of a process, in MiB (Linux).
fn peak_rss_mib(pid: u32) -> Option<f64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    let kib: f64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib / 1024.0)
}

/// CPU time used so far (user and system) by process `pid`, or by this one. Linux only:
/// `/proc/PID/stat` counts it in ticks of `USER_HZ`, which the kernel fixes at 100 for user
/// space on the architectures this runs on.
fn cpu_time(pid: Option<u32>) -> Option<Duration> {
    let path = match pid {
        Some(pid) => format!("/proc/{pid}/stat"),
        None => "/proc/self/stat".to_owned(),
    };
    cpu_time_in(&std::fs::read_to_string(path).ok()?)
}

/// utime and stime of a `/proc/PID/stat` line: its 14th and 15th fields, counted after the
/// command name, which is in parentheses and may itself hold spaces and parentheses.
fn cpu_time_in(stat: &str) -> Option<Duration> {
    const USER_HZ: u64 = 100;
    let after_name = &stat[stat.rfind(')')? + 1..];
    let mut fields = after_name.split_whitespace().skip(11);
    let user: u64 = fields.next()?.parse().ok()?;
    let system: u64 = fields.next()?.parse().ok()?;
    Some(Duration::from_millis((user + system) * 1000 / USER_HZ))
}

/// Both processes' CPU time at one moment, to divide by the writes done between two of them.
struct CpuMark {
    daemon: Option<Duration>,
    load_generator: Option<Duration>,
}

impl CpuMark {
    fn now(daemon_pid: Option<u32>) -> Self {
        Self {
            daemon: daemon_pid.and_then(|pid| cpu_time(Some(pid))),
            load_generator: cpu_time(None),
        }
    }

    fn per_write_since(&self, start: &CpuMark, writes: u64) -> Option<CpuPerWrite> {
        if writes == 0 {
            return None;
        }
        let per_write = |until: Duration, from: Duration| {
            until.saturating_sub(from).as_secs_f64() * 1e6 / writes as f64
        };
        let load_generator_us = per_write(self.load_generator?, start.load_generator?);
        let daemon_us = self
            .daemon
            .zip(start.daemon)
            .map(|(until, from)| per_write(until, from));
        let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
        let ceiling_per_second = daemon_us
            .map(|daemon| daemon + load_generator_us)
            .filter(|total| *total > 0.0)
            .map(|total| cores as f64 * 1e6 / total);
        Some(CpuPerWrite {
            daemon_us,
            load_generator_us,
            cores,
            ceiling_per_second,
        })
    }
}

async fn run_http(
    base: &str,
    options: &BenchOptions,
    daemon_pid: Option<u32>,
) -> anyhow::Result<HttpRun> {
    let ca_cert = options.ca_cert.as_deref();
    let http = crate::tls::http_client(
        reqwest::Client::builder().pool_max_idle_per_host(options.connections),
        ca_cert,
    )?;
    // Every resource first sees generation 1000, so that 999 is stale from then on.
    for resource in 0..options.resources {
        http.put(format!("{base}/v1/resources/bench/{resource}"))
            .header("Fencing-Token", "1000")
            .body("seed")
            .send()
            .await
            .context("the daemon did not answer")?;
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
            stop.clone(),
        )));
    }
    let readers: Vec<_> = (0..options.readers)
        .map(|reader| {
            tokio::spawn(read_values(
                http.clone(),
                base.to_owned(),
                reader,
                options.resources,
                stop.clone(),
            ))
        })
        .collect();
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
    let writes = summarise("http", options.connections, tallies, elapsed);
    Ok(HttpRun {
        cpu: cpu_at_end.per_write_since(&cpu_at_start, writes.requests),
        writes,
        reads: (options.readers > 0)
            .then(|| summarise("http reads", options.readers, read_tallies, elapsed)),
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
/// it measures (see the README's Performance).
async fn write_on_one_connection(
    endpoint: Arc<Endpoint>,
    client: usize,
    options: BenchOptions,
    stop: Arc<AtomicBool>,
) -> Tally {
    let mut rng = (client as u64 + 1).wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    let mut tally = Tally::new();
    let mut sent = 0u64;
    let body = bytes::Bytes::from(format!("value from client {client}"));
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
        let resource = resource_for(&mut rng, options.resources);
        let (token, _) = token_for(&mut rng, options.stale_fraction);
        let mut request = axum::http::Request::put(format!("/v1/resources/bench/{resource}"))
            .header(axum::http::header::HOST, endpoint.authority.as_str())
            .header("fencing-token", token);
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
                    409 => tally.record(took, true),
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

type Sender = hyper::client::conn::http1::SendRequest<http_body_util::Full<bytes::Bytes>>;

/// Where the writers connect: the daemon's `host:port`, over TLS for an `https://` URL.
struct Endpoint {
    authority: String,
    tls: Option<(
        tokio_rustls::TlsConnector,
        rustls::pki_types::ServerName<'static>,
    )>,
}

impl Endpoint {
    fn of(base: &str, ca_cert: Option<&std::path::Path>) -> anyhow::Result<Self> {
        let uri = base
            .parse::<axum::http::Uri>()
            .with_context(|| format!("{base:?} is not a URL"))?;
        let authority = uri
            .authority()
            .with_context(|| format!("no host:port in {base}"))?;
        let tls = match uri.scheme_str() {
            Some("https") => Some((
                tokio_rustls::TlsConnector::from(crate::tls::client_config(ca_cert)?),
                crate::tls::server_name(authority.host())?,
            )),
            _ => None,
        };
        Ok(Self {
            authority: authority.as_str().to_owned(),
            tls,
        })
    }

    async fn connect(&self) -> anyhow::Result<Sender> {
        use hyper::client::conn::http1::handshake;
        use hyper_util::rt::TokioIo;
        let stream = tokio::net::TcpStream::connect(&self.authority).await?;
        stream.set_nodelay(true)?;
        let sender = match &self.tls {
            None => {
                let (sender, connection) = handshake(TokioIo::new(stream)).await?;
                tokio::spawn(connection);
                sender
            }
            Some((connector, name)) => {
                let stream = connector.connect(name.clone(), stream).await?;
                let (sender, connection) = handshake(TokioIo::new(stream)).await?;
                tokio::spawn(connection);
                sender
            }
        };
        Ok(sender)
    }
}

/// Sends one request and reads its whole answer: its status.
async fn exchange(
    sender: &mut Sender,
    request: axum::http::Request<http_body_util::Full<bytes::Bytes>>,
) -> anyhow::Result<u16> {
    use http_body_util::BodyExt;
    sender.ready().await?;
    let response = sender.send_request(request).await?;
    let status = response.status().as_u16();
    response.into_body().collect().await?;
    Ok(status)
}

/// Reads random values until `stop`; a 200 counts as accepted.
async fn read_values(
    http: reqwest::Client,
    base: String,
    reader: usize,
    resources: usize,
    stop: Arc<AtomicBool>,
) -> Tally {
    let mut rng = (reader as u64 + 101).wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    let mut tally = Tally::new();
    while !stop.load(Ordering::Relaxed) {
        let resource = resource_for(&mut rng, resources);
        let began = Instant::now();
        let outcome = http
            .get(format!("{base}/v1/resources/bench/{resource}"))
            .send()
            .await;
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

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum StorePath {
    OneTransactionPerWrite,
    GroupCommit,
}

/// The same writes through the store, no HTTP: one transaction each (the baseline), or through
/// the group commit the daemon uses.
async fn run_store(
    url: &str,
    options: &BenchOptions,
    path: StorePath,
) -> anyhow::Result<PathResult> {
    let store = Store::open(
        url,
        &StoreOptions {
            max_connections: options.connections.max(1) as u32,
            ..StoreOptions::default()
        },
    )
    .await
    .context("failed to open the baseline database")?;
    let write = |resource: usize, token: i64, client: usize| -> anyhow::Result<FencedWrite> {
        Ok(FencedWrite::new(
            ResourceKey::parse(format!("bench/{resource}")).map_err(|e| anyhow::anyhow!(e.0))?,
            FencingToken::new(token).map_err(|e| anyhow::anyhow!(e.0))?,
            format!("value from client {client}"),
        ))
    };
    for resource in 0..options.resources {
        store
            .apply_write(&write(resource, 1000, 0)?, LeasePolicy::default())
            .await?;
    }
    let commits = GroupCommit::start(
        store.clone(),
        LeasePolicy::default(),
        crate::store::DEFAULT_DB_TIMEOUT,
    );
    let stop = Arc::new(AtomicBool::new(false));
    let started = Instant::now();
    let mut tasks = Vec::new();
    for client in 0..options.connections {
        let store = store.clone();
        let commits = commits.clone();
        let stop = stop.clone();
        let options = options.clone();
        let writes: Vec<FencedWrite> = (0..options.resources)
            .flat_map(|r| [write(r, 1000, client), write(r, 999, client)])
            .collect::<Result<_, _>>()?;
        tasks.push(tokio::spawn(async move {
            let mut rng = (client as u64 + 7).wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
            let mut tally = Tally::new();
            while !stop.load(Ordering::Relaxed) {
                let resource = resource_for(&mut rng, options.resources);
                let (_, stale) = token_for(&mut rng, options.stale_fraction);
                let write = &writes[resource * 2 + usize::from(stale)];
                let began = Instant::now();
                let result = match path {
                    StorePath::OneTransactionPerWrite => {
                        store.apply_write(write, LeasePolicy::default()).await
                    }
                    StorePath::GroupCommit => commits.write(write.clone()).await,
                };
                match result {
                    Ok(result) => {
                        tally.record(began.elapsed(), result.entry.outcome.is_rejection())
                    }
                    Err(_) => tally.errors += 1,
                }
            }
            tally
        }));
    }
    let tallies = finish(tasks, &stop, options.duration).await?;
    drop(commits);
    store.close().await;
    Ok(summarise(
        match path {
            StorePath::OneTransactionPerWrite => "store, txn/write",
            StorePath::GroupCommit => "store, grouped",
        },
        options.connections,
        tallies,
        started.elapsed(),
    ))
}

/// What the dashboard's event path sustains.
#[derive(Debug, Clone, Serialize)]
pub struct DashboardReport {
    pub events: usize,
    pub seconds: f64,
    pub per_second: f64,
}

/// Feeds `events` write events, as the daemon frames them on `/v1/events`, through the
/// dashboard's own path (SSE decoding, JSON parsing, the model's update) on one thread, in
/// chunks as a socket would deliver them. Drawing is not included: frames are drawn on a
/// fixed interval, whatever the event rate.
pub async fn run_dashboard(events: usize) -> anyhow::Result<DashboardReport> {
    use crate::tui::model::{Model, Msg};
    use eventsource_stream::Eventsource;
    use futures_util::StreamExt;

    let mut wire = Vec::with_capacity(events * 420);
    for id in 1..=events {
        let outcome = if id % 20 == 0 { "stale" } else { "accepted" };
        let entry = serde_json::json!({
            "id": id, "at": "2026-11-30T07:00:00.000000Z", "resource": format!("bench/{}", id % 1000),
            "outcome": outcome, "token": 1000, "highest_token": 1000, "revision": id,
            "idempotency_key": null, "expected_revision": null, "owner": "worker-1",
            "lease": null, "body_sha256": "3f0a377ba0a4a460ecb616f6507ce0d8cfa3e704025d4fda3ed0c5ca05468728",
            "body_len": 20, "detail": null, "caller": null
        });
        wire.extend_from_slice(format!("event: write\nid: {id}\ndata: {entry}\n\n").as_bytes());
    }
    let chunks: Vec<Result<bytes::Bytes, std::io::Error>> = wire
        .chunks(16 * 1024)
        .map(|chunk| Ok(bytes::Bytes::copy_from_slice(chunk)))
        .collect();
    let mut model = Model::new();
    let started = Instant::now();
    let mut stream = futures_util::stream::iter(chunks).eventsource();
    let mut seen = 0;
    while let Some(event) = stream.next().await {
        let event = event.context("the bench's own stream did not decode")?;
        let parsed = crate::api::events::DaemonEvent::parse(&event.event, &event.data)?;
        model.update(Msg::Event(parsed));
        seen += 1;
    }
    let seconds = started.elapsed().as_secs_f64();
    anyhow::ensure!(seen == events, "decoded {seen} of {events} events");
    Ok(DashboardReport {
        events,
        seconds,
        per_second: events as f64 / seconds.max(f64::EPSILON),
    })
}

pub fn print(report: &BenchReport) {
    println!(
        "{:<16} {:>7} {:>9} {:>10} {:>8} {:>8} {:>9} {:>9} {:>8} {:>6}",
        "path",
        "clients",
        "requests",
        "per second",
        "p50 ms",
        "p99 ms",
        "p99.9 ms",
        "accepted",
        "rejected",
        "errors"
    );
    for result in report
        .http
        .iter()
        .chain(report.reads.iter())
        .chain(report.group_commit.iter())
        .chain(report.baseline.iter())
    {
        println!(
            "{:<16} {:>7} {:>9} {:>10.0} {:>8.2} {:>8.2} {:>9.2} {:>9} {:>8} {:>6}",
            result.path,
            result.clients,
            result.requests,
            result.per_second,
            result.p50_ms,
            result.p99_ms,
            result.p999_ms,
            result.accepted,
            result.rejected,
            result.errors
        );
    }
    if let Some(events) = &report.events {
        println!(
            "live streams: {} subscribers received {} events, {:.0}/s each, {} streams failed",
            events.subscribers, events.events, events.per_subscriber_per_second, events.errors
        );
    }
    if let Some(ratio) = report.ratio {
        println!("http / store one transaction per write: {ratio:.2}");
    }
    if let Some(peak) = report.daemon_peak_rss_mib {
        println!("daemon peak memory: {peak:.1} MiB");
    }
    if let Some(cpu) = &report.cpu {
        let daemon = cpu.daemon_us.map_or_else(
            || "unknown (not started by the bench)".to_owned(),
            |us| format!("{us:.1} µs"),
        );
        println!(
            "CPU per HTTP write: daemon {daemon}, load generator {:.1} µs",
            cpu.load_generator_us
        );
        if let Some(ceiling) = cpu.ceiling_per_second {
            println!(
                "CPU ceiling on {} cores: {ceiling:.0} writes/s, were both to use every core",
                cpu.cores
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cpu_time_is_read_after_the_command_name() {
        // A command name with spaces and a parenthesis of its own; utime 250, stime 130 ticks.
        let stat = "4242 (fence (watch) x) S 1 4242 4242 0 -1 4194560 900 0 0 0 250 130 0 0 \
                    20 0 9 0 12345 1000000 2000 18446744073709551615";
        assert_eq!(cpu_time_in(stat), Some(Duration::from_millis(3_800)));
        assert_eq!(cpu_time_in("4242 (cut short) S 1 2"), None);
        assert_eq!(cpu_time_in("no name at all"), None);
        // This process's own stat parses, and its count moves with the work it does: spinning
        // for 30 ms of CPU ends well within its deadline.
        let before = cpu_time(None).expect("/proc/self/stat");
        let deadline = Instant::now() + Duration::from_secs(20);
        while cpu_time(None).expect("/proc/self/stat") < before + Duration::from_millis(30) {
            assert!(Instant::now() < deadline, "CPU time did not advance");
        }
    }

    #[test]
    fn cpu_per_write_and_the_ceiling_it_sets() {
        let start = CpuMark {
            daemon: Some(Duration::from_millis(1_000)),
            load_generator: Some(Duration::from_millis(500)),
        };
        let end = CpuMark {
            daemon: Some(Duration::from_millis(2_000)),
            load_generator: Some(Duration::from_millis(750)),
        };
        let cpu = end.per_write_since(&start, 10_000).unwrap();
        assert_eq!(cpu.daemon_us, Some(100.0));
        assert_eq!(cpu.load_generator_us, 25.0);
        assert_eq!(cpu.ceiling_per_second, Some(cpu.cores as f64 * 1e6 / 125.0));
        // A daemon at --url: its CPU is unknown, and so is the ceiling.
        let remote = CpuMark {
            daemon: None,
            ..end
        };
        let cpu = remote.per_write_since(&start, 10_000).unwrap();
        assert_eq!((cpu.daemon_us, cpu.ceiling_per_second), (None, None));
        assert!(remote.per_write_since(&start, 0).is_none());
    }

    #[test]
    fn percentiles_and_the_stale_share() {
        let sorted: Vec<u32> = (1..=1000).collect();
        assert_eq!(percentile(&sorted, 0.5), 0.501);
        assert_eq!(percentile(&sorted, 0.99), 0.990);
        assert_eq!(percentile(&[], 0.99), 0.0);
        let mut rng = 42u64;
        let stale = (0..100_000).filter(|_| token_for(&mut rng, 0.05).1).count();
        assert!((4_000..6_000).contains(&stale), "{stale}");
    }
}
