//! The dashboard as a user drives it: the real event loop on a `TestBackend`, with scripted
//! keys and daemon messages under paused tokio time, snapshotted at 80×24 and 160×45.

use crate::domain::incident::IncidentReport;
use crate::domain::lease_history::{LeaseChange, LeaseEvent};
use crate::tui::fixtures::{at, incident_messages, row, watched_messages, NOW};
use crate::tui::model::timeline::{Fetch, LeaseFetch, Page};
use crate::tui::model::{Model, Msg};
use crate::tui::view::Theme;
use crate::tui::{run_loop, Effects, Loop};
use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use futures_util::StreamExt;
use ratatui::backend::TestBackend;
use ratatui::style::Color;
use ratatui::Terminal;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::mpsc;

const URL: &str = "http://127.0.0.1:7420";
const SIZES: [(u16, u16); 2] = [(80, 24), (160, 45)];

/// One step of a script.
#[derive(Clone)]
enum Step {
    Key(KeyCode),
    Msg(Msg),
    Wait(u64),
}

/// Answers timeline requests from a canned audit of `accounts/totals`: generation 7's writes,
/// then generation 8's, then 7 again (refused, the overlap's first stale write, id 31).
struct Audit;

pub fn audit_rows() -> Vec<Arc<crate::api::events::WriteEvent>> {
    (1..=40)
        .map(|id| {
            let (outcome, token, owner) = match id {
                1..=20 => ("accepted", 7, "worker-7"),
                31 => ("stale", 7, "worker-7"),
                _ => ("accepted", 8, "worker-8"),
            };
            let highest = if id <= 20 { 7 } else { 8 };
            let mut r = (*row(id, outcome, "accounts/totals", token, highest, owner)).clone();
            r.at = at(40 - id / 4);
            r.lease = Some("accounts/totals".to_owned());
            Arc::new(r)
        })
        .collect()
}

/// The lease `accounts/totals` behind those writes: worker-7 holds generation 7 and renews
/// until it pauses; its grant lapses at the moment worker-8 is granted generation 8 (35 s
/// before now), two seconds before worker-7's refused write.
pub fn lease_events() -> Vec<LeaseEvent> {
    use LeaseChange::*;
    let event = |id, seconds, change, token: i64, until| LeaseEvent {
        id,
        at: at(seconds),
        event: change,
        holder: format!("worker-{token}"),
        token,
        expires_at: at(until),
    };
    vec![
        event(1, 41, Acquired, 7, 38),
        event(2, 39, Renewed, 7, 36),
        event(3, 37, Renewed, 7, 35),
        event(4, 35, Expired, 7, 35),
        event(5, 35, Acquired, 8, 32),
        event(6, 33, Renewed, 8, 30),
        event(7, 31, Renewed, 8, 28),
        event(8, 29, Renewed, 8, 26),
    ]
}

/// The report the daemon would send for overlap 1 of `accounts/totals` (the lease history
/// above): worker-7 last renewed 37 s before now, lapsed at 35 s as worker-8 took over, and was
/// refused from 32 s.
pub fn report(id: i64) -> IncidentReport {
    IncidentReport {
        incident: id,
        resource: "accounts/totals".to_owned(),
        source: None,
        stale_generation: 7,
        stale_owner: Some("worker-7".to_owned()),
        superseding_generation: 8,
        superseding_owner: Some("worker-8".to_owned()),
        stale_last_active_at: Some(at(37)),
        stale_grant_lapsed_at: Some(at(35)),
        superseding_acquired_at: Some(at(35)),
        superseding_first_write_at: Some(at(34)),
        first_refused_at: Some(at(32)),
        last_refused_at: Some(at(30)),
        refused: 4,
        pause_ms: Some(5_000),
        zombie_lifetime_ms: Some(2_000),
        accepted_after_lapse: Some(0),
        timeline: Vec::new(),
    }
}

impl Effects for Audit {
    fn fetch_report(&self, id: i64, to_model: mpsc::Sender<Msg>) {
        let report = Box::new(report(id));
        tokio::spawn(async move {
            tokio::time::sleep(Duration::from_millis(10)).await;
            let _ = to_model.send(Msg::Report { id, report }).await;
        });
    }

    /// The file is not written in a test: its name and Markdown are checked instead.
    fn save_report(&self, path: &str, text: &str) -> Result<String, String> {
        assert_eq!(path, "incident-1.md");
        assert!(text.contains("| Pause | 5.000 s |"), "{text}");
        Ok(path.to_owned())
    }

    fn fetch_lease_history(
        &self,
        resource: String,
        fetch: LeaseFetch,
        to_model: mpsc::Sender<Msg>,
    ) {
        assert_eq!(fetch.lease, "accounts/totals");
        // Newest first, as the daemon answers.
        let mut events = lease_events();
        events.reverse();
        tokio::spawn(async move {
            tokio::time::sleep(Duration::from_millis(20)).await;
            let _ = to_model
                .send(Msg::LeaseHistory {
                    resource,
                    fetch,
                    events,
                })
                .await;
        });
    }

    fn fetch_timeline(&self, resource: String, fetch: Fetch, to_model: mpsc::Sender<Msg>) {
        let page = Page {
            rows: audit_rows(),
            at_start: true,
            at_end: true,
            focus: matches!(fetch, Fetch::Around(_)).then_some(31),
            fetch,
        };
        tokio::spawn(async move {
            tokio::time::sleep(Duration::from_millis(30)).await;
            let _ = to_model.send(Msg::Timeline { resource, page }).await;
        });
    }
}

/// Runs the loop through `steps` (after the incident's messages), then quits; returns the
/// last screen and the model.
async fn drive(width: u16, height: u16, steps: Vec<Step>, color: bool) -> (TestBackend, Model) {
    let mut terminal = Terminal::new(TestBackend::new(width, height)).unwrap();
    let (to_model, messages) = mpsc::channel(100);
    let (keys_in, keys_out) = mpsc::channel::<KeyEvent>(10);
    let keys = Box::pin(futures_util::stream::unfold(
        keys_out,
        |mut rx| async move { rx.recv().await.map(|key| (key, rx)) },
    ));
    let start = tokio::time::Instant::now();
    let clock = move || NOW - 2 + start.elapsed().as_secs() as i64;
    let sender = to_model.clone();
    let script = async move {
        for msg in incident_messages() {
            sender.send(msg).await.unwrap();
        }
        // Off the second boundary, so that a key never races the clock's tick.
        tokio::time::sleep(Duration::from_millis(2_450)).await;
        for step in steps {
            match step {
                Step::Key(code) => keys_in.send(KeyEvent::from(code)).await.unwrap(),
                Step::Msg(msg) => sender.send(msg).await.unwrap(),
                Step::Wait(ms) => tokio::time::sleep(Duration::from_millis(ms)).await,
            }
            tokio::time::sleep(Duration::from_millis(150)).await;
        }
        tokio::time::sleep(Duration::from_millis(300)).await;
        // Ctrl-C, not `q`: it quits even while a filter is being typed.
        keys_in
            .send(KeyEvent::new(KeyCode::Char('c'), KeyModifiers::CONTROL))
            .await
            .unwrap();
        keys_in
    };
    let run = run_loop(
        &mut terminal,
        Model::new(),
        messages,
        keys,
        Loop {
            effects: &Audit,
            to_model,
            header: super::Header {
                url: URL,
                note: None,
            },
            theme: Theme { color },
            clock: &clock,
        },
    );
    let (model, _keys) = tokio::join!(run, script);
    let model = model.unwrap();
    (terminal.backend().clone(), model)
}

async fn snapshot(name: &str, steps: Vec<Step>) {
    for (width, height) in SIZES {
        let (screen, _) = drive(width, height, steps.clone(), true).await;
        insta::assert_snapshot!(format!("{name}_{width}x{height}"), screen);
    }
}

fn keys(text: &str) -> Vec<Step> {
    text.chars().map(|c| Step::Key(KeyCode::Char(c))).collect()
}

#[tokio::test(start_paused = true)]
async fn overview() {
    snapshot("overview", vec![]).await;
}

#[tokio::test(start_paused = true)]
async fn overlaps() {
    snapshot("overlaps", keys("2")).await;
}

#[tokio::test(start_paused = true)]
async fn rejections() {
    snapshot("rejections", keys("3")).await;
}

#[tokio::test(start_paused = true)]
async fn alerts() {
    snapshot("alerts", keys("4")).await;
}

/// `steps` after the messages of a daemon that also watches the database `shop`.
fn watching(steps: Vec<Step>) -> Vec<Step> {
    watched_messages()
        .into_iter()
        .map(Step::Msg)
        .chain(steps)
        .collect()
}

/// With a watched database, each list says where its rows came from: `shop` or the daemon.
#[tokio::test(start_paused = true)]
async fn watched_overlaps() {
    snapshot("watched_overlaps", watching(keys("2"))).await;
}

#[tokio::test(start_paused = true)]
async fn watched_rejections() {
    snapshot("watched_rejections", watching(keys("3"))).await;
}

#[tokio::test(start_paused = true)]
async fn watched_alerts() {
    snapshot("watched_alerts", watching(keys("4"))).await;
}

/// The totals are the daemon's and `shop`'s together, and say so; the latest rejections name
/// their source.
#[tokio::test(start_paused = true)]
async fn watched_overview() {
    snapshot("watched_overview", watching(vec![])).await;
}

#[tokio::test(start_paused = true)]
async fn help() {
    snapshot("help", keys("?")).await;
}

#[tokio::test(start_paused = true)]
async fn filtering() {
    let mut steps = keys("3/billing");
    steps.push(Step::Key(KeyCode::Enter));
    snapshot("filtering", steps).await;
}

/// While typing, the footer says how to finish; after Enter it says the filter is on, on
/// every view it narrows (whose titles count what it leaves), and not where it narrows nothing.
#[tokio::test(start_paused = true)]
async fn a_filter_says_it_is_on_wherever_it_narrows() {
    let typing = keys("3/acc");
    let (screen, _) = drive(80, 24, typing.clone(), true).await;
    let footer = footer_line(&screen);
    assert_eq!(footer.trim_end(), "filter: acc_ · Enter apply · Esc clear");
    let mut applied = typing;
    applied.push(Step::Key(KeyCode::Enter));
    let on = r#"filter: "acc" · / edit · Esc clear"#;
    for view in ["1", "2", "3"] {
        let mut steps = applied.clone();
        steps.extend(keys(view));
        let (screen, model) = drive(80, 24, steps, true).await;
        assert!(!model.editing_filter);
        assert_eq!(footer_line(&screen).trim_end(), on, "view {view}");
    }
    let mut steps = applied.clone();
    steps.extend(keys("4"));
    let (screen, _) = drive(80, 24, steps, true).await;
    assert!(
        footer_line(&screen).starts_with("q quit"),
        "alerts: not filtered"
    );
    let mut steps = applied.clone();
    steps.extend(keys("1"));
    snapshot("filter_on_overview", steps).await;
    let mut cleared = applied;
    cleared.push(Step::Key(KeyCode::Esc));
    let (screen, model) = drive(80, 24, cleared, true).await;
    assert!(model.filter.is_empty());
    assert!(footer_line(&screen).starts_with("q quit"));
}

/// `+` at the closest zoom and `-` at the widest say so in the footer; a zoom that changes
/// the window says so too, and how the chart draws it at this width.
#[tokio::test(start_paused = true)]
async fn zooming_past_either_end_says_so() {
    snapshot("closest_zoom", keys("++")).await;
    let (screen, model) = drive(80, 24, keys("---"), true).await;
    assert_eq!(model.window_seconds(), 300);
    assert_eq!(
        footer_line(&screen).trim_end(),
        "already at the widest zoom (5m), drawn 5m12s wide at 4s per column"
    );
    let (screen, _) = drive(160, 45, keys("+"), true).await;
    assert_eq!(
        footer_line(&screen).trim_end(),
        "zoom: 30s window, drawn 31s wide at 5 columns a second"
    );
    // Each step draws differently, however wide the screen.
    let (screen, _) = drive(160, 45, keys("-"), true).await;
    assert_eq!(
        footer_line(&screen).trim_end(),
        "zoom: 2m window, drawn 2m38s wide at one second per column"
    );
    let (screen, _) = drive(160, 45, keys("--"), true).await;
    assert_eq!(
        footer_line(&screen).trim_end(),
        "zoom: 5m window, drawn 5m16s wide at 2s per column"
    );
}

/// The footer's text: the screen's last line.
fn footer_line(screen: &TestBackend) -> String {
    let buffer = screen.buffer();
    let last = buffer.area.height - 1;
    (0..buffer.area.width)
        .map(|x| buffer[(x, last)].symbol())
        .collect()
}

/// Enter on the overlap opens its timeline at the first stale write, with both generations
/// on the first screen.
#[tokio::test(start_paused = true)]
async fn timeline_opens_at_the_overlap() {
    let steps = vec![Step::Key(KeyCode::Char('2')), Step::Key(KeyCode::Enter)];
    for (width, height) in SIZES {
        let (screen, model) = drive(width, height, steps.clone(), true).await;
        let timeline = model.timeline.as_ref().unwrap();
        assert_eq!(timeline.selected_row().map(|r| r.id), Some(31));
        let text = screen.to_string();
        assert!(text.contains("◀ stale") && text.contains("  new"), "{text}");
        // Beside the writes, the lease's history; for the stale write, who held gen 7 then.
        assert!(text.contains("Lease accounts/totals: 8 events"), "{text}");
        assert!(text.contains("acquired     g8   worker-8"), "{text}");
        assert!(text.contains("expired      g7   worker-7"), "{text}");
        assert!(
            text.contains(
                "gen 7: worker-7's since 03:39:19, LAPSED 03:39:25.123; worker-8 held gen 8"
            ),
            "{text}"
        );
        let tenure = timeline.tenure().unwrap();
        assert_eq!(tenure.successor, Some(("worker-8".to_owned(), 8)));
        insta::assert_snapshot!(format!("timeline_{width}x{height}"), screen);
    }
}

/// The incident's facts head its timeline, and `w` writes its report to a file.
#[tokio::test(start_paused = true)]
async fn the_incident_report_heads_the_timeline_and_w_writes_it() {
    let steps = vec![
        Step::Key(KeyCode::Char('2')),
        Step::Key(KeyCode::Enter),
        Step::Wait(200),
        Step::Key(KeyCode::Char('w')),
    ];
    for (width, height) in SIZES {
        let (screen, model) = drive(width, height, steps.clone(), true).await;
        let timeline = model.timeline.as_ref().unwrap();
        assert_eq!(timeline.report, Some(report(1)));
        assert_eq!(
            timeline.saved.as_deref(),
            Some("report written to incident-1.md")
        );
        let text = screen.to_string();
        assert!(text.contains("Incident 1"), "{text}");
        assert!(text.contains("worker-7 g7 paused 5.000s"), "{text}");
        assert!(text.contains("report written to incident-1.md"), "{text}");
        insta::assert_snapshot!(format!("incident_report_{width}x{height}"), screen);
    }
}

#[tokio::test(start_paused = true)]
async fn paused_says_so_and_freezes_the_charts() {
    let mut steps = keys("p");
    steps.push(Step::Wait(3000));
    for id in 9..=12 {
        steps.push(Step::Msg(crate::tui::fixtures::write(
            id,
            "stale",
            "accounts/totals",
            6,
            8,
            "worker-6",
        )));
    }
    for (width, height) in SIZES {
        let (screen, model) = drive(width, height, steps.clone(), true).await;
        assert_eq!(model.held.len(), 4);
        assert!(screen.to_string().contains("PAUSED 4 held"));
        insta::assert_snapshot!(format!("paused_{width}x{height}"), screen);
    }
}

#[tokio::test(start_paused = true)]
async fn reconnecting() {
    snapshot(
        "reconnecting",
        vec![Step::Msg(Msg::Disconnected {
            attempt: 4,
            retry_in: Duration::from_millis(2000),
            error: "connection refused".into(),
        })],
    )
    .await;
}

/// The newest second is the rightmost column of the chart at either size.
#[tokio::test(start_paused = true)]
async fn the_newest_write_is_at_the_right_edge() {
    let (_, model) = drive(80, 24, vec![], true).await;
    for columns in [78, 158] {
        let series = model.series(columns);
        assert_eq!(series.accepted.len(), columns);
        // Written 2 s before the clock started; the loop ran about 3 s.
        let newest = series.accepted.iter().rposition(|n| *n > 0).unwrap();
        assert!(
            columns - newest <= 6,
            "{columns} columns, newest at {newest}"
        );
    }
}

/// Without colour the screen says the same, and no cell carries a colour.
#[tokio::test(start_paused = true)]
async fn no_colour() {
    let (colored, _) = drive(160, 45, vec![], true).await;
    let (plain, _) = drive(160, 45, vec![], false).await;
    assert_eq!(colored.to_string(), plain.to_string());
    assert!(plain
        .buffer()
        .content
        .iter()
        .all(|cell| cell.fg == Color::Reset && cell.bg == Color::Reset));
    assert!(colored
        .buffer()
        .content
        .iter()
        .any(|cell| cell.fg != Color::Reset));
}

/// A rejected write names its writer and, when known, who has the higher generation.
#[test]
fn refused_writes_say_whose_they_were() {
    use super::refused_write;
    assert_eq!(
        refused_write(Some("worker-0"), Some(2), 3, Some("worker-1")),
        "worker-0 wrote gen 2 < worker-1's 3"
    );
    assert_eq!(
        refused_write(Some("worker-0"), Some(2), 3, None),
        "worker-0 wrote gen 2 < 3"
    );
    assert_eq!(
        refused_write(None, Some(2), 3, None),
        "an unnamed writer wrote gen 2 < 3"
    );
    assert_eq!(
        refused_write(Some("worker-3"), Some(3), 3, None),
        "worker-3 wrote gen 3"
    );
    assert_eq!(
        refused_write(Some("w"), None, 3, None),
        "w wrote without a generation"
    );
}

/// The chart says how wide it is and, when it has data for less, for how long.
#[test]
fn chart_extents() {
    use super::overview::chart_extent;
    assert_eq!(chart_extent(158, Some(40)), "2m38s wide · data for 40s");
    assert_eq!(chart_extent(158, Some(600)), "2m38s wide");
    assert_eq!(chart_extent(78, None), "1m18s wide · no data yet");
}

#[test]
fn span_labels() {
    use super::overview::span_label;
    assert_eq!(span_label(45), "45s");
    assert_eq!(span_label(120), "2m");
    assert_eq!(span_label(156), "2m36s");
    let _ = StreamExt::boxed(futures_util::stream::empty::<()>());
}

/// The demo's note (its alert rules) follows the connection's state in the header.
#[test]
fn the_header_carries_the_callers_note() {
    let mut terminal = Terminal::new(TestBackend::new(160, 45)).unwrap();
    let note = "demo alerts page above 2 refused writes in 10s (serve's built-in: 20 in 1m)";
    terminal
        .draw(|frame| {
            super::render(
                frame,
                &Model::new(),
                super::Header {
                    url: URL,
                    note: Some(note),
                },
                Theme { color: false },
            )
        })
        .unwrap();
    let header: String = (0..160)
        .map(|x| terminal.backend().buffer()[(x, 0)].symbol().to_owned())
        .collect();
    assert!(
        header.starts_with("fencewatch http://127.0.0.1:7420  CONNECTING"),
        "{header}"
    );
    assert!(header.contains(note), "{header}");
}
