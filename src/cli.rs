//! The command line.

use clap::{Args, Parser, Subcommand};
use std::time::Duration;

#[derive(Debug, Parser)]
#[command(
    name = "fencewatch",
    version,
    about = "Fencing tokens with an audit of every write: a daemon, a lease authority and a dashboard"
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Run the daemon: fenced writes, reads and the audit over HTTP.
    Serve(ServeArgs),
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

    /// The largest value a write may carry, in bytes.
    #[arg(long, default_value_t = 1024 * 1024)]
    pub max_value_bytes: usize,

    /// How long an accepted operation's result is kept for replay by its Idempotency-Key
    /// (e.g. 24h, 90m). A retry after that is decided afresh; see the README.
    #[arg(long, default_value = "24h", value_parser = humantime::parse_duration)]
    pub idempotency_retention: Duration,

    /// PostgreSQL connections per daemon.
    #[arg(long, default_value_t = 16)]
    pub db_max_connections: u32,
}
