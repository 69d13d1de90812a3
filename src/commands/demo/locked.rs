//! What the demo does alike whichever external lock service its workers use (etcd, ZooKeeper):
//! a daemon pointed at the service, the workers, the dashboard or a timed headless run, and the
//! summary of a headless run. Each service's module starts its server and writes its worker.

use crate::cli::DemoArgs;
use crate::client::DaemonClient;
use std::future::Future;
use tokio::sync::watch;

/// The lock service the workers use, as the daemon and the summary name it.
pub struct LockService<'a> {
    /// The `authority` member of the JSON summary (`etcd`, `zookeeper`).
    pub authority: &'static str,
    /// How the text summary names its locks (`etcd locks`, `ZooKeeper locks`).
    pub locks: &'static str,
    /// The `serve` option that points the daemon at it, and its value.
    pub serve_flag: &'static str,
    pub endpoint: &'a str,
}

/// Runs the demo's daemon and `worker`s (one per `--workers`, each given its id, the service's
/// endpoint, a client of the daemon, the resources and a stop signal) until the dashboard quits
/// or the headless run's time is up.
pub async fn run_workers<W, F>(
    args: &DemoArgs,
    color: bool,
    folder: &std::path::Path,
    service: LockService<'_>,
    worker: W,
) -> anyhow::Result<()>
where
    W: Fn(usize, String, DaemonClient, Vec<String>, watch::Receiver<bool>) -> F,
    F: Future<Output = ()> + Send + 'static,
{
    let database = args
        .database
        .clone()
        .unwrap_or_else(|| format!("sqlite://{}", folder.join("demo.db").display()));
    let serve_args = [service.serve_flag.to_owned(), service.endpoint.to_owned()];
    let (base, mut daemon) = crate::commands::bench::start_daemon(&database, &serve_args).await?;
    let client = DaemonClient::new(&base, None, None)?;
    let (stop_workers, stopped) = watch::channel(false);
    let resources: Vec<String> = (0..args.resources.max(1))
        .map(|i| format!("demo/ledger-{i}"))
        .collect();
    let workers: Vec<_> = (0..args.workers.max(1))
        .map(|id| {
            tokio::spawn(worker(
                id,
                service.endpoint.to_owned(),
                client.clone(),
                resources.clone(),
                stopped.clone(),
            ))
        })
        .collect();
    let outcome = if args.headless {
        tokio::time::sleep(args.duration).await;
        Ok(())
    } else {
        let theme = crate::tui::view::Theme { color };
        crate::tui::run(client.clone(), theme, None)
            .await
            .map_err(Into::into)
    };
    let _ = stop_workers.send(true);
    for worker in workers {
        let _ = worker.await;
    }
    if args.headless && outcome.is_ok() {
        print_summary(args, &service, &client).await?;
    }
    let _ = daemon.kill().await;
    outcome
}

async fn print_summary(
    args: &DemoArgs,
    service: &LockService<'_>,
    client: &DaemonClient,
) -> anyhow::Result<()> {
    let stats = client.stats().await?;
    if args.json {
        let summary = serde_json::json!({
            "authority": service.authority,
            "seconds": args.duration.as_secs_f64(),
            "workers": args.workers,
            "resources": args.resources,
            "writes": stats.totals,
            "open_overlaps": stats.open_overlaps,
            "firing_alerts": stats.firing_alerts,
        });
        crate::commands::print_line(&summary.to_string())?;
    } else {
        let writes: Vec<String> = stats
            .totals
            .iter()
            .filter(|(_, n)| **n > 0)
            .map(|(outcome, n)| format!("{outcome} {n}"))
            .collect();
        println!(
            "demo ran {}s with {} workers taking {} on {} resources",
            args.duration.as_secs_f64(),
            args.workers,
            service.locks,
            args.resources
        );
        println!("writes: {}", writes.join(", "));
    }
    Ok(())
}
