//! `fencewatch bench`: the measuring harness's flags.

use clap::Args;
use std::path::PathBuf;
use std::time::Duration;

#[derive(Debug, Clone, Args)]
pub struct BenchArgs {
    /// Drive this daemon instead of starting one.
    #[arg(long)]
    pub url: Option<String>,
    /// Trust only this PEM CA certificate for an https:// --url.
    #[arg(long, env = "FENCEWATCH_CA_CERT")]
    pub ca_cert: Option<PathBuf>,
    /// The database of the daemon it starts (default: a temporary SQLite file).
    #[arg(long)]
    pub database: Option<String>,
    /// Concurrent keep-alive connections (and store clients for the baseline).
    #[arg(long, default_value_t = 32)]
    pub connections: usize,
    #[arg(long, default_value_t = 1000)]
    pub resources: usize,
    /// The share of writes that carry a superseded generation.
    #[arg(long, default_value_t = 0.05)]
    pub stale: f64,
    /// Send a fresh Idempotency-Key with every write.
    #[arg(long)]
    pub idempotency_keys: bool,
    #[arg(long, value_parser = humantime::parse_duration, default_value = "10s")]
    pub duration: Duration,
    /// Skip the store-only paths.
    #[arg(long)]
    pub no_baseline: bool,
    /// Instead of writes, measure the dashboard's event path with this many write events.
    #[arg(long, value_name = "EVENTS")]
    pub dashboard: Option<usize>,
    /// Skip the HTTP path (to profile the store alone).
    #[arg(long, conflicts_with = "no_baseline")]
    pub no_http: bool,
    /// Clients reading values over HTTP while the writers run.
    #[arg(long, default_value_t = 0)]
    pub readers: usize,
    /// Live event streams (`/v1/events`) followed while the writers run.
    #[arg(long, default_value_t = 0)]
    pub subscribers: usize,
    /// Also run the same HTTP load with every write naming an etcd lock (`Fencing-Lease:
    /// etcd:bench-etcd`, the lock taken here with etcd's lock API) against a daemon started
    /// with `--etcd URL`, reported beside the plain fence.
    #[arg(long, value_name = "URL", conflicts_with = "no_http")]
    pub etcd: Option<String>,
    /// Also run the same HTTP load with every write naming a ZooKeeper lock (`Fencing-Lease:
    /// zk:/bench-zookeeper`, the lock taken here with ZooKeeper's lock recipe) against a daemon
    /// started with `--zookeeper HOSTS`, reported beside the plain fence.
    #[arg(long, value_name = "HOST:PORT", conflicts_with = "no_http")]
    pub zookeeper: Option<String>,
    /// Also run the same HTTP load against a daemon that signs audit checkpoints every
    /// DURATION (`serve --audit-signing-key` with a key made for the run, in a temporary folder,
    /// and --witness-file there), reported beside the plain fence with the checkpoints signed.
    #[arg(long, value_name = "DURATION", value_parser = witness_interval,
          conflicts_with_all = ["url", "no_http"])]
    pub witness_interval: Option<Duration>,
    /// Before any load, fill the database of the daemon it starts (or --database) with this
    /// many audit rows, as its writers would have left them over --fill-span; with
    /// --duration 0s it only fills.
    #[arg(long, value_name = "ROWS", value_parser = clap::value_parser!(u64).range(1..))]
    pub fill: Option<u64>,
    /// The resources the filled rows are spread over (default: --resources).
    #[arg(long, value_name = "R", requires = "fill",
          value_parser = clap::value_parser!(u64).range(1..))]
    pub fill_resources: Option<u64>,
    /// The time the filled rows are spread over, ending now.
    #[arg(long, value_name = "DURATION", requires = "fill", value_parser = fill_span,
          default_value = "30d")]
    pub fill_span: Duration,
    #[arg(long)]
    pub json: bool,
}

/// An interval longer than nothing, as `serve --witness-interval` takes.
fn witness_interval(text: &str) -> Result<Duration, String> {
    match humantime::parse_duration(text) {
        Ok(interval) if interval.is_zero() => Err("must be longer than 0s".to_owned()),
        Ok(interval) => Ok(interval),
        Err(error) => Err(error.to_string()),
    }
}

/// A span longer than nothing: rows spread over no time would all have one timestamp.
fn fill_span(text: &str) -> Result<Duration, String> {
    match humantime::parse_duration(text) {
        Ok(span) if span.is_zero() => Err("the span must be longer than 0s".to_owned()),
        Ok(span) => Ok(span),
        Err(error) => Err(error.to_string()),
    }
}
