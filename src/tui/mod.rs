//! `fencewatch tui`: the live dashboard. `model` holds the state (no ratatui), `view` draws it,
//! `keys` declares the bindings, `client` talks to the daemon; this module runs the loop.

pub mod client;
pub mod keys;
pub mod model;
pub mod view;

use client::DaemonClient;
use crossterm::event::{Event as TermEvent, EventStream, KeyCode, KeyEventKind};
use futures_util::{Stream, StreamExt};
use model::{Command, Model, Msg};
use ratatui::backend::Backend;
use ratatui::Terminal;
use std::time::Duration;
use tokio::sync::mpsc;
use view::Theme;

/// Frames per second at most: drawing is bounded however fast events come.
const FRAME: Duration = Duration::from_millis(100);

/// Whether colour is wanted: not with `--no-color` or a non-empty `NO_COLOR`.
pub fn wants_color(no_color_flag: bool) -> bool {
    !no_color_flag && std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty())
}

/// Runs the dashboard in the terminal until `q`.
pub async fn run(client: DaemonClient, theme: Theme) -> anyhow::Result<()> {
    let (to_model, messages) = mpsc::channel(10_000);
    let follower = tokio::spawn(client.clone().follow(to_model.clone()));
    let mut terminal = TerminalGuard::enter()?;
    let keys = Box::pin(EventStream::new().filter_map(|event| async move {
        match event {
            Ok(TermEvent::Key(key)) if key.kind != KeyEventKind::Release => Some(key),
            _ => None,
        }
    }));
    let result = run_loop(
        &mut terminal.terminal,
        Model::new(),
        messages,
        keys,
        client,
        to_model,
        theme,
    )
    .await;
    follower.abort();
    drop(terminal);
    result
}

/// The loop, generic over the backend so that tests can drive it headless.
pub async fn run_loop<B: Backend>(
    terminal: &mut Terminal<B>,
    mut model: Model,
    mut messages: mpsc::Receiver<Msg>,
    keys: impl Stream<Item = crossterm::event::KeyEvent> + Unpin,
    client: DaemonClient,
    to_model: mpsc::Sender<Msg>,
    theme: Theme,
) -> anyhow::Result<()>
where
    B::Error: Send + Sync + 'static,
{
    let mut keys = keys;
    let mut frames = tokio::time::interval(FRAME);
    frames.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Skip);
    let url = client.base().to_owned();
    loop {
        let command = tokio::select! {
            message = messages.recv() => match message {
                Some(message) => {
                    let mut command = model.update(message);
                    // Take what else is waiting before drawing: constant work per event.
                    while command.is_none() {
                        match messages.try_recv() {
                            Ok(message) => command = model.update(message),
                            Err(_) => break,
                        }
                    }
                    command
                }
                None => None,
            },
            key = keys.next() => match key {
                Some(key) => key_message(&model, key).and_then(|message| model.update(message)),
                None => Some(Command::Quit),
            },
            _ = frames.tick() => {
                model.update(Msg::Tick { now: chrono::Utc::now().timestamp() });
                terminal
                    .draw(|frame| view::render(frame, &model, &url, theme))
                    .map_err(|e| anyhow::anyhow!("failed to draw: {e}"))?;
                None
            }
        };
        match command {
            Some(Command::Quit) => return Ok(()),
            Some(Command::FetchTimeline(resource)) => {
                let client = client.clone();
                let to_model = to_model.clone();
                tokio::spawn(async move {
                    if let Ok(rows) = client.timeline(&resource).await {
                        let _ = to_model.send(Msg::Timeline { resource, rows }).await;
                    }
                });
            }
            None => {}
        }
    }
}

/// Turns a key press into a message: typed text while the filter is being edited, else the
/// bound action; `None` for a key that means nothing here.
fn key_message(model: &Model, key: crossterm::event::KeyEvent) -> Option<Msg> {
    if model.editing_filter {
        return match key.code {
            KeyCode::Char(c) => Some(Msg::FilterInput(c)),
            KeyCode::Backspace => Some(Msg::FilterBackspace),
            KeyCode::Enter | KeyCode::Esc => Some(Msg::Key(keys::Action::Back)),
            _ => None,
        };
    }
    keys::action_for(key).map(Msg::Key)
}

/// The terminal in raw mode on the alternate screen, restored when dropped, on error, and (by
/// the hook ratatui installs) on panic.
struct TerminalGuard {
    terminal: ratatui::DefaultTerminal,
}

impl TerminalGuard {
    fn enter() -> anyhow::Result<Self> {
        let terminal = ratatui::try_init()
            .map_err(|e| anyhow::anyhow!("failed to set up the terminal: {e}"))?;
        Ok(Self { terminal })
    }
}

impl Drop for TerminalGuard {
    fn drop(&mut self) {
        ratatui::restore();
    }
}

/// `tui --once --json`: the overview as JSON, for scripts.
pub async fn overview_json(client: &DaemonClient) -> Result<serde_json::Value, String> {
    let stats = client.json("/v1/stats").await?;
    let overlaps = client.json("/v1/overlaps?state=open&limit=1000").await?;
    let alerts = client.json("/v1/alerts").await?;
    let firing: Vec<serde_json::Value> = alerts["alerts"]
        .as_array()
        .map(|all| {
            all.iter()
                .filter(|a| a["state"] == "firing")
                .cloned()
                .collect()
        })
        .unwrap_or_default();
    Ok(serde_json::json!({
        "url": client.base(),
        "totals": stats["totals"],
        "rates": stats["rates"],
        "open_overlaps": overlaps["overlaps"],
        "firing_alerts": firing,
        "events_dropped": stats["events_dropped"],
    }))
}

#[cfg(test)]
pub(crate) mod fixtures {
    //! A dashboard mid-incident, at a fixed time, for model tests and snapshots.
    use super::model::{Model, Msg};
    use serde_json::{json, Value};

    pub const NOW: i64 = 1_764_474_000; // 2025-11-30T03:40:00Z

    pub fn write(
        id: i64,
        outcome: &str,
        resource: &str,
        token: i64,
        highest: i64,
        owner: &str,
    ) -> Msg {
        Msg::Event {
            kind: "write".into(),
            data: json!({
                "id": id, "at": "2025-11-30T03:39:58.123456Z", "resource": resource, "outcome": outcome,
                "token": token, "highest_token": highest, "revision": id, "owner": owner,
                "detail": if outcome == "accepted" { Value::Null } else { json!("generation was superseded") },
            }),
        }
    }

    pub fn overlap(
        id: i64,
        resource: &str,
        stale: i64,
        newer: i64,
        count: i64,
        state: &str,
    ) -> Value {
        json!({
            "id": id, "resource": resource, "stale_token": stale, "superseding_token": newer,
            "stale_owner": format!("worker-{stale}"), "superseding_owner": format!("worker-{newer}"),
            "first_seen": "2025-11-30T03:39:50.000000Z", "last_seen": format!("2025-11-30T03:39:5{id}.000000Z"),
            "rejected_writes": count, "state": state, "closed_at": null,
        })
    }

    pub fn incident() -> Model {
        let mut model = Model::new();
        model.update(Msg::Tick { now: NOW - 2 });
        model.update(Msg::Connected {
            replayed_from: None,
        });
        model.update(Msg::Snapshot {
            overlaps: vec![
                overlap(1, "accounts/totals", 7, 8, 4, "open"),
                overlap(2, "billing/ledger", 3, 5, 1, "closed"),
            ],
            alerts: vec![
                json!({"rule": "StaleOwnerSpike", "resource": null, "state": "firing", "since": "2025-11-30T03:39:55.000000Z", "value": 25, "threshold": 20}),
                json!({"rule": "StaleOwnerSpikePerResource", "resource": "accounts/totals", "state": "pending", "since": "2025-11-30T03:39:57.000000Z", "value": 11, "threshold": 10}),
            ],
            stats: Some(json!({"totals": {"accepted": 1200, "stale": 31, "superseded": 7, "replayed": 3}, "events_dropped": 0})),
        });
        for id in 1..=6 {
            model.update(write(id, "accepted", "accounts/totals", 8, 8, "worker-8"));
        }
        model.update(write(7, "stale", "accounts/totals", 7, 8, "worker-7"));
        model.update(write(8, "superseded", "billing/ledger", 3, 5, "worker-3"));
        model.update(Msg::Tick { now: NOW });
        model
    }
}
