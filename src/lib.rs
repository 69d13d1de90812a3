//! fencewatch: fencing tokens enforced at the resource, with an audit of every attempt.
//!
//! The `domain` is pure; `store` (sqlx), `service` and `http` (axum) sit around it and import
//! it, never the other way round.

pub mod cli;
pub mod domain;
pub mod http;
pub mod server;
pub mod service;
pub mod store;

use cli::{Cli, Command};

/// Runs a parsed command line; `main` only parses and maps the result to an exit code.
pub async fn run(cli: Cli) -> anyhow::Result<()> {
    match cli.command {
        Command::Serve(args) => server::run(args).await,
    }
}
