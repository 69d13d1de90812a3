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
                Some(key) => model.update(key_message(&model, key)?),
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
/// bound action.
fn key_message(model: &Model, key: crossterm::event::KeyEvent) -> anyhow::Result<Msg> {
    if model.editing_filter {
        return Ok(match key.code {
            KeyCode::Char(c) => Msg::FilterInput(c),
            KeyCode::Backspace => Msg::FilterBackspace,
            KeyCode::Enter | KeyCode::Esc => Msg::Key(keys::Action::Back),
            _ => Msg::Tick { now: model.now },
        });
    }
    Ok(match keys::action_for(key) {
        Some(action) => Msg::Key(action),
        None => Msg::Tick { now: model.now },
    })
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
