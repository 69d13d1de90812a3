//! Drawing: a pure function of the model. Colour only ever repeats what the text says.

use super::keys::BINDINGS;
use super::model::{Connection, Model, View};
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::{
    Block, Cell, Clear, Paragraph, Row, Sparkline, Table, TableState, Tabs, Wrap,
};
use ratatui::Frame;
use serde_json::Value;

/// Colours, or none (`NO_COLOR`, `--no-color`).
#[derive(Debug, Clone, Copy)]
pub struct Theme {
    pub color: bool,
}

impl Theme {
    fn fg(self, color: Color) -> Style {
        if self.color {
            Style::default().fg(color)
        } else {
            Style::default()
        }
    }

    fn bold(self) -> Style {
        Style::default().add_modifier(Modifier::BOLD)
    }

    fn outcome(self, outcome: &str) -> Style {
        self.fg(match outcome {
            "accepted" | "replayed" => Color::Green,
            "stale" | "superseded" => Color::Red,
            "unauthorized" | "lease_expired" => Color::Magenta,
            _ => Color::Yellow,
        })
    }

    fn state(self, state: &str) -> Style {
        match state {
            "firing" | "open" => self.fg(Color::Red).add_modifier(Modifier::BOLD),
            "pending" => self.fg(Color::Yellow),
            _ => self.fg(Color::DarkGray),
        }
    }
}

pub fn render(frame: &mut Frame, model: &Model, url: &str, theme: Theme) {
    let [header, tabs, body, footer] = Layout::vertical([
        Constraint::Length(1),
        Constraint::Length(1),
        Constraint::Min(3),
        Constraint::Length(1),
    ])
    .areas(frame.area());
    render_header(frame, header, model, url, theme);
    render_tabs(frame, tabs, model, theme);
    match model.view {
        View::Overview => render_overview(frame, body, model, theme),
        View::Overlaps => render_overlaps(frame, body, model, theme),
        View::Rejections => render_rejections(frame, body, model, theme),
        View::Alerts => render_alerts(frame, body, model, theme),
        View::Timeline => render_timeline(frame, body, model, theme),
    }
    render_footer(frame, footer, model, theme);
    if model.help {
        render_help(frame, body, theme);
    }
}

fn render_header(frame: &mut Frame, area: Rect, model: &Model, url: &str, theme: Theme) {
    let mut spans = vec![
        Span::styled("fencewatch ", theme.bold()),
        Span::raw(url.to_owned()),
        Span::raw("  "),
    ];
    spans.push(match &model.connection {
        Connection::Connecting => Span::styled("CONNECTING", theme.fg(Color::Yellow)),
        Connection::Live => {
            Span::styled("LIVE", theme.fg(Color::Green).add_modifier(Modifier::BOLD))
        }
        Connection::Reconnecting {
            attempt, retry_in, ..
        } => Span::styled(
            format!(
                "RECONNECTING in {:.1}s (attempt {attempt})",
                retry_in.as_secs_f64()
            ),
            theme.fg(Color::Red).add_modifier(Modifier::BOLD),
        ),
    });
    match model.data_age() {
        Some(age) => spans.push(Span::raw(format!("  data {age}s old"))),
        None => spans.push(Span::raw("  no data yet")),
    }
    if model.missed > 0 {
        spans.push(Span::styled(
            format!("  missed {} (replayed)", model.missed),
            theme.fg(Color::Yellow),
        ));
    }
    if model.events_dropped > 0 {
        spans.push(Span::raw(format!("  dropped {}", model.events_dropped)));
    }
    if model.paused {
        spans.push(Span::styled(
            format!("  PAUSED ({} held)", model.held.len()),
            theme
                .fg(Color::Black)
                .bg_if(theme, Color::Yellow)
                .add_modifier(Modifier::BOLD),
        ));
    }
    frame.render_widget(Paragraph::new(Line::from(spans)), area);
}

trait StyleExt {
    fn bg_if(self, theme: Theme, color: Color) -> Style;
}

impl StyleExt for Style {
    fn bg_if(self, theme: Theme, color: Color) -> Style {
        if theme.color {
            self.bg(color)
        } else {
            self.add_modifier(Modifier::REVERSED)
        }
    }
}

fn render_tabs(frame: &mut Frame, area: Rect, model: &Model, theme: Theme) {
    let titles: Vec<Line> = View::TABS
        .iter()
        .enumerate()
        .map(|(i, view)| {
            let label = match view {
                View::Overlaps => format!(
                    "{} {} ({} open)",
                    i + 1,
                    view.title(),
                    model.open_overlaps()
                ),
                View::Alerts => format!(
                    "{} {} ({} firing)",
                    i + 1,
                    view.title(),
                    model.firing_alerts()
                ),
                _ => format!("{} {}", i + 1, view.title()),
            };
            Line::from(label)
        })
        .collect();
    let selected = View::TABS.iter().position(|v| *v == model.view);
    let tabs = Tabs::new(titles)
        .select(selected)
        .highlight_style(theme.bold().add_modifier(Modifier::REVERSED));
    frame.render_widget(tabs, area);
}

fn render_footer(frame: &mut Frame, area: Rect, model: &Model, theme: Theme) {
    if model.editing_filter || !model.filter.is_empty() {
        let cursor = if model.editing_filter { "_" } else { "" };
        let line = Line::from(vec![
            Span::styled("filter: ", theme.bold()),
            Span::raw(format!("{}{cursor}", model.filter)),
            Span::raw("  (Enter/Esc to finish, Esc again to clear)"),
        ]);
        frame.render_widget(Paragraph::new(line), area);
        return;
    }
    let mut spans = Vec::new();
    for binding in BINDINGS.iter().filter(|b| b.footer) {
        spans.push(Span::styled(binding.label, theme.bold()));
        spans.push(Span::raw(format!(" {}  ", binding.description)));
    }
    frame.render_widget(Paragraph::new(Line::from(spans)), area);
}

fn clock(text: &Value) -> String {
    // RFC 3339 with microseconds: keep HH:MM:SS.
    text.as_str()
        .and_then(|t| t.get(11..19))
        .unwrap_or("-")
        .to_owned()
}

fn text(value: &Value) -> String {
    match value {
        Value::Null => "-".to_owned(),
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

fn render_overview(frame: &mut Frame, area: Rect, model: &Model, theme: Theme) {
    // Taller charts when the terminal has the room.
    let chart = if area.height >= 26 { 7 } else { 4 };
    let [totals, accepted, rejected, bottom] = Layout::vertical([
        Constraint::Length(4),
        Constraint::Length(chart),
        Constraint::Length(chart),
        Constraint::Min(3),
    ])
    .areas(area);
    let total = |name: &str| model.totals.get(name).copied().unwrap_or(0);
    let lines = vec![
        Line::from(vec![
            Span::styled(
                format!("accepted {}", total("accepted")),
                theme.outcome("accepted"),
            ),
            Span::raw(format!("  replayed {}", total("replayed"))),
            Span::styled(
                format!("  stale {}", total("stale")),
                theme.outcome("stale"),
            ),
            Span::styled(
                format!("  superseded {}", total("superseded")),
                theme.outcome("superseded"),
            ),
        ]),
        Line::from(vec![
            Span::raw(format!("revision conflicts {}", total("revision_conflict"))),
            Span::raw(format!("  key reuse {}", total("idempotency_conflict"))),
            Span::raw(format!("  invalid {}", total("invalid"))),
            Span::raw(format!("  unauthorized {}", total("unauthorized"))),
            Span::raw(format!("  lease expired {}", total("lease_expired"))),
        ]),
    ];
    let block = Block::bordered().title(Line::from(vec![
        Span::styled(" Totals ", theme.bold()),
        Span::styled(
            format!(" {} open overlaps ", model.open_overlaps()),
            theme.state(if model.open_overlaps() > 0 {
                "open"
            } else {
                "closed"
            }),
        ),
        Span::styled(
            format!(" {} firing alerts ", model.firing_alerts()),
            theme.state(if model.firing_alerts() > 0 {
                "firing"
            } else {
                "inactive"
            }),
        ),
    ]));
    frame.render_widget(Paragraph::new(lines).block(block), totals);

    let (ok, refused) = model.series();
    let window = model.window_seconds();
    let peak = |series: &[u64]| series.iter().copied().max().unwrap_or(0);
    let last = |series: &[u64]| series.last().copied().unwrap_or(0);
    frame.render_widget(
        Sparkline::default()
            .block(Block::bordered().title(format!(
                " accepted/s over {window}s: now {} peak {} ",
                last(&ok),
                peak(&ok)
            )))
            .data(&ok)
            .style(theme.fg(Color::Green)),
        accepted,
    );
    frame.render_widget(
        Sparkline::default()
            .block(Block::bordered().title(format!(
                " rejected/s over {window}s: now {} peak {} ",
                last(&refused),
                peak(&refused)
            )))
            .data(&refused)
            .style(theme.fg(Color::Red)),
        rejected,
    );
    let recent: Vec<Line> = model
        .visible_rejections()
        .into_iter()
        .take(bottom.height.saturating_sub(2) as usize)
        .map(|row| rejection_line(row, theme))
        .collect();
    let recent = if recent.is_empty() {
        vec![Line::from("no rejected writes yet")]
    } else {
        recent
    };
    frame.render_widget(
        Paragraph::new(recent).block(Block::bordered().title(" Latest rejections ")),
        bottom,
    );
}

fn rejection_line(row: &Value, theme: Theme) -> Line<'static> {
    let outcome = row["outcome"].as_str().unwrap_or("-").to_owned();
    Line::from(vec![
        Span::raw(format!("{} ", clock(&row["at"]))),
        Span::styled(format!("{outcome:<12}"), theme.outcome(&outcome)),
        Span::raw(format!(
            " {} gen {} < {} by {}",
            text(&row["resource"]),
            text(&row["token"]),
            text(&row["highest_token"]),
            text(&row["owner"])
        )),
    ])
}

fn table_state(selected: usize) -> TableState {
    TableState::default().with_selected(Some(selected))
}

fn render_overlaps(frame: &mut Frame, area: Rect, model: &Model, theme: Theme) {
    let rows: Vec<Row> = model
        .visible_overlaps()
        .into_iter()
        .map(|o| {
            let state = o["state"].as_str().unwrap_or("-");
            Row::new(vec![
                Cell::from(state.to_uppercase()).style(theme.state(state)),
                Cell::from(text(&o["resource"])),
                Cell::from(text(&o["stale_token"])),
                Cell::from(text(&o["superseding_token"])),
                Cell::from(text(&o["stale_owner"])),
                Cell::from(text(&o["superseding_owner"])),
                Cell::from(text(&o["rejected_writes"])),
                Cell::from(clock(&o["first_seen"])),
                Cell::from(clock(&o["last_seen"])),
            ])
        })
        .collect();
    let count = rows.len();
    let table = Table::new(
        rows,
        [
            Constraint::Length(6),
            Constraint::Fill(2),
            Constraint::Length(6),
            Constraint::Length(6),
            Constraint::Fill(1),
            Constraint::Fill(1),
            Constraint::Length(6),
            Constraint::Length(8),
            Constraint::Length(8),
        ],
    )
    .header(
        Row::new([
            "STATE",
            "RESOURCE",
            "STALE",
            "NEW",
            "STALE OWNER",
            "NEW OWNER",
            "COUNT",
            "FIRST",
            "LAST",
        ])
        .style(theme.bold()),
    )
    .row_highlight_style(Style::default().add_modifier(Modifier::REVERSED))
    .block(Block::bordered().title(format!(
        " Ownership overlaps: {count} (sorted by {}) ",
        model.sort.label()
    )));
    frame.render_stateful_widget(table, area, &mut table_state(model.selected));
}

fn render_rejections(frame: &mut Frame, area: Rect, model: &Model, theme: Theme) {
    let rows: Vec<Row> = model
        .visible_rejections()
        .into_iter()
        .map(|r| {
            let outcome = r["outcome"].as_str().unwrap_or("-");
            Row::new(vec![
                Cell::from(clock(&r["at"])),
                Cell::from(outcome.to_owned()).style(theme.outcome(outcome)),
                Cell::from(text(&r["resource"])),
                Cell::from(text(&r["token"])),
                Cell::from(text(&r["highest_token"])),
                Cell::from(text(&r["owner"])),
            ])
        })
        .collect();
    let count = rows.len();
    let table = Table::new(
        rows,
        [
            Constraint::Length(8),
            Constraint::Length(18),
            Constraint::Fill(2),
            Constraint::Length(7),
            Constraint::Length(7),
            Constraint::Fill(1),
        ],
    )
    .header(
        Row::new(["TIME", "OUTCOME", "RESOURCE", "TOKEN", "HIGHEST", "OWNER"]).style(theme.bold()),
    )
    .row_highlight_style(Style::default().add_modifier(Modifier::REVERSED))
    .block(Block::bordered().title(format!(" Rejected writes: {count} ")));
    frame.render_stateful_widget(table, area, &mut table_state(model.selected));
}

fn render_alerts(frame: &mut Frame, area: Rect, model: &Model, theme: Theme) {
    let rows: Vec<Row> = model
        .alerts
        .values()
        .map(|a| {
            let state = a["state"].as_str().unwrap_or("-");
            Row::new(vec![
                Cell::from(state.to_uppercase()).style(theme.state(state)),
                Cell::from(text(&a["rule"])),
                Cell::from(text(&a["resource"])),
                Cell::from(format!("{} > {}", text(&a["value"]), text(&a["threshold"]))),
                Cell::from(clock(&a["since"])),
            ])
        })
        .collect();
    let table = Table::new(
        rows,
        [
            Constraint::Length(9),
            Constraint::Fill(2),
            Constraint::Fill(2),
            Constraint::Length(10),
            Constraint::Length(8),
        ],
    )
    .header(Row::new(["STATE", "RULE", "RESOURCE", "VALUE", "SINCE"]).style(theme.bold()))
    .row_highlight_style(Style::default().add_modifier(Modifier::REVERSED))
    .block(Block::bordered().title(" Alerts "));
    frame.render_stateful_widget(table, area, &mut table_state(model.selected));
}

fn render_timeline(frame: &mut Frame, area: Rect, model: &Model, theme: Theme) {
    let Some((resource, rows)) = &model.timeline else {
        return;
    };
    let table_rows: Vec<Row> = rows
        .iter()
        .map(|r| {
            let outcome = r["outcome"].as_str().unwrap_or("-");
            Row::new(vec![
                Cell::from(clock(&r["at"])),
                Cell::from(outcome.to_owned()).style(theme.outcome(outcome)),
                Cell::from(text(&r["token"])),
                Cell::from(text(&r["highest_token"])),
                Cell::from(text(&r["revision"])),
                Cell::from(text(&r["owner"])),
                Cell::from(text(&r["detail"])),
            ])
        })
        .collect();
    let title = if rows.is_empty() {
        format!(" Timeline of {resource}: loading… (Esc back) ")
    } else {
        format!(
            " Timeline of {resource}: {} writes, oldest first (Esc back) ",
            rows.len()
        )
    };
    let table = Table::new(
        table_rows,
        [
            Constraint::Length(8),
            Constraint::Length(18),
            Constraint::Length(6),
            Constraint::Length(7),
            Constraint::Length(4),
            Constraint::Length(10),
            Constraint::Fill(1),
        ],
    )
    .header(
        Row::new([
            "TIME", "OUTCOME", "TOKEN", "HIGHEST", "REV", "OWNER", "DETAIL",
        ])
        .style(theme.bold()),
    )
    .row_highlight_style(Style::default().add_modifier(Modifier::REVERSED))
    .block(Block::bordered().title(title));
    frame.render_stateful_widget(table, area, &mut table_state(model.selected));
}

fn render_help(frame: &mut Frame, area: Rect, theme: Theme) {
    let width = 44.min(area.width);
    let height = (BINDINGS.len() as u16 + 2).min(area.height);
    let popup = Rect {
        x: area.x + (area.width.saturating_sub(width)) / 2,
        y: area.y + (area.height.saturating_sub(height)) / 2,
        width,
        height,
    };
    let lines: Vec<Line> = BINDINGS
        .iter()
        .map(|b| {
            Line::from(vec![
                Span::styled(format!("{:>7}  ", b.label), theme.bold()),
                Span::raw(b.description),
            ])
        })
        .collect();
    frame.render_widget(Clear, popup);
    frame.render_widget(
        Paragraph::new(lines)
            .wrap(Wrap { trim: false })
            .block(Block::bordered().title(" Keys (? or Esc to close) ")),
        popup,
    );
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tui::fixtures::incident;
    use crate::tui::keys::Action;
    use crate::tui::model::Msg;
    use ratatui::backend::TestBackend;
    use ratatui::Terminal;
    use std::time::Duration;

    const URL: &str = "http://127.0.0.1:7420";

    fn draw(model: &Model, width: u16, height: u16, color: bool) -> Terminal<TestBackend> {
        let mut terminal = Terminal::new(TestBackend::new(width, height)).unwrap();
        terminal
            .draw(|frame| render(frame, model, URL, Theme { color }))
            .unwrap();
        terminal
    }

    fn snapshot(name: &str, model: &Model) {
        for (width, height) in [(100, 30), (80, 24)] {
            let terminal = draw(model, width, height, true);
            insta::assert_snapshot!(format!("{name}_{width}x{height}"), terminal.backend());
        }
    }

    fn in_view(action: Action) -> Model {
        let mut model = incident();
        model.update(Msg::Key(action));
        model
    }

    #[test]
    fn overview() {
        snapshot("overview", &incident());
    }

    #[test]
    fn overlaps() {
        snapshot("overlaps", &in_view(Action::Show(View::Overlaps)));
    }

    #[test]
    fn rejections() {
        snapshot("rejections", &in_view(Action::Show(View::Rejections)));
    }

    #[test]
    fn alerts() {
        snapshot("alerts", &in_view(Action::Show(View::Alerts)));
    }

    #[test]
    fn timeline() {
        let mut model = in_view(Action::Show(View::Overlaps));
        model.update(Msg::Key(Action::Open));
        model.update(Msg::Timeline {
            resource: "accounts/totals".into(),
            rows: model.rejections.iter().rev().cloned().collect(),
        });
        snapshot("timeline", &model);
    }

    #[test]
    fn paused() {
        let mut model = incident();
        model.update(Msg::Key(Action::Pause));
        model.update(crate::tui::fixtures::write(
            9,
            "stale",
            "accounts/totals",
            6,
            8,
            "worker-6",
        ));
        snapshot("paused", &model);
    }

    #[test]
    fn reconnecting() {
        let mut model = incident();
        model.update(Msg::Disconnected {
            attempt: 4,
            retry_in: Duration::from_millis(2000),
            error: "connection refused".into(),
        });
        snapshot("reconnecting", &model);
    }

    #[test]
    fn help_open() {
        snapshot("help", &in_view(Action::Help));
    }

    #[test]
    fn filtering() {
        let mut model = in_view(Action::Show(View::Rejections));
        model.update(Msg::Key(Action::Filter));
        for c in "billing".chars() {
            model.update(Msg::FilterInput(c));
        }
        snapshot("filtering", &model);
    }

    /// Without colour the screen says the same, and no cell carries a colour.
    #[test]
    fn no_colour() {
        let model = incident();
        let colored = draw(&model, 100, 30, true);
        let plain = draw(&model, 100, 30, false);
        assert_eq!(colored.backend().to_string(), plain.backend().to_string());
        let cells = &plain.backend().buffer().content;
        assert!(cells
            .iter()
            .all(|cell| cell.fg == Color::Reset && cell.bg == Color::Reset));
        assert!(colored
            .backend()
            .buffer()
            .content
            .iter()
            .any(|cell| cell.fg != Color::Reset));
        insta::assert_snapshot!("no_colour_100x30", plain.backend());
    }
}
