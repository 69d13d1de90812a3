//! What every screen shares: the header (daemon, connection, freshness), the tabs, and the
//! footer (the keys, or the filter being typed).

use super::{second_clock, Theme};
use crate::tui::keys::BINDINGS;
use crate::tui::model::{Connection, Model, View};
use ratatui::layout::Rect;
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Paragraph, Tabs};
use ratatui::Frame;

pub fn header(frame: &mut Frame, area: Rect, model: &Model, url: &str, theme: Theme) {
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

pub fn tabs(frame: &mut Frame, area: Rect, model: &Model, theme: Theme) {
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

pub fn footer(frame: &mut Frame, area: Rect, model: &Model, theme: Theme) {
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
