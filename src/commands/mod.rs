//! What users run: each subcommand of the command line, composed from the layers below.

pub mod answer;
pub mod audit;
pub mod bench;
pub mod demo;
pub mod fence;
pub mod lease;
pub mod lock;
pub mod serve;
pub mod write;

use crate::cli::{Cli, Command, DaemonArgs};
use crate::{client, tls, tui};
use anyhow::Context;

use std::process::ExitCode;

/// Runs a parsed command line; `main` only parses and maps the result to an exit code.
pub async fn run(cli: Cli) -> anyhow::Result<ExitCode> {
    tls::install_crypto_provider();
    match cli.command {
        Command::Serve(args) => serve::run(*args).await.map(|()| ExitCode::SUCCESS),
        Command::Lease(args) => lease::run(args).await,
        Command::Write(args) => write::run(args).await,
        Command::Lock(args) => lock::run(args).await,
        Command::Fence(args) => fence::run(args).await,
        Command::Audit(args) => audit::run(args).await,
        Command::Bench(args) => bench::run_command(args).await,
        Command::Tui(args) => {
            let daemon = connect(&args.connection)?;
            if args.once {
                // Through a JSON value, whose maps sort their keys: scripts have always seen
                // every object's fields by name.
                let overview = serde_json::to_value(tui::once::overview(&daemon).await?)?;
                let text = if args.json {
                    overview.to_string()
                } else {
                    serde_json::to_string_pretty(&overview)?
                };
                print_line(&text)?;
                return Ok(ExitCode::SUCCESS);
            }
            let theme = tui::view::Theme {
                color: tui::wants_color(args.no_color),
            };
            tui::run(daemon, theme, None).await?;
            Ok(ExitCode::SUCCESS)
        }
        Command::Completions { shell } => {
            let mut command = Cli::command_without_secrets();
            // Into memory first: the generator panics on a write error such as a closed pipe.
            let mut script = Vec::new();
            clap_complete::generate(shell, &mut command, "fencewatch", &mut script);
            std::io::Write::write_all(&mut std::io::stdout(), &script)
                .context("failed to write the completion script")?;
            Ok(ExitCode::SUCCESS)
        }
        Command::Man { dir: None } => {
            // As `generate_to` renders the main page among the others.
            let command = Cli::command_without_secrets().disable_help_subcommand(true);
            clap_mangen::Man::new(command)
                .render(&mut std::io::stdout())
                .context("failed to write the manual page")?;
            Ok(ExitCode::SUCCESS)
        }
        Command::Man { dir: Some(dir) } => {
            clap_mangen::generate_to(Cli::command_without_secrets(), &dir).with_context(|| {
                format!("failed to write the manual pages into {}", dir.display())
            })?;
            Ok(ExitCode::SUCCESS)
        }
        Command::Demo(args) if args.authority == crate::cli::DemoAuthority::ZooKeeper => {
            let color = tui::wants_color(args.no_color);
            demo::zookeeper::run(args, color)
                .await
                .map(|()| ExitCode::SUCCESS)
        }
        Command::Demo(args) if args.authority == crate::cli::DemoAuthority::Etcd => {
            let color = tui::wants_color(args.no_color);
            demo::etcd::run(args, color)
                .await
                .map(|()| ExitCode::SUCCESS)
        }
        Command::Demo(args) => demo::run(demo::DemoOptions {
            database: args.database,
            workers: args.workers,
            resources: args.resources,
            headless: args.headless,
            duration: Some(args.duration),
            json: args.json,
            color: tui::wants_color(args.no_color),
            every: args.every,
        })
        .await
        .map(|()| ExitCode::SUCCESS),
    }
}

/// The daemon a client command talks to, as its connection options name it.
fn connect(connection: &DaemonArgs) -> Result<client::DaemonClient, client::ClientError> {
    client::DaemonClient::new(
        &connection.url,
        connection.api_key.clone(),
        connection.ca_cert.as_deref(),
    )
}

/// Prints one line of a command's answer. A reader that went away (`| head`) is not an error:
/// the command has nothing more to say to it.
pub(crate) fn print_line(text: &str) -> anyhow::Result<()> {
    use std::io::Write;
    let mut out = std::io::stdout().lock();
    match writeln!(out, "{text}").and_then(|()| out.flush()) {
        Err(error) if error.kind() != std::io::ErrorKind::BrokenPipe => {
            Err(anyhow::anyhow!("failed to write the output: {error}"))
        }
        _ => Ok(()),
    }
}
