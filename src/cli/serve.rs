//! `fencewatch serve`: the daemon's flags.

use clap::{Args, ValueEnum};
use std::path::PathBuf;
use std::time::Duration;

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum LeaseScopeArg {
    /// A lease's tokens may fence any resource.
    Any,
    /// Lease L's tokens may fence only resources L and L/….
    Prefix,
}

#[derive(Debug, Clone, Args)]
pub struct ServeArgs {
    /// Address to listen on; port 0 picks a free port (printed on the first line of stdout).
    #[arg(long, env = "FENCEWATCH_LISTEN", default_value = "127.0.0.1:7420")]
    pub listen: String,

    /// `sqlite://PATH` (created on first start) or `postgres://USER@HOST/DB`.
    #[arg(
        long,
        env = "FENCEWATCH_DATABASE_URL",
        default_value = "sqlite://fencewatch.db"
    )]
    pub database: String,

    /// PostgreSQL: keep the daemon's tables in this schema, created if missing, instead of the
    /// connection's first (`public`); every daemon sharing the fence gives the same one.
    #[arg(long, env = "FENCEWATCH_SCHEMA", value_name = "NAME")]
    pub schema: Option<crate::store::PgSchema>,

    /// The largest value a write may carry, in bytes.
    #[arg(long, default_value_t = 1024 * 1024)]
    pub max_value_bytes: usize,

    /// How long an accepted operation's result is kept for replay by its Idempotency-Key
    /// (e.g. 24h, 90m; default 24h). A retry after that is decided afresh; see the README. A
    /// setting of the database: the first daemon on it stores it, later ones keep to the stored
    /// value (see --set-retention).
    #[arg(long, value_parser = humantime::parse_duration)]
    pub idempotency_retention: Option<Duration>,

    /// Store this daemon's --idempotency-retention and --audit-retention as the database's,
    /// replacing what is stored (a flag left out stores its default: 24h, keep everything);
    /// every daemon on the database keeps to them from its next prune.
    #[arg(long)]
    pub set_retention: bool,

    /// PostgreSQL connections per daemon.
    #[arg(long, default_value_t = 16)]
    pub db_max_connections: u32,

    /// Refuse writes with a lease's current generation once its grant has expired or been
    /// released (409 lease-expired), instead of accepting and flagging them in the audit.
    #[arg(long)]
    pub strict_leases: bool,

    /// etcd endpoints (comma-separated `http://HOST:PORT`): writes may then name an etcd lock
    /// as their authority (`Fencing-Lease: etcd:PREFIX`, the lock's create revision as the
    /// token), checked against etcd within --db-timeout.
    #[arg(long, env = "FENCEWATCH_ETCD", value_delimiter = ',')]
    pub etcd: Vec<String>,

    /// ZooKeeper servers (comma-separated `HOST:PORT`): writes may then name a ZooKeeper lock
    /// as their authority (`Fencing-Lease: zk:/PATH`, the czxid of the caller's lock node as
    /// the token), checked against ZooKeeper (after a `sync`) within --db-timeout.
    #[arg(long, env = "FENCEWATCH_ZOOKEEPER", value_delimiter = ',')]
    pub zookeeper: Vec<String>,

    /// Refuse every write that does not name a lease of this daemon's authority
    /// (403 unknown-generation), so that no caller can present a token it made up.
    #[arg(long)]
    pub require_lease: bool,

    /// Which resources a lease's tokens may fence.
    #[arg(long, value_enum, default_value_t = LeaseScopeArg::Any)]
    pub lease_scope: LeaseScopeArg,

    /// Configuration file (TOML): alert rules and receivers; see assets/fencewatch.example.toml.
    #[arg(long, env = "FENCEWATCH_CONFIG")]
    pub config: Option<PathBuf>,

    /// Delete audit rows older than this (e.g. 90d), keeping a checkpoint so that what remains
    /// still verifies. Default: keep everything. A setting of the database, like
    /// --idempotency-retention.
    #[arg(long, value_parser = humantime::parse_duration)]
    pub audit_retention: Option<Duration>,

    /// Sign a checkpoint of the audit (every chain's start and head) with this Ed25519 key
    /// (`audit keygen`) each --witness-interval the audit changed, kept in the database and in
    /// --witness-file; prunes sign the chain starts they move (docs/guarantees.md).
    #[arg(long, value_name = "FILE", env = "FENCEWATCH_AUDIT_SIGNING_KEY")]
    pub audit_signing_key: Option<PathBuf>,

    /// Also append each signed checkpoint to this file, one JSON line each: keep it (or ship
    /// it) where the database's administrators cannot rewrite it.
    #[arg(long, value_name = "PATH", requires = "audit_signing_key")]
    pub witness_file: Option<PathBuf>,

    /// How often a checkpoint is taken: the rows written since the last one are verified, then
    /// signed, beside the write path.
    #[arg(long, value_parser = positive_duration, default_value = "10s")]
    pub witness_interval: Duration,

    /// Live event subscribers (`/v1/events`) at once; more get 503 until one leaves. At most
    /// half of --max-connections (a higher value is lowered to it, with a warning): subscribers
    /// are never cut to make room, so they must not be able to hold every connection.
    #[arg(long, default_value_t = 256)]
    pub max_subscribers: usize,

    /// Connections served at once; more wait to be accepted until one closes.
    #[arg(long, default_value_t = 1024)]
    pub max_connections: usize,

    /// A client that takes longer to send a request's headers, or leaves a kept-alive
    /// connection idle this long, is disconnected.
    #[arg(long, default_value = "10s", value_parser = humantime::parse_duration)]
    pub header_timeout: Duration,

    /// A request whose body has not arrived this long after its headers is answered 408 and
    /// its connection closed (a write's attempt is audited). Every request with a body.
    #[arg(
        long,
        alias = "body-timeout",
        default_value = "10s",
        value_parser = humantime::parse_duration
    )]
    pub body_read_timeout: Duration,

    /// A request that waits longer than this for the database is answered 503, and a
    /// PostgreSQL batch still waiting is abandoned with its connection: for a network or server
    /// that stops answering without closing anything. A write's outcome is then unknown until
    /// it is retried with the same Idempotency-Key. PostgreSQL ends any of the daemon's sessions
    /// left inside a transaction this long without a statement, releasing its locks.
    #[arg(long, default_value = "10s", value_parser = humantime::parse_duration)]
    pub db_timeout: Duration,

    /// An ownership overlap closes after this long without a rejected write (e.g. 60s).
    #[arg(long, default_value = "60s", value_parser = humantime::parse_duration)]
    pub overlap_quiet: Duration,

    /// Follow the fence audit of a database of your own (`fencewatch fence install`):
    /// `postgres://…` or `sqlite://PATH`, optionally `NAME=URL`; repeatable. Its rows, overlaps,
    /// metrics and alerts appear here with `source` NAME (default: the database's name or the
    /// file's stem). See docs/own-database.md, "Watching".
    #[arg(long = "watch", value_name = "[NAME=]URL")]
    pub watch: Vec<String>,

    /// Require `Authorization: Bearer KEY` on every /v1 request. One key per line: `KEY` or
    /// `NAME:KEY` (the name is recorded in the audit as the caller), optionally followed by
    /// scopes: read, write[=PREFIX], lease[=PREFIX], admin. A PREFIX covers whole path
    /// segments: `billing` covers `billing` and `billing/…`, `billing/` what is under it,
    /// neither covers `billingsecrets` or `billing2/…`. A write naming `Fencing-Lease: NAME`
    /// also needs a lease scope covering NAME (`lease=etcd:PREFIX` for etcd locks). A line
    /// without scopes may do everything. Each key at least 16 characters and on one line only
    /// (`openssl rand -hex 32`); a shorter, repeated or placeholder key stops the daemon at start.
    #[arg(long, env = "FENCEWATCH_API_KEY_FILE")]
    pub api_key_file: Option<PathBuf>,

    /// A web origin whose pages may call the daemon (e.g. https://ops.example.com); repeatable.
    /// Any other request carrying an Origin header is refused with 403 cross-origin.
    #[arg(long = "allow-origin", value_name = "ORIGIN")]
    pub allow_origins: Vec<String>,

    /// A host name clients may reach the daemon by (e.g. fencewatch.internal); repeatable, `*`
    /// for any. `localhost`, the --listen host and IP literals always are; a request whose Host
    /// names another gets 421 (DNS rebinding).
    #[arg(long = "allowed-host", value_name = "HOST")]
    pub allowed_hosts: Vec<String>,

    /// Serve HTTPS only, with this PEM certificate chain (needs --tls-key).
    #[arg(long, env = "FENCEWATCH_TLS_CERT", requires = "tls_key")]
    pub tls_cert: Option<PathBuf>,

    /// The PEM private key of --tls-cert.
    #[arg(long, env = "FENCEWATCH_TLS_KEY", requires = "tls_cert")]
    pub tls_key: Option<PathBuf>,

    /// Threads serving HTTP (the async runtime's workers). Default: one per core, less one.
    #[arg(long, env = "FENCEWATCH_HTTP_WORKERS", value_parser = clap::value_parser!(u16).range(1..))]
    pub http_workers: Option<u16>,
}

impl ServeArgs {
    /// The runtime's worker threads on a machine with `cores`: one per core, less one.
    ///
    /// The write path's serial stages are threads the runtime does not count: on SQLite sqlx's
    /// writer thread and the group-commit thread, together about a core under load; on
    /// PostgreSQL the server's backends, usually on the same machine. A worker on every core
    /// competes with them for it, and wakes its sibling workers to steal each newly woken task:
    /// a lone write on PostgreSQL switched context 4.6 times in the daemon with two workers and
    /// 2.7 with one. One per core less one did as many or more writes at 32 clients and more
    /// for a lone client on both (docs/performance.md, "Tried, kept or not, and why").
    pub fn http_workers(&self, cores: usize) -> usize {
        match self.http_workers {
            Some(workers) => usize::from(workers),
            None => cores.saturating_sub(1).max(1),
        }
    }
}

/// A duration longer than nothing (a loop every 0 s would spin).
fn positive_duration(text: &str) -> Result<Duration, String> {
    match humantime::parse_duration(text) {
        Ok(duration) if duration.is_zero() => Err("must be longer than 0s".to_owned()),
        Ok(duration) => Ok(duration),
        Err(error) => Err(error.to_string()),
    }
}
