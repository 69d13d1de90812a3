//! `fencewatch demo`: the daemon on a temporary SQLite file (or `--database`), a few simulated
//! workers whose incidents are scripted to stand out one at a time (`story.rs`), and the
//! dashboard on top. `--headless` runs the same without a terminal. Either way it ends by
//! telling what happened (`summary.rs`).

pub mod etcd;
mod locked;
mod pauses;
mod story;
mod summary;
pub mod zookeeper;

use crate::api::events::DaemonEvent;
use crate::app::service::Limits;
use crate::authority::Authorities;
use crate::client::DaemonClient;
use crate::domain::Outcome;
use crate::http::{self, Access};
use crate::live::alerts::{AlertConfig, Rule};
use crate::live::LiveConfig;
use crate::store::{Store, StoreOptions};
use anyhow::Context;
use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use summary::{AlertLog, DatabaseNote, RulesNote, Summary};
use tokio::sync::watch;

#[derive(Debug, Clone)]
pub struct DemoOptions {
    pub database: Option<String>,
    pub workers: usize,
    pub resources: usize,
    pub headless: bool,
    pub duration: Option<Duration>,
    pub json: bool,
    pub color: bool,
    /// Time between incidents.
    pub every: Duration,
}

/// The first incident comes soon after start, so that a short run shows one.
const FIRST_INCIDENT: Duration = Duration::from_millis(800);

/// Alert rules tuned so that a spike of refused retries (more than two in ten seconds) pages
/// within a second or so, and an ordinary zombie's two late writes do not.
fn demo_alerts() -> AlertConfig {
    let rule = |name: &str, per_resource| Rule {
        name: name.to_owned(),
        outcomes: vec![Outcome::Stale, Outcome::Superseded],
        threshold: 2,
        window: Duration::from_secs(10),
        for_: Duration::from_secs(1),
        keep_firing_for: Duration::from_secs(5),
        per_resource,
        labels: BTreeMap::from([("severity".to_owned(), "page".to_owned())]),
        summary: "Superseded owners keep writing".to_owned(),
    };
    AlertConfig {
        evaluation_interval: Duration::from_millis(250),
        rules: vec![
            rule("StaleOwnerSpike", false),
            rule("StaleOwnerSpikePerResource", true),
        ],
        ..AlertConfig::default()
    }
}

pub async fn run(options: DemoOptions) -> anyhow::Result<()> {
    let started = std::time::Instant::now();
    let folder = tempfile::tempdir().context("failed to create a temporary folder")?;
    let url = options
        .database
        .clone()
        .unwrap_or_else(|| format!("sqlite://{}", folder.path().join("demo.db").display()));
    let store = Store::open(&url, &StoreOptions::default())
        .await
        .context("failed to open the database")?;
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .context("failed to bind")?;
    let address = listener
        .local_addr()
        .context("failed to read the bound address")?;
    let base = format!("http://{address}");
    let live = LiveConfig {
        overlap_quiet: Duration::from_secs(10),
        max_subscribers: 16,
        alerts: Arc::new(demo_alerts()),
        external_url: base.clone(),
        ..LiveConfig::default()
    };
    let state = super::serve::start(
        store.clone(),
        Limits::default(),
        Authorities::default(),
        live,
        Access::default(),
    )
    .await
    .context("failed to start the daemon")?;
    let alert_log = Arc::new(Mutex::new(AlertLog::default()));
    let mut alert_events = state.live.subscribe();
    let log = alert_log.clone();
    let alert_watch = tokio::spawn(async move {
        while let Ok(event) = alert_events.recv().await {
            if let (DaemonEvent::Alert(alert), Ok(mut log)) = (event, log.lock()) {
                log.observe(&alert, chrono::Utc::now());
            }
        }
    });
    let live = state.live.clone();
    let (stop_server, server_stopped) = watch::channel(false);
    let server = tokio::spawn(http::serve(
        listener,
        http::router(state),
        http::ServeLimits::default(),
        async move {
            let mut stopped = server_stopped;
            let _ = stopped.wait_for(|stop| *stop).await;
        },
    ));

    // One worker more than resources: a standby to take over from each zombie.
    let workers = options.workers.max(2);
    let resources = options.resources.clamp(1, workers - 1);
    let script = Arc::new(story::Script::new(
        (0..resources).map(|i| format!("demo/ledger-{i}")).collect(),
        FIRST_INCIDENT,
        // Incidents that overlap one another would be the noise this script exists to avoid.
        options.every.max(Duration::from_secs(3)),
    ));
    let (stop_workers, stopped) = watch::channel(false);
    let mut fleet = Vec::new();
    for id in 0..workers {
        let daemon = DaemonClient::new(&base, None, None)?;
        let (script, stopped) = (script.clone(), stopped.clone());
        fleet.push(tokio::spawn(async move {
            story::worker(id, daemon, &script, stopped).await
        }));
    }

    let outcome = if options.headless {
        let duration = options.duration.unwrap_or(Duration::from_secs(10));
        tokio::time::sleep(duration).await;
        Ok(())
    } else {
        let theme = crate::tui::view::Theme {
            color: options.color,
        };
        match DaemonClient::new(&base, None, None) {
            Ok(client) => {
                let note = summary::header_note(&demo_alerts().rules);
                crate::tui::run(client, theme, Some(note))
                    .await
                    .map_err(Into::into)
            }
            Err(error) => Err(error.into()),
        }
    };
    let _ = stop_workers.send(true);
    for worker in fleet {
        let _ = worker.await;
    }
    // Let the evaluator and watchers see the last writes before summarising.
    tokio::time::sleep(Duration::from_millis(600)).await;
    let client = DaemonClient::new(&base, None, None)?;
    let told = async {
        let writes = client.stats().await?.totals;
        let incidents = client.overlaps(None, 1000).await?.overlaps;
        let alerts = alert_log
            .lock()
            .map(|log| log.records.clone())
            .unwrap_or_default();
        anyhow::Ok(Summary::new(
            started.elapsed().as_secs_f64(),
            (workers, resources),
            writes,
            incidents,
            alerts,
            RulesNote::new(&demo_alerts().rules),
            DatabaseNote::new(&url, options.database.is_some(), "demo"),
        ))
    }
    .await;
    alert_watch.abort();
    live.stop_streams();
    let _ = stop_server.send(true);
    let _ = server.await;
    store.close().await;
    let summary = told?;
    if options.json {
        crate::commands::print_line(&serde_json::to_string(&summary)?)?;
    } else {
        crate::commands::print_line(&summary.text())?;
    }
    outcome
}
