//! Drawing: a pure function of the model. Colour only ever repeats what the text says.

use super::keys::BINDINGS;
use super::model::{Connection, Model, View};
use crate::domain::Outcome;
use chrono::{DateTime, Utc};
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Clear, Paragraph, TableState, Tabs, Wrap};
use ratatui::Frame;

mod overview;
mod tables;
#[cfg(test)]
mod tests;
mod timeline;

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

    fn outcome(self, outcome: Outcome) -> Style {
        self.fg(match outcome {
            Outcome::Accepted | Outcome::Replayed => Color::Green,
            Outcome::Stale | Outcome::Superseded => Color::Red,
            Outcome::Unauthorized | Outcome::LeaseExpired => Color::Magenta,
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
        View::Overview => overview::render(frame, body, model, theme),
        View::Overlaps => tables::overlaps(frame, body, model, theme),
        View::Rejections => tables::rejections(frame, body, model, theme),
        View::Alerts => tables::alerts(frame, body, model, theme),
        View::Timeline => timeline::render(frame, body, model, theme),
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
    // Paused, the screen is as of the pause: say so instead of how fresh the data is.
    match (model.paused_at, model.data_age()) {
        (Some(at), _) => spans.push(Span::styled(
            format!(
                "  PAUSED {} held, view at {}",
                model.held.len(),
                second_clock(at)
            ),
            theme
                .fg(Color::Black)
                .bg_if(theme, Color::Yellow)
                .add_modifier(Modifier::BOLD),
        )),
        (None, Some(age)) => spans.push(Span::raw(format!("  data {age}s old"))),
        (None, None) => spans.push(Span::raw("  no data yet")),
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

/// HH:MM:SS of a time.
fn clock(at: &DateTime<Utc>) -> String {
    at.format("%H:%M:%S").to_string()
}

/// HH:MM:SS.mmm: writes of one incident are often within a second of each other.
fn clock_millis(at: &DateTime<Utc>) -> String {
    at.format("%H:%M:%S%.3f").to_string()
}

fn second_clock(second: i64) -> String {
    DateTime::from_timestamp(second, 0).map_or_else(|| "-".to_owned(), |at| clock(&at))
}

fn or_dash(text: Option<&str>) -> &str {
    text.unwrap_or("-")
}

/// An outcome in at most 13 columns, in words.
fn outcome_label(outcome: Outcome) -> &'static str {
    match outcome {
        Outcome::RevisionConflict => "rev conflict",
        Outcome::IdempotencyConflict => "key reuse",
        Outcome::LeaseExpired => "lease expired",
        other => other.as_str(),
    }
}

/// "61 < 62": the generation written with, against the highest accepted.
fn generations(token: Option<i64>, highest: i64) -> String {
    match token {
        Some(token) if token < highest => format!("{token} < {highest}"),
        Some(token) => token.to_string(),
        None => "-".to_owned(),
    }
}

fn table_state(selected: usize) -> TableState {
    TableState::default().with_selected(Some(selected))
}

/// Whether a table has room for its optional columns.
fn wide(area: Rect) -> bool {
    area.width >= 100
}

fn render_help(frame: &mut Frame, area: Rect, theme: Theme) {
    // Two columns of keys when one does not fit the height.
    let halves = if BINDINGS.len() as u16 + 2 > area.height {
        2
    } else {
        1
    };
    let per_column = BINDINGS.len().div_ceil(halves);
    let width = (40 * halves as u16).min(area.width);
    let height = (per_column as u16 + 2).min(area.height);
    let popup = Rect {
        x: area.x + (area.width.saturating_sub(width)) / 2,
        y: area.y + (area.height.saturating_sub(height)) / 2,
        width,
        height,
    };
    let entry = |b: &super::keys::Binding| {
        vec![
            Span::styled(format!("{:>7}  ", b.label), theme.bold()),
            Span::raw(format!("{:<29}", b.description)),
        ]
    };
    let lines: Vec<Line> = (0..per_column)
        .map(|i| {
            let mut spans = Vec::new();
            for column in 0..halves {
                if let Some(binding) = BINDINGS.get(column * per_column + i) {
                    spans.extend(entry(binding));
                }
            }
            Line::from(spans)
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
