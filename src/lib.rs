//! fencewatch: fencing tokens enforced at the resource, with an audit of every attempt.
//!
//! The `domain` is pure; `store` (sqlx), `service` and `http` (axum) sit around it and import
//! it, never the other way round.

pub mod alerts;
pub mod cli;
pub mod client;
pub mod domain;
pub mod events;
pub mod http;
pub mod live;
pub mod metrics;
pub mod server;
pub mod service;
pub mod store;

use cli::{Cli, Command};
use std::process::ExitCode;

/// Runs a parsed command line; `main` only parses and maps the result to an exit code.
pub async fn run(cli: Cli) -> anyhow::Result<ExitCode> {
    match cli.command {
        Command::Serve(args) => server::run(args).await.map(|()| ExitCode::SUCCESS),
        Command::Lease(args) => client::lease(args).await,
        Command::Write(args) => client::write(args).await,
    }
}
