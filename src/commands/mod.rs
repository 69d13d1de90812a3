//! What users run: each subcommand of the command line, composed from the layers below.

pub mod answer;
pub mod audit;
pub mod bench;
pub mod demo;
pub mod lease;
pub mod serve;
pub mod write;

use crate::cli::{Cli, Command};
use crate::{client, tls, tui};

use std::process::ExitCode;

/// Runs a parsed command line; `main` only parses and maps the result to an exit code.
pub async fn run(cli: Cli) -> anyhow::Result<ExitCode> {
    tls::install_crypto_provider();
    match cli.command {
        Command::Serve(args) => serve::run(args).await.map(|()| ExitCode::SUCCESS),
        Command::Lease(args) => lease::run(args).await,
        Command::Write(args) => write::run(args).await,
        Command::Audit(args) => audit::run(args).await,
        Command::Bench(args) => {
            if let Some(events) = args.dashboard {
                let report = bench::run_dashboard(events.max(1)).await?;
                if args.json {
                    print_line(&serde_json::to_string(&report)?)?;
                } else {
                    println!(
                        "dashboard event path: {} events in {:.2} s, {:.0} events/s",
                        report.events, report.seconds, report.per_second
                    );
                }
                return Ok(ExitCode::SUCCESS);
            }
            let report = bench::run(bench::BenchOptions {
                url: args.url,
                ca_cert: args.ca_cert,
                database: args.database,
                connections: args.connections.max(1),
                resources: args.resources.max(1),
                stale_fraction: args.stale.clamp(0.0, 1.0),
                idempotency_keys: args.idempotency_keys,
                duration: args.duration,
                baseline: !args.no_baseline,
                http: !args.no_http,
                json: args.json,
                readers: args.readers,
                subscribers: args.subscribers,
            })
            .await?;
            if args.json {
                print_line(&serde_json::to_string(&report)?)?;
            } else {
                bench::print(&report);
            }
            Ok(ExitCode::SUCCESS)
        }
        Command::Tui(args) => {
            let daemon = client::DaemonClient::new(
                &args.connection.url,
                args.connection.api_key.clone(),
                args.connection.ca_cert.as_deref(),
            )?;
            if args.once {
                let overview = tui::once::overview(&daemon).await?;
                let text = if args.json {
                    serde_json::to_string(&overview)?
                } else {
                    serde_json::to_string_pretty(&overview)?
                };
                print_line(&text)?;
                return Ok(ExitCode::SUCCESS);
            }
            let theme = tui::view::Theme {
                color: tui::wants_color(args.no_color),
            };
            tui::run(daemon, theme).await?;
            Ok(ExitCode::SUCCESS)
        }
        Command::Completions { shell } => {
            let mut command = <Cli as clap::CommandFactory>::command();
            // Into memory first: the generator panics on a write error such as a closed pipe.
            let mut script = Vec::new();
            clap_complete::generate(shell, &mut command, "fencewatch", &mut script);
            std::io::Write::write_all(&mut std::io::stdout(), &script)
                .map_err(|e| anyhow::anyhow!("failed to write the completion script: {e}"))?;
            Ok(ExitCode::SUCCESS)
        }
        Command::Man => {
            let command = <Cli as clap::CommandFactory>::command();
            clap_mangen::Man::new(command)
                .render(&mut std::io::stdout())
                .map_err(|e| anyhow::anyhow!("failed to write the manual page: {e}"))?;
            Ok(ExitCode::SUCCESS)
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

/// Prints one line of a command's answer. A reader that went away (`| head`) is not an error:
/// the command has nothing more to say to it.
fn print_line(text: &str) -> anyhow::Result<()> {
    use std::io::Write;
    let mut out = std::io::stdout().lock();
    match writeln!(out, "{text}").and_then(|()| out.flush()) {
        Err(error) if error.kind() != std::io::ErrorKind::BrokenPipe => {
            Err(anyhow::anyhow!("failed to write the output: {error}"))
        }
        _ => Ok(()),
    }
}
