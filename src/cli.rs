//! The command line.

use clap::{Args, Parser, Subcommand, ValueEnum};
use std::path::PathBuf;
use std::time::Duration;

mod audit;
mod bench;
pub mod exit_codes;
mod fence;
pub use fence::{FenceArgs, FenceCommand, FenceTarget, FENCE_EXIT_CODES_HELP};
mod serve;

pub use audit::AuditCommand;
pub use bench::BenchArgs;
pub use serve::{LeaseScopeArg, ServeArgs};

#[derive(Debug, Parser)]
#[command(
    name = "fencewatch",
    version,
    about = "Fencing tokens with an audit of every write: a daemon, a lease authority and a dashboard"
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,

    /// How logs on stderr look: plain text (coloured only on a terminal) or one JSON object a
    /// line, for a log collector.
    #[arg(
        long,
        global = true,
        value_enum,
        env = "FENCEWATCH_LOG_FORMAT",
        default_value_t = LogFormat::Text
    )]
    pub log_format: LogFormat,
}

impl Cli {
    /// The command line as it is parsed, shown (`--help`), completed and documented. No
    /// argument shows the value of its environment variable: it may be a password (a database
    /// URL) or an API key. Applied here to every argument, so that a new one cannot forget it.
    pub fn command_without_secrets() -> clap::Command {
        hide_env_values(<Self as clap::CommandFactory>::command())
    }

    /// Parses this process's arguments with `command_without_secrets`; a bad command line (or
    /// `--help`) exits with clap's message.
    pub fn parse_without_secrets() -> Self {
        let matches = Self::command_without_secrets().get_matches();
        <Self as clap::FromArgMatches>::from_arg_matches(&matches).unwrap_or_else(|e| e.exit())
    }
}

fn hide_env_values(command: clap::Command) -> clap::Command {
    command
        .mut_args(|arg| arg.hide_env_values(true))
        .mut_subcommands(hide_env_values)
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum LogFormat {
    Text,
    Json,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Run the daemon: fenced writes, the lease authority and the audit over HTTP.
    Serve(Box<ServeArgs>),
    /// Acquire, renew, release or show a lease of a running daemon's authority.
    Lease(LeaseArgs),
    /// The live dashboard of a running daemon.
    Tui(TuiArgs),
    /// The whole thing in one command: a daemon on a temporary SQLite file, simulated workers
    /// whose pauses outlive their leases, and the dashboard.
    Demo(DemoArgs),
    /// Reconstruct incidents, check tamper evidence, prune and export the audit, straight from
    /// the database (the daemon may be down).
    Audit(AuditArgs),
    /// Measure fenced writes over HTTP, side by side with the same writes straight through the
    /// store.
    Bench(BenchArgs),
    /// Write stdin as a resource's value, fenced by a token.
    #[command(after_help = exit_codes::help())]
    Write(WriteArgs),
    /// Hold an etcd or ZooKeeper lock while a command runs (like `etcdctl lock`): the command
    /// gets FENCEWATCH_TOKEN and FENCEWATCH_LEASE, so `fencewatch write` in it needs no flags.
    Lock(LockArgs),
    /// Fence your own database: install, protect tables, status, seal, uninstall (PostgreSQL or
    /// SQLite).
    Fence(FenceArgs),
    /// Print a shell completion script (e.g. `fencewatch completions bash > /etc/bash_completion.d/fencewatch`).
    Completions {
        #[arg(value_enum)]
        shell: clap_complete::Shell,
    },
    /// Print the manual page (roff), e.g. `fencewatch man | man -l -`; with `--dir DIR`, write
    /// it and one page per subcommand (`fencewatch-serve.1`, …) into DIR instead.
    Man {
        #[arg(long, value_name = "DIR")]
        dir: Option<std::path::PathBuf>,
    },
}

#[derive(Debug, Clone, Args)]
pub struct LockArgs {
    /// The lock: `etcd:PREFIX` or `zk:/PATH`, as writes name it in `Fencing-Lease`.
    pub lock: String,
    /// etcd endpoints (comma-separated `http://HOST:PORT`), for an `etcd:` lock.
    #[arg(long, env = "FENCEWATCH_ETCD", default_value = "http://127.0.0.1:2379")]
    pub etcd: String,
    /// ZooKeeper servers (comma-separated `HOST:PORT`), for a `zk:` lock.
    #[arg(long, env = "FENCEWATCH_ZOOKEEPER", default_value = "127.0.0.1:2181")]
    pub zookeeper: String,
    /// How long the lock outlives this process if it stops renewing (etcd lease TTL, ZooKeeper
    /// session timeout).
    #[arg(long, value_parser = humantime::parse_duration, default_value = "10s")]
    pub ttl: Duration,
    /// How long to wait for the lock before giving up (exit 6).
    #[arg(long, value_parser = humantime::parse_duration, default_value = "1h")]
    pub wait: Duration,
    /// The holder's name, kept in the ZooKeeper lock node (shown as who held the lock).
    #[arg(long, env = "FENCEWATCH_OWNER")]
    pub name: Option<String>,
    /// The command to run while holding the lock; its exit code is this command's.
    #[arg(last = true, required = true, value_name = "CMD")]
    pub command: Vec<String>,
}

/// Where a client command finds the daemon, and what it presents there (`--url`, `--api-key`,
/// `--ca-cert`).
#[derive(Debug, Clone, Args)]
pub struct DaemonArgs {
    /// The daemon's base URL.
    #[arg(
        long,
        env = "FENCEWATCH_URL",
        default_value = "http://127.0.0.1:7420",
        global = true
    )]
    pub url: String,

    /// API key, sent as `Authorization: Bearer KEY`.
    #[arg(
        long,
        env = "FENCEWATCH_API_KEY",
        global = true,
        hide_env_values = true
    )]
    pub api_key: Option<String>,

    /// Trust only this PEM CA certificate for an https:// daemon (a private CA); without it,
    /// the system's trusted roots.
    #[arg(long, env = "FENCEWATCH_CA_CERT", global = true)]
    pub ca_cert: Option<PathBuf>,
}

#[derive(Debug, Clone, Args)]
#[command(after_help = exit_codes::help())]
pub struct LeaseArgs {
    #[command(subcommand)]
    pub action: LeaseAction,
    #[command(flatten)]
    pub connection: DaemonArgs,
}

#[derive(Debug, Clone, Subcommand)]
pub enum LeaseAction {
    /// Take the lease: prints it with its new generation (the fencing token).
    Acquire {
        name: String,
        #[arg(long)]
        holder: String,
        /// How long the grant lasts (e.g. 10s, 1500ms).
        #[arg(long, value_parser = humantime::parse_duration)]
        ttl: Duration,
        /// Print only the token, for scripts.
        #[arg(long)]
        token_only: bool,
    },
    /// Extend the current grant.
    Renew {
        name: String,
        #[arg(long)]
        holder: String,
        #[arg(long)]
        token: i64,
        /// A new TTL (default: the one given at acquire).
        #[arg(long, value_parser = humantime::parse_duration)]
        ttl: Option<Duration>,
    },
    /// End the current grant early.
    Release {
        name: String,
        #[arg(long)]
        holder: String,
        #[arg(long)]
        token: i64,
    },
    /// Show the lease's holder, generation and expiry.
    Show { name: String },
}

#[derive(Debug, Clone, Args)]
pub struct WriteArgs {
    /// The resource key (for example accounts/totals).
    pub key: String,
    /// The writer's fencing token (inside `fencewatch lock`, the lock's: FENCEWATCH_TOKEN).
    #[arg(long, env = "FENCEWATCH_TOKEN")]
    pub token: String,
    /// The operation's identity, for safe retries.
    #[arg(long)]
    pub idempotency_key: Option<String>,
    /// The revision the write expects (0: never written).
    #[arg(long)]
    pub if_match: Option<i64>,
    /// The lease of the daemon's authority that issued the token, or an external lock
    /// (`etcd:PREFIX`, `zk:/PATH`; inside `fencewatch lock`: FENCEWATCH_LEASE).
    #[arg(long, env = "FENCEWATCH_LEASE")]
    pub lease: Option<String>,
    /// A label for the audit.
    #[arg(long, env = "FENCEWATCH_OWNER")]
    pub owner: Option<String>,
    /// The value's media type.
    #[arg(long)]
    pub content_type: Option<String>,
    #[command(flatten)]
    pub connection: DaemonArgs,
}

#[derive(Debug, Clone, Args)]
#[command(
    after_help = "Keys: Tab or 1-4 switch views, Enter opens a timeline, Esc goes back, / filters, s sorts, p pauses, + and - zoom, ? shows all keys, q quits."
)]
pub struct TuiArgs {
    #[command(flatten)]
    pub connection: DaemonArgs,
    /// No colours (also when NO_COLOR is set).
    #[arg(long)]
    pub no_color: bool,
    /// Print the current overview once and exit (with --json).
    #[arg(long)]
    pub once: bool,
    /// With --once: the overview as JSON.
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Clone, Args)]
pub struct DemoArgs {
    /// Use this database instead of a temporary SQLite file.
    #[arg(long)]
    pub database: Option<String>,
    /// Simulated workers.
    #[arg(long, default_value_t = 4)]
    pub workers: usize,
    /// Resources they hold (at most one fewer than workers: one stands by).
    #[arg(long, default_value_t = 3)]
    pub resources: usize,
    /// Time between incidents (a worker stalling past its lease).
    #[arg(long, value_parser = humantime::parse_duration, default_value = "12s")]
    pub every: Duration,
    /// Run without the dashboard, for --duration.
    #[arg(long)]
    pub headless: bool,
    /// How long a headless run lasts (e.g. 10s).
    #[arg(long, value_parser = humantime::parse_duration, default_value = "10s")]
    pub duration: Duration,
    /// The summary at the end as JSON.
    #[arg(long)]
    pub json: bool,
    /// No colours in the dashboard (also when NO_COLOR is set).
    #[arg(long)]
    pub no_color: bool,
    /// Whose locks the workers take: the daemon's own leases, etcd's (an `etcd` program on the
    /// PATH) or ZooKeeper's (Debian's zookeeper package and `java`), each started on free
    /// ports in a temporary folder and stopped at the end.
    #[arg(long, value_enum, default_value_t = DemoAuthority::Daemon)]
    pub authority: DemoAuthority,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum DemoAuthority {
    /// Leases of the demo's daemon.
    Daemon,
    /// etcd locks (`Fencing-Lease: etcd:RESOURCE`).
    Etcd,
    /// ZooKeeper locks (`Fencing-Lease: zk:/RESOURCE`).
    #[value(name = "zookeeper")]
    ZooKeeper,
}

#[derive(Debug, Clone, Args)]
pub struct AuditArgs {
    /// `sqlite://PATH` or `postgres://…`: the daemon's database, or one with a fence installed.
    #[arg(
        long,
        env = "FENCEWATCH_DATABASE_URL",
        default_value = "sqlite://fencewatch.db",
        global = true
    )]
    pub database: String,
    /// Read the fence installed in the database (`fencewatch fence install`) even where the
    /// daemon's tables are there too. Without it, a database with a fence and no daemon
    /// tables is read as a fence, and one with both as the daemon's.
    #[arg(long, global = true)]
    pub fence: bool,
    /// PostgreSQL: the schema of the daemon's tables (`serve --schema`) or of the fence
    /// (default: the connection's search path for the daemon's, `fencewatch` for a fence).
    #[arg(long, env = "FENCEWATCH_SCHEMA", global = true, value_name = "NAME")]
    pub schema: Option<String>,
    #[command(subcommand)]
    pub command: AuditCommand,
}

/// Which audit rows; times are RFC 3339 or a duration ago (`1h`).
#[derive(Debug, Clone, Args, Default)]
pub struct AuditFilterArgs {
    #[arg(long)]
    pub resource: Option<String>,
    #[arg(long)]
    pub owner: Option<String>,
    /// accepted, replayed, stale, superseded, lease_expired, revision_conflict, reset, …
    #[arg(long)]
    pub outcome: Option<String>,
    #[arg(long)]
    pub token: Option<i64>,
    #[arg(long)]
    pub since: Option<String>,
    #[arg(long)]
    pub until: Option<String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ExportFormat {
    Jsonl,
    Csv,
}

/// How `audit report` prints an incident.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ReportFormat {
    Text,
    /// Markdown, to paste into a postmortem.
    Md,
    Json,
    /// A self-contained page with an SVG timeline.
    Html,
}

#[cfg(test)]
mod tests;
