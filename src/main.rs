use fencewatch::cli::{Cli, Command, LogFormat};
use std::io::IsTerminal;
use std::process::ExitCode;
use tracing_subscriber::EnvFilter;

fn main() -> ExitCode {
    let cli = Cli::parse_without_secrets();
    // Logs go to stderr: stdout's first line belongs to the `listening on` announcement. A
    // dashboard owns the terminal, so it logs nothing there.
    let owns_terminal = match &cli.command {
        Command::Tui(args) => !args.once,
        Command::Demo(args) => !args.headless,
        _ => false,
    };
    // The offline tools print their answers; only errors belong beside them.
    let default_filter = match &cli.command {
        Command::Audit(_) => "error",
        Command::Demo(args) if args.headless => "warn",
        Command::Bench(_) => "warn",
        _ if owns_terminal => "off",
        _ => "info",
    };
    let filter = if owns_terminal {
        EnvFilter::new("off")
    } else {
        EnvFilter::try_from_env("FENCEWATCH_LOG").unwrap_or_else(|_| EnvFilter::new(default_filter))
    };
    // Colour codes only for a person at a terminal: a file or a journal gets plain text.
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_ansi(std::io::stderr().is_terminal());
    match cli.log_format {
        LogFormat::Text => builder.init(),
        LogFormat::Json => builder.json().init(),
    }
    let mut runtime = tokio::runtime::Builder::new_multi_thread();
    runtime.enable_all();
    if let Command::Serve(args) = &cli.command {
        let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
        runtime.worker_threads(args.http_workers(cores));
    }
    let runtime = match runtime.build() {
        Ok(runtime) => runtime,
        Err(error) => {
            eprintln!("error: failed to start the async runtime: {error}");
            return ExitCode::FAILURE;
        }
    };
    match runtime.block_on(fencewatch::run(cli)) {
        Ok(code) => code,
        // The reader of a list went away (`| head`): it has what it wanted, nothing failed.
        Err(error) if reader_went_away(&error) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("error: {error:#}");
            ExitCode::FAILURE
        }
    }
}

fn reader_went_away(error: &anyhow::Error) -> bool {
    error.chain().any(|cause| {
        cause
            .downcast_ref::<std::io::Error>()
            .is_some_and(|io| io.kind() == std::io::ErrorKind::BrokenPipe)
    })
}
