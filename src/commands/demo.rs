//! `fencewatch demo`: the daemon on a temporary SQLite file, a fleet of simulated workers that
//! take leases from its authority and sometimes pause past them while a replacement takes over,
//! and the dashboard on top. `--headless` runs the same without a terminal and prints a summary.

use crate::api::leases::{AcquireRequest, LeaseView, ReleaseRequest, RenewRequest};
use crate::app::service::{FenceService, Limits};
use crate::client::{DaemonClient, WriteRequest};
use crate::domain::{Outcome, OverlapState};
use crate::http::{self, Access};
use crate::live::alerts::{AlertConfig, Rule};
use crate::live::Event;
use crate::live::LiveConfig;
use crate::store::{Store, StoreOptions};
use anyhow::Context;
use serde_json::{json, Value};
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;
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
}

/// Alert rules tuned so that the demo's overlaps page within seconds.
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
    };
    let state = super::serve::start(
        FenceService::new(store.clone(), Limits::default()),
        live,
        Access::default(),
    )
    .await
    .context("failed to start the daemon")?;
    let fired = Arc::new(AtomicU64::new(0));
    let fired_names = Arc::new(std::sync::Mutex::new(Vec::<String>::new()));
    let mut alert_events = state.live.bus.subscribe();
    let counter = fired.clone();
    let names = fired_names.clone();
    let alert_watch = tokio::spawn(async move {
        while let Ok(event) = alert_events.recv().await {
            if let Event::Alert(alert) = event {
                if alert.state == crate::domain::alert::AlertState::Firing {
                    counter.fetch_add(1, Ordering::Relaxed);
                    if let Ok(mut names) = names.lock() {
                        let resource = alert
                            .resource
                            .as_deref()
                            .map(|r| format!(" on {r}"))
                            .unwrap_or_default();
                        names.push(format!("{}{resource}", alert.rule));
                    }
                }
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

    let (stop_workers, stopped) = watch::channel(false);
    let resources: Vec<String> = (0..options.resources.max(1))
        .map(|i| format!("demo/ledger-{i}"))
        .collect();
    let workers: Vec<_> = (0..options.workers.max(1))
        .map(|id| tokio::spawn(worker(id, base.clone(), resources.clone(), stopped.clone())))
        .collect();

    let outcome = if options.headless {
        let duration = options.duration.unwrap_or(Duration::from_secs(10));
        tokio::time::sleep(duration).await;
        Ok(())
    } else {
        let theme = crate::tui::view::Theme {
            color: options.color,
        };
        match DaemonClient::new(&base, None, None) {
            Ok(client) => crate::tui::run(client, theme).await.map_err(Into::into),
            Err(error) => Err(error.into()),
        }
    };
    let _ = stop_workers.send(true);
    for worker in workers {
        let _ = worker.await;
    }
    // Let the evaluator and watchers see the last writes before summarising.
    tokio::time::sleep(Duration::from_millis(600)).await;
    if options.headless {
        let summary =
            summarise(&base, fired.load(Ordering::Relaxed), &fired_names, &options).await?;
        if options.json {
            println!("{summary}");
        } else {
            print_summary(&summary);
        }
    }
    alert_watch.abort();
    live.stop_streams();
    let _ = stop_server.send(true);
    let _ = server.await;
    store.close().await;
    outcome
}

async fn summarise(
    base: &str,
    fired: u64,
    names: &std::sync::Mutex<Vec<String>>,
    options: &DemoOptions,
) -> anyhow::Result<Value> {
    let client = DaemonClient::new(base, None, None)?;
    let stats = client.stats().await?;
    let overlaps = client.overlaps(None, 1000).await?.overlaps;
    let open = overlaps
        .iter()
        .filter(|o| o.state == OverlapState::Open)
        .count();
    let names = names.lock().map(|n| n.clone()).unwrap_or_default();
    Ok(json!({
        "seconds": options.duration.unwrap_or_default().as_secs_f64(),
        "workers": options.workers,
        "resources": options.resources,
        "writes": stats.totals,
        "overlaps": overlaps.len(),
        "open_overlaps": open,
        "alerts_fired": fired,
        "alerts": names,
    }))
}

fn print_summary(summary: &Value) {
    println!(
        "demo ran {}s with {} workers on {} resources",
        summary["seconds"], summary["workers"], summary["resources"]
    );
    let writes: Vec<String> = summary["writes"]
        .as_object()
        .map(|totals| {
            totals
                .iter()
                .filter(|(_, n)| n.as_u64().unwrap_or(0) > 0)
                .map(|(outcome, n)| format!("{outcome} {n}"))
                .collect()
        })
        .unwrap_or_default();
    println!("writes: {}", writes.join(", "));
    println!(
        "ownership overlaps: {} ({} still open)",
        summary["overlaps"], summary["open_overlaps"]
    );
    let alerts: Vec<String> = summary["alerts"]
        .as_array()
        .map(|a| {
            a.iter()
                .filter_map(|n| n.as_str().map(str::to_owned))
                .collect()
        })
        .unwrap_or_default();
    println!(
        "alerts fired: {} ({})",
        summary["alerts_fired"],
        alerts.join(", ")
    );
}

/// One simulated worker: takes a resource's lease, writes with its token, renews, and now and
/// then pauses past its lease (a GC pause, a stalled host) and resumes writing as if nothing
/// happened, which the fence refuses.
async fn worker(id: usize, base: String, resources: Vec<String>, stop: watch::Receiver<bool>) {
    let Ok(daemon) = DaemonClient::new(&base, None, None) else {
        tracing::error!("worker {id}: no HTTP client");
        return;
    };
    let holder = format!("worker-{id}");
    // Seeded per worker, so runs look alike.
    let mut rng = fastrand::Rng::with_seed(id as u64 + 1);
    let mut turn = id;
    // Worker 0's first lease always lapses early, so every run shows an incident within
    // seconds; after that, pauses come at random.
    let mut scripted_pause = id == 0;
    while !*stop.borrow() {
        let resource = &resources[turn % resources.len()];
        turn += 1;
        let acquire = AcquireRequest {
            holder: holder.clone(),
            ttl_ms: 800,
        };
        let token = match daemon.acquire(resource, &acquire).await {
            Ok(answer) if answer.is_success() => match answer.read::<LeaseView>() {
                Ok(lease) => lease.token,
                Err(_) => continue,
            },
            _ => {
                tokio::time::sleep(Duration::from_millis(150)).await;
                continue;
            }
        };
        for step in 0..10 {
            if *stop.borrow() {
                return;
            }
            if !write(&daemon, resource, token, &holder, step).await {
                break;
            }
            let pause = if scripted_pause && step == 2 {
                scripted_pause = false;
                true
            } else {
                rng.u8(..100) < 12
            };
            if pause {
                // Paused past the lease: a replacement takes over meanwhile.
                tokio::time::sleep(Duration::from_millis(1400)).await;
                for late in 0..3 {
                    write(&daemon, resource, token, &holder, 100 + late).await;
                }
                break;
            }
            let renew = RenewRequest {
                holder: holder.clone(),
                token,
                ttl_ms: None,
            };
            let _ = daemon.renew(resource, &renew).await;
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        let release = ReleaseRequest {
            holder: holder.clone(),
            token,
        };
        let _ = daemon.release(resource, &release).await;
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// One fenced write; returns whether it was accepted.
async fn write(daemon: &DaemonClient, resource: &str, token: i64, holder: &str, step: u32) -> bool {
    let token_text = token.to_string();
    let idempotency_key = format!("{holder}-{token}-{step}");
    let request = WriteRequest {
        token: &token_text,
        idempotency_key: Some(&idempotency_key),
        lease: Some(resource),
        owner: Some(holder),
        body: format!("total written by {holder} with generation {token}, step {step}")
            .into_bytes(),
        ..WriteRequest::default()
    };
    daemon
        .write(resource, request)
        .await
        .is_ok_and(|answer| answer.is_success())
}
