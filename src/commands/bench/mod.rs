//! `fencewatch bench`: fenced writes over HTTP with keep-alive connections against a daemon it
//! starts (or one at `--url`), and in the same run the same writes straight through the store
//! without HTTP, so the two can be compared side by side. `--dashboard` measures the
//! dashboard's event path instead.

mod baseline;
mod connection;
mod cpu;
mod dashboard;
mod etcd;
mod fill;
mod load;
mod pgbench;
mod report;
mod tally;
mod witness;
mod zookeeper;

pub use cpu::CpuPerWrite;
pub use dashboard::{run_dashboard, DashboardReport};
pub use fill::{FillReport, FillSpec};
/// Also how `demo --authority etcd|zookeeper` starts its daemon.
pub(crate) use load::start_daemon;
pub use report::print;
pub use witness::WitnessPath;

use crate::cli::BenchArgs;
use anyhow::Context;
use baseline::{run_store, StorePath};
use serde::Serialize;
use std::process::ExitCode;
use std::time::Duration;

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
    /// etcd endpoints: also run the writers naming an etcd lock (`bench --etcd`).
    pub etcd: Option<String>,
    /// ZooKeeper servers: also run the writers naming a ZooKeeper lock (`bench --zookeeper`).
    pub zookeeper: Option<String>,
    /// Also run the writers against a daemon signing checkpoints this often
    /// (`bench --witness-interval`).
    pub witness_interval: Option<Duration>,
    /// Fill the daemon's database with audit rows first (`bench --fill`).
    pub fill: Option<FillSpec>,
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

#[derive(Debug, Clone, Default, Serialize)]
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
    /// PostgreSQL's own ceiling for the workload (`--database postgres://…`): `pgbench` sending
    /// each fenced write and its audit row as one autocommit statement.
    pub pgbench: Option<PathResult>,
    /// HTTP throughput over pgbench's.
    pub pgbench_ratio: Option<f64>,
    /// The daemon's peak resident memory, when it was started by the bench.
    pub daemon_peak_rss_mib: Option<f64>,
    /// CPU time (user and system) per HTTP write while the writers ran: the daemon's, when it
    /// was started by the bench, and this process's (the load generator, with any readers and
    /// streams), which shares the machine with it.
    pub cpu: Option<CpuPerWrite>,
    /// The same HTTP load with every write naming an etcd lock (`--etcd`), run after the plain
    /// fence's in the same invocation, so that the two compare on a machine whose speed varies.
    pub etcd: Option<EtcdPath>,
    /// The same with every write naming a ZooKeeper lock (`--zookeeper`).
    pub zookeeper: Option<EtcdPath>,
    /// The same against a daemon signing audit checkpoints (`--witness-interval`), run right
    /// after the plain fence's.
    pub witness: Option<WitnessPath>,
    /// What `--fill` wrote before the load.
    pub fill: Option<FillReport>,
}

/// The HTTP path with writes naming an external lock (etcd's or ZooKeeper's).
#[derive(Debug, Clone, Serialize)]
pub struct EtcdPath {
    /// `etcd:PREFIX` or `zk:/PATH`, as the writers named it.
    pub lease: String,
    /// The holder's key and its generation (create revision, czxid), the writers' token.
    pub holder_key: String,
    pub token: i64,
    pub writes: PathResult,
    pub daemon_peak_rss_mib: Option<f64>,
    pub cpu: Option<CpuPerWrite>,
}

/// The `bench` command: runs what its arguments ask for and prints the report.
pub async fn run_command(args: BenchArgs) -> anyhow::Result<ExitCode> {
    if let Some(events) = args.dashboard {
        let report = run_dashboard(events.max(1)).await?;
        if args.json {
            super::print_line(&serde_json::to_string(&report)?)?;
        } else {
            report::print_dashboard(&report);
        }
        return Ok(ExitCode::SUCCESS);
    }
    let resources = args.resources.max(1);
    let fill = args.fill.map(|rows| FillSpec {
        rows,
        resources: args
            .fill_resources
            .and_then(|r| usize::try_from(r).ok())
            .unwrap_or(resources),
        span: args.fill_span,
        stale_fraction: args.stale.clamp(0.0, 1.0),
        clients: args.connections.max(1),
    });
    if fill.is_some() && args.url.is_some() && args.database.is_none() {
        anyhow::bail!("--fill writes to a database: with --url, name it with --database");
    }
    let only_fill = fill.is_some() && args.duration.is_zero();
    let report = run(BenchOptions {
        url: args.url,
        ca_cert: args.ca_cert,
        database: args.database,
        connections: args.connections.max(1),
        resources,
        stale_fraction: args.stale.clamp(0.0, 1.0),
        idempotency_keys: args.idempotency_keys,
        duration: args.duration,
        baseline: !args.no_baseline,
        http: !args.no_http,
        json: args.json,
        readers: args.readers,
        subscribers: args.subscribers,
        etcd: args.etcd,
        zookeeper: args.zookeeper,
        witness_interval: args.witness_interval,
        fill,
    })
    .await?;
    if let (true, Some(filled)) = (only_fill, &report.fill) {
        if args.json {
            super::print_line(&serde_json::to_string(filled)?)?;
        } else {
            report::print_fill(filled);
        }
        return Ok(ExitCode::SUCCESS);
    }
    if args.json {
        super::print_line(&serde_json::to_string(&report)?)?;
    } else {
        print(&report);
    }
    Ok(ExitCode::SUCCESS)
}

pub async fn run(options: BenchOptions) -> anyhow::Result<BenchReport> {
    let folder = tempfile::tempdir().context("failed to create a temporary folder")?;
    let fill = match &options.fill {
        Some(spec) => {
            // The database the plain fence's daemon runs on, before it starts.
            let url = options.database.clone().unwrap_or_else(|| {
                let file = load::Fence::plain().database_file;
                format!("sqlite://{}", folder.path().join(file).display())
            });
            Some(fill::fill(&url, spec).await?)
        }
        None => None,
    };
    if fill.is_some() && options.duration.is_zero() {
        return Ok(BenchReport {
            fill,
            ..BenchReport::default()
        });
    }
    let (http, peak) = if options.http {
        let fence = load::Fence::plain();
        let (http, peak) = load::run_daemon_and_http(&options, folder.path(), &fence).await?;
        (Some(http), peak)
    } else {
        (None, None)
    };
    let witness = match options.witness_interval {
        Some(interval) if options.http => {
            Some(witness::run(&options, folder.path(), interval).await?)
        }
        _ => None,
    };
    let etcd = match &options.etcd {
        Some(endpoints) if options.http => {
            Some(run_etcd(&options, folder.path(), endpoints).await?)
        }
        _ => None,
    };
    let zookeeper = match &options.zookeeper {
        Some(hosts) if options.http => {
            let held = zookeeper::lock(hosts).await?;
            let fence = load::Fence {
                namespace: zookeeper::NAMESPACE.to_owned(),
                token: held.token,
                lease: Some(format!("zk:{}", zookeeper::PATH)),
                serve_args: vec!["--zookeeper".to_owned(), hosts.clone()],
                database_file: "bench-zookeeper.db",
                path: "http zk",
            };
            let run = load::run_daemon_and_http(&options, folder.path(), &fence).await;
            let (holder_key, token) = (held.node.clone(), held.token);
            held.release().await;
            let (run, peak) = run?;
            Some(EtcdPath {
                lease: format!("zk:{}", zookeeper::PATH),
                holder_key,
                token,
                writes: run.writes,
                daemon_peak_rss_mib: peak,
                cpu: run.cpu,
            })
        }
        _ => None,
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
    let (baseline, group_commit, pgbench) = match baseline {
        Some(url) => (
            Some(run_store(&url, &options, StorePath::OneTransactionPerWrite).await?),
            Some(run_store(&url, &options, StorePath::GroupCommit).await?),
            match url.starts_with("postgres") {
                true => Some(pgbench::run(&url, &options, folder.path()).await?),
                false => None,
            },
        ),
        None => (None, None, None),
    };
    let ratio = http
        .as_ref()
        .zip(baseline.as_ref())
        .map(|(h, b)| h.per_second / b.per_second.max(f64::EPSILON));
    let pgbench_ratio = http
        .as_ref()
        .zip(pgbench.as_ref())
        .map(|(h, p)| h.per_second / p.per_second.max(f64::EPSILON));
    Ok(BenchReport {
        http,
        reads,
        events,
        baseline,
        group_commit,
        ratio,
        pgbench,
        pgbench_ratio,
        daemon_peak_rss_mib: peak,
        cpu,
        etcd,
        zookeeper,
        witness,
        fill,
    })
}

/// The HTTP path again, each write naming a lock the bench holds in etcd, against a daemon of
/// its own started with `--etcd`.
async fn run_etcd(
    options: &BenchOptions,
    folder: &std::path::Path,
    endpoints: &str,
) -> anyhow::Result<EtcdPath> {
    let held = etcd::lock(endpoints, options.duration).await?;
    let lease = format!("etcd:{}", etcd::PREFIX);
    let fence = load::Fence {
        namespace: etcd::PREFIX.to_owned(),
        token: held.token,
        lease: Some(lease.clone()),
        serve_args: vec!["--etcd".to_owned(), endpoints.to_owned()],
        database_file: "bench-etcd.db",
        path: "http etcd",
    };
    let run = load::run_daemon_and_http(options, folder, &fence).await;
    let (holder_key, token) = (held.key.clone(), held.token);
    held.release().await;
    let (run, peak) = run?;
    Ok(EtcdPath {
        lease,
        holder_key,
        token,
        writes: run.writes,
        daemon_peak_rss_mib: peak,
        cpu: run.cpu,
    })
}

/// A client's random picks, seeded by its number so that runs look alike.
struct Picks(fastrand::Rng);

impl Picks {
    fn seeded(seed: u64) -> Self {
        Self(fastrand::Rng::with_seed(seed))
    }

    fn resource(&mut self, resources: usize) -> usize {
        self.0.usize(..resources.max(1))
    }

    /// The token a client sends: the resource's generation, or one below it for the stale
    /// share. True when stale.
    fn token(&mut self, stale_fraction: f64) -> (i64, bool) {
        if self.0.f64() < stale_fraction {
            (999, true)
        } else {
            (1000, false)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percentiles_and_the_stale_share() {
        let mut tally = tally::Tally::new().unwrap();
        for micros in 1..=1000 {
            tally.record(Duration::from_micros(micros), micros % 10 == 0);
        }
        let result = tally::summarise("p", 1, vec![tally], Duration::from_secs(1)).unwrap();
        assert_eq!(
            (result.p50_ms, result.p99_ms, result.p999_ms),
            (0.5, 0.99, 0.999)
        );
        assert_eq!(
            (result.requests, result.accepted, result.rejected),
            (1000, 900, 100)
        );
        // Latencies past the histogram's first range, in two clients' tallies added up.
        let (mut fast, mut slow) = (tally::Tally::new().unwrap(), tally::Tally::new().unwrap());
        fast.record(Duration::from_millis(5), false);
        slow.record(Duration::from_secs(2), false);
        let result = tally::summarise("p", 2, vec![fast, slow], Duration::from_secs(1)).unwrap();
        assert!((4.99..=5.01).contains(&result.p50_ms), "{}", result.p50_ms);
        assert!(
            (1999.0..=2001.0).contains(&result.p99_ms),
            "{}",
            result.p99_ms
        );
        let empty = tally::summarise("p", 1, Vec::new(), Duration::from_secs(1)).unwrap();
        assert_eq!((empty.requests, empty.p99_ms), (0, 0.0));

        let mut picks = Picks::seeded(42);
        let stale = (0..100_000).filter(|_| picks.token(0.05).1).count();
        assert!((4_000..6_000).contains(&stale), "{stale}");
        assert!((0..1_000).all(|_| picks.resource(7) < 7));
        assert_eq!(picks.resource(0), 0);
        // The same seed, the same picks.
        let (mut a, mut b) = (Picks::seeded(9), Picks::seeded(9));
        assert!((0..100).all(|_| a.resource(1000) == b.resource(1000)));
    }
}
