//! What the demo does alike whichever external lock service its workers use (etcd, ZooKeeper):
//! a daemon pointed at the service, the workers, the dashboard or a timed headless run, and the
//! summary at the end. Each service's module starts its server and writes its worker.

use super::pauses::Pauses;
use super::summary::{incident_lines, writes_line, DatabaseNote};
use crate::cli::DemoArgs;
use crate::client::DaemonClient;
use std::future::Future;
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::sync::watch;

/// The lock service the workers use, as the daemon and the summary name it.
pub struct LockService<'a> {
    /// The `authority` member of the JSON summary (`etcd`, `zookeeper`).
    pub authority: &'static str,
    /// How the text summary names its locks (`etcd locks`, `ZooKeeper locks`).
    pub locks: &'static str,
    /// What its tokens are, for the dashboard's header: they rise by more than one.
    pub tokens: &'static str,
    /// The `serve` option that points the daemon at it, and its value.
    pub serve_flag: &'static str,
    pub endpoint: &'a str,
}

/// What a worker is given: its id, the service's endpoint, a client of the daemon, the
/// resources, when to pause past its lock, and the stop signal.
pub struct Worker {
    pub id: usize,
    pub endpoint: String,
    pub daemon: DaemonClient,
    pub resources: Vec<String>,
    pub pauses: Arc<Pauses>,
    pub stop: watch::Receiver<bool>,
}

/// The first pause soon after the start, so that a short run shows an incident.
const FIRST_PAUSE: Duration = Duration::from_millis(800);

/// Runs the demo's daemon and `worker`s (one per `--workers`) until the dashboard quits or the
/// headless run's time is up, then says what happened.
pub async fn run_workers<W, F>(
    args: &DemoArgs,
    color: bool,
    folder: &std::path::Path,
    service: LockService<'_>,
    worker: W,
) -> anyhow::Result<()>
where
    W: Fn(Worker) -> F,
    F: Future<Output = ()> + Send + 'static,
{
    let started = Instant::now();
    let database = args
        .database
        .clone()
        .unwrap_or_else(|| format!("sqlite://{}", folder.join("demo.db").display()));
    let serve_args = [service.serve_flag.to_owned(), service.endpoint.to_owned()];
    let (base, daemon) = crate::commands::bench::start_daemon(&database, &serve_args).await?;
    let client = DaemonClient::new(&base, None, None)?;
    let (stop_workers, stopped) = watch::channel(false);
    let resources: Vec<String> = (0..args.resources.max(1))
        .map(|i| format!("demo/ledger-{i}"))
        .collect();
    // As far apart as the plain demo's incidents, and never closer than a pause lasts.
    let pauses = Arc::new(Pauses::new(
        started,
        FIRST_PAUSE,
        args.every.max(Duration::from_secs(5)),
    ));
    let workers: Vec<_> = (0..args.workers.max(1))
        .map(|id| {
            tokio::spawn(worker(Worker {
                id,
                endpoint: service.endpoint.to_owned(),
                daemon: client.clone(),
                resources: resources.clone(),
                pauses: pauses.clone(),
                stop: stopped.clone(),
            }))
        })
        .collect();
    let outcome = if args.headless {
        tokio::time::sleep(args.duration).await;
        Ok(())
    } else {
        let theme = crate::tui::view::Theme { color };
        let note = format!(
            "demo on {}: {}; one worker pauses past its lock every {}",
            service.locks,
            service.tokens,
            humantime::format_duration(args.every.max(Duration::from_secs(5)))
        );
        crate::tui::run(client.clone(), theme, Some(note))
            .await
            .map_err(Into::into)
    };
    let _ = stop_workers.send(true);
    for worker in workers {
        let _ = worker.await;
    }
    let told = match outcome {
        Ok(()) => {
            let demo = format!("demo --authority {}", service.authority);
            let note = DatabaseNote::new(&database, args.database.is_some(), &demo);
            print_summary(args, started.elapsed(), &service, &client, note).await
        }
        Err(error) => Err(error),
    };
    stop(daemon).await;
    told
}

/// SIGTERM, so that the daemon stops as users stop it (its SQLite file whole, the WAL copied
/// in); killed if it has not stopped within 10 s.
async fn stop(mut daemon: tokio::process::Child) {
    if let Some(pid) = daemon.id() {
        let asked = tokio::process::Command::new("kill")
            .args(["-s", "TERM", &pid.to_string()])
            .status()
            .await
            .is_ok_and(|status| status.success());
        if asked
            && tokio::time::timeout(Duration::from_secs(10), daemon.wait())
                .await
                .is_ok()
        {
            return;
        }
    }
    let _ = daemon.kill().await;
}

async fn print_summary(
    args: &DemoArgs,
    ran: Duration,
    service: &LockService<'_>,
    client: &DaemonClient,
    database: DatabaseNote,
) -> anyhow::Result<()> {
    let stats = client.stats().await?;
    let mut incidents = client.overlaps(None, 1000).await?.overlaps;
    incidents.sort_by_key(|o| (o.first_seen, o.id));
    if args.json {
        let summary = serde_json::json!({
            "authority": service.authority,
            "seconds": ran.as_secs_f64(),
            "workers": args.workers,
            "resources": args.resources,
            "writes": stats.totals,
            "open_overlaps": stats.open_overlaps,
            "firing_alerts": stats.firing_alerts,
            "incidents": incidents,
            "database": database,
        });
        crate::commands::print_line(&summary.to_string())?;
    } else {
        let mut lines = vec![
            format!(
                "demo ran {:.0}s with {} workers taking {} on {} resources",
                ran.as_secs_f64(),
                args.workers,
                service.locks,
                args.resources
            ),
            writes_line(&stats.totals),
        ];
        lines.extend(incident_lines(&incidents));
        lines.extend(database.lines());
        crate::commands::print_line(&lines.join("\n"))?;
    }
    Ok(())
}
