//! `fencewatch tui`: the live dashboard. `model` holds the state (no ratatui), `view` draws it,
//! `keys` declares the bindings, `daemon` turns the daemon client's answers into the model's
//! messages, `once` prints the overview for scripts; this module runs the loop.

mod daemon;
pub mod keys;
pub mod model;
pub mod once;
pub mod view;

use crate::client::DaemonClient;
use crossterm::event::{Event as TermEvent, EventStream, KeyCode, KeyEventKind};
use futures_util::{Stream, StreamExt};
use model::timeline::{Fetch, LeaseFetch};
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

/// Runs the dashboard in the terminal until `q`. `note` is said in the header after the
/// connection's state (the demo's alert rules).
pub async fn run(
    client: DaemonClient,
    theme: Theme,
    note: Option<String>,
) -> Result<(), TerminalError> {
    let (to_model, messages) = mpsc::channel(10_000);
    let follower = tokio::spawn(client.clone().follow(to_model.clone()));
    let mut terminal = TerminalGuard::enter()?;
    let keys = Box::pin(EventStream::new().filter_map(|event| async move {
        match event {
            Ok(TermEvent::Key(key)) if key.kind != KeyEventKind::Release => Some(key),
            _ => None,
        }
    }));
    let url = client.base().to_owned();
    let result = run_loop(
        &mut terminal.terminal,
        Model::new(),
        messages,
        keys,
        Loop {
            effects: &client,
            to_model,
            header: view::Header {
                url: &url,
                note: note.as_deref(),
            },
            theme,
            clock: &|| chrono::Utc::now().timestamp(),
        },
    )
    .await;
    follower.abort();
    drop(terminal);
    result.map(drop)
}

/// What the loop does for the model's commands: the daemon client, or a script in tests.
pub trait Effects {
    /// Fetches timeline rows and sends them to the model as `Msg::Timeline`.
    fn fetch_timeline(&self, resource: String, fetch: Fetch, to_model: mpsc::Sender<Msg>);
    /// Fetches a lease's history and sends it to the model as `Msg::LeaseHistory`.
    fn fetch_lease_history(&self, resource: String, fetch: LeaseFetch, to_model: mpsc::Sender<Msg>);
    /// Fetches an incident's report and sends it to the model as `Msg::Report`.
    fn fetch_report(&self, id: i64, to_model: mpsc::Sender<Msg>);
    /// Writes a report to a file: `Ok(path)` or why not.
    fn save_report(&self, path: &str, text: &str) -> Result<String, String> {
        std::fs::write(path, text)
            .map(|()| path.to_owned())
            .map_err(|e| e.to_string())
    }
}

/// The loop's surroundings.
pub struct Loop<'a, E: Effects> {
    pub effects: &'a E,
    pub to_model: mpsc::Sender<Msg>,
    pub header: view::Header<'a>,
    pub theme: Theme,
    /// Seconds since the epoch (tests give a clock that follows paused tokio time).
    pub clock: &'a (dyn Fn() -> i64 + Sync),
}

/// The loop, generic over the backend so that tests can drive it headless.
pub async fn run_loop<B: Backend, E: Effects>(
    terminal: &mut Terminal<B>,
    mut model: Model,
    mut messages: mpsc::Receiver<Msg>,
    keys: impl Stream<Item = crossterm::event::KeyEvent> + Unpin,
    env: Loop<'_, E>,
) -> Result<Model, TerminalError>
where
    B::Error: Send + Sync + 'static,
{
    let mut keys = keys;
    let mut frames = tokio::time::interval(FRAME);
    frames.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Skip);
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
                model.update(Msg::Tick { now: (env.clock)() });
                terminal
                    .draw(|frame| view::render(frame, &model, env.header, env.theme))
                    .map_err(|e| TerminalError::Draw(Box::new(e)))?;
                None
            }
        };
        match command {
            Some(Command::Quit) => return Ok(model),
            Some(Command::FetchTimeline { resource, fetch }) => {
                env.effects
                    .fetch_timeline(resource, fetch, env.to_model.clone());
            }
            Some(Command::FetchLeaseHistory { resource, fetch }) => {
                env.effects
                    .fetch_lease_history(resource, fetch, env.to_model.clone());
            }
            Some(Command::FetchReport { id }) => {
                env.effects.fetch_report(id, env.to_model.clone());
            }
            Some(Command::SaveReport { path, text }) => {
                let saved = env.effects.save_report(&path, &text);
                model.update(Msg::ReportSaved(saved));
            }
            None => {}
        }
    }
}

/// Turns a key press into a message: typed text while the filter is being edited, else the
/// bound action; `None` for a key that means nothing here.
fn key_message(model: &Model, key: crossterm::event::KeyEvent) -> Option<Msg> {
    let ctrl_c = key
        .modifiers
        .contains(crossterm::event::KeyModifiers::CONTROL)
        && key.code == KeyCode::Char('c');
    // Ctrl-C quits even while typing, where every other character goes into the filter.
    if model.editing_filter && !ctrl_c {
        return match key.code {
            KeyCode::Char(c) => Some(Msg::FilterInput(c)),
            KeyCode::Backspace => Some(Msg::FilterBackspace),
            KeyCode::Enter => Some(Msg::FilterApply),
            KeyCode::Esc => Some(Msg::Key(model::Action::Back)),
            _ => None,
        };
    }
    keys::action_for(key).map(Msg::Key)
}

#[derive(Debug, thiserror::Error)]
pub enum TerminalError {
    #[error("failed to set up the terminal")]
    Setup(#[source] std::io::Error),
    #[error("failed to draw")]
    Draw(#[source] Box<dyn std::error::Error + Send + Sync>),
}

/// The terminal in raw mode on the alternate screen, restored when dropped, on error, and (by
/// the hook ratatui installs) on panic.
struct TerminalGuard {
    terminal: ratatui::DefaultTerminal,
}

impl TerminalGuard {
    fn enter() -> Result<Self, TerminalError> {
        let terminal = ratatui::try_init().map_err(TerminalError::Setup)?;
        Ok(Self { terminal })
    }
}

impl Drop for TerminalGuard {
    fn drop(&mut self) {
        ratatui::restore();
    }
}

#[cfg(test)]
pub(crate) mod fixtures {
    //! A dashboard mid-incident, at a fixed time, for model tests and snapshots.
    use super::model::{Model, Msg};
    use crate::api::events::AlertView;
    use crate::api::events::{DaemonEvent, OverlapEvent, PerOutcome, StatsEvent, WriteEvent};
    use crate::client::Attach;
    use crate::domain::alert::AlertState;
    use crate::domain::{Outcome, Overlap, OverlapState};
    use chrono::{DateTime, Utc};
    use std::sync::Arc;

    pub const NOW: i64 = 1_764_474_000; // 2025-11-30T03:40:00Z

    pub fn at(seconds_before_now: i64) -> DateTime<Utc> {
        DateTime::from_timestamp(NOW - seconds_before_now, 123_456_000).unwrap_or_default()
    }

    pub fn row(
        id: i64,
        outcome: &str,
        resource: &str,
        token: i64,
        highest: i64,
        owner: &str,
    ) -> Arc<WriteEvent> {
        let outcome = Outcome::parse(outcome).unwrap_or(Outcome::Invalid);
        Arc::new(WriteEvent {
            id,
            at: at(2),
            resource: resource.into(),
            outcome,
            token: Some(token),
            highest_token: highest,
            revision: id,
            idempotency_key: None,
            expected_revision: None,
            owner: Some(owner.into()),
            lease: None,
            body_sha256: None,
            body_len: None,
            detail: outcome
                .is_rejection()
                .then(|| "generation was superseded".to_owned()),
            caller: None,
            source: None,
        })
    }

    pub fn write(
        id: i64,
        outcome: &str,
        resource: &str,
        token: i64,
        highest: i64,
        owner: &str,
    ) -> Msg {
        Msg::Event(DaemonEvent::Write(row(
            id, outcome, resource, token, highest, owner,
        )))
    }

    pub fn overlap(
        id: i64,
        resource: &str,
        stale: i64,
        newer: i64,
        count: i64,
        state: &str,
    ) -> OverlapEvent {
        OverlapEvent {
            overlap: Overlap {
                id,
                resource: resource.into(),
                source: None,
                stale_token: stale,
                superseding_token: newer,
                stale_owner: Some(format!("worker-{stale}")),
                superseding_owner: Some(format!("worker-{newer}")),
                first_seen: at(10),
                last_seen: at(id),
                rejected_writes: count,
                state: OverlapState::parse(state).unwrap_or(OverlapState::Open),
                closed_at: None,
            },
            change: None,
        }
    }

    fn alert(rule: &str, resource: Option<&str>, state: AlertState, value: i64) -> AlertView {
        AlertView {
            rule: rule.into(),
            resource: resource.map(str::to_owned),
            source: None,
            state,
            since: Some("2025-11-30T03:39:55.000000Z".into()),
            fired_at: None,
            value,
            threshold: 20,
            window_seconds: 60.0,
            for_seconds: 0.0,
            keep_firing_for_seconds: 0.0,
            labels: Default::default(),
            summary: String::new(),
        }
    }

    pub fn incident() -> Model {
        let mut model = Model::new();
        model.update(Msg::Tick { now: NOW - 2 });
        for msg in incident_messages() {
            model.update(msg);
        }
        model.update(Msg::Tick { now: NOW });
        model
    }

    /// What the daemon sends in the incident: attach, then a few writes.
    pub fn incident_messages() -> Vec<Msg> {
        let mut messages = vec![Msg::Connected {
            replayed_from: None,
        }];
        messages.push(Msg::Attached(Box::new(Attach {
            overlaps: vec![
                overlap(1, "accounts/totals", 7, 8, 4, "open").overlap,
                overlap(2, "billing/ledger", 3, 5, 1, "closed").overlap,
            ],
            alerts: vec![
                alert("StaleOwnerSpike", None, AlertState::Firing, 25),
                alert(
                    "StaleOwnerSpikePerResource",
                    Some("accounts/totals"),
                    AlertState::Pending,
                    11,
                ),
            ],
            stats: StatsEvent {
                totals: PerOutcome {
                    accepted: 1200,
                    stale: 31,
                    superseded: 7,
                    replayed: 3,
                    ..PerOutcome::default()
                },
                rates: Default::default(),
                open_overlaps: 1,
                firing_alerts: 1,
                events_dropped: 0,
                through_audit_id: 0,
                sources: Default::default(),
            },
            writes: Vec::new(),
        })));
        for id in 1..=6 {
            messages.push(write(id, "accepted", "accounts/totals", 8, 8, "worker-8"));
        }
        messages.push(write(7, "stale", "accounts/totals", 7, 8, "worker-7"));
        messages.push(write(8, "superseded", "billing/ledger", 3, 5, "worker-3"));
        messages
    }

    /// A daemon that also watches the user's database `shop` (`serve --watch`): its stats, a
    /// stale write to `orders/eu` there (id 3 of that database's audit), the overlap it opened
    /// and the alert it fired.
    pub fn watched_messages() -> Vec<Msg> {
        use crate::api::events::SourceStats;
        let stats = StatsEvent {
            totals: PerOutcome {
                accepted: 1200,
                stale: 31,
                ..PerOutcome::default()
            },
            rates: Default::default(),
            open_overlaps: 1,
            firing_alerts: 1,
            events_dropped: 0,
            through_audit_id: 8,
            sources: [(
                "shop".to_owned(),
                SourceStats {
                    totals: PerOutcome {
                        accepted: 40,
                        stale: 2,
                        ..PerOutcome::default()
                    },
                    rates: Default::default(),
                    open_overlaps: 1,
                    through_id: 3,
                    up: true,
                },
            )]
            .into_iter()
            .collect(),
        };
        let mut stale = (*row(3, "stale", "orders/eu", 7, 8, "old-owner")).clone();
        stale.source = Some("shop".into());
        stale.at = at(1);
        let mut opened = overlap(3, "orders/eu", 7, 8, 2, "open");
        opened.overlap.source = Some("shop".into());
        opened.overlap.last_seen = at(1);
        let mut fired = alert(
            "StaleOwnerSpikePerResource",
            Some("orders/eu"),
            AlertState::Firing,
            12,
        );
        fired.source = Some("shop".into());
        vec![
            Msg::Event(DaemonEvent::Stats(Arc::new(stats))),
            Msg::Event(DaemonEvent::Write(Arc::new(stale))),
            Msg::Event(DaemonEvent::Overlap(Arc::new(opened))),
            Msg::Event(DaemonEvent::Alert(Arc::new(fired))),
        ]
    }
}
