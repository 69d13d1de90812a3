//! What every screen shares: the header (daemon, connection, freshness), the tabs, and the
//! footer (the keys; the filter, being typed or on; or a notice about the last key).

use super::overview::span_label;
use super::{second_clock, Header, Theme};
use crate::tui::keys::BINDINGS;
use crate::tui::model::{ConnectionState, Model, Notice, View};
use ratatui::layout::Rect;
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Paragraph, Tabs};
use ratatui::Frame;

pub fn header(frame: &mut Frame, area: Rect, model: &Model, text: Header<'_>, theme: Theme) {
    let mut spans = vec![
        Span::styled("fencewatch ", theme.bold()),
        Span::raw(text.url.to_owned()),
        Span::raw("  "),
    ];
    spans.push(match &model.connection {
        ConnectionState::Connecting => Span::styled("CONNECTING", theme.fg(Color::Yellow)),
        ConnectionState::Live => {
            Span::styled("LIVE", theme.fg(Color::Green).add_modifier(Modifier::BOLD))
        }
        ConnectionState::Reconnecting {
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
    if let Some(note) = text.note {
        spans.push(Span::styled(format!("  {note}"), theme.fg(Color::Cyan)));
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
    let line = if let Some(notice) = model.notice() {
        Line::from(Span::styled(
            notice_text(notice, model, area),
            theme.fg(Color::Yellow).add_modifier(Modifier::BOLD),
        ))
    } else if model.editing_filter {
        Line::from(vec![
            Span::styled("filter: ", theme.bold()),
            Span::raw(format!("{}_ · ", model.filter)),
            Span::styled("Enter", theme.bold()),
            Span::raw(" apply · "),
            Span::styled("Esc", theme.bold()),
            Span::raw(" clear"),
        ])
    } else if model.filter_applies() {
        // Said on every view the filter narrows, so that it never narrows one silently.
        Line::from(vec![
            Span::styled("filter: ", theme.bold()),
            Span::raw(format!("\"{}\" · ", model.filter)),
            Span::styled("/", theme.bold()),
            Span::raw(" edit · "),
            Span::styled("Esc", theme.bold()),
            Span::raw(" clear"),
        ])
    } else {
        let mut spans = Vec::new();
        for binding in BINDINGS.iter().filter(|b| b.footer) {
            spans.push(Span::styled(binding.label, theme.bold()));
            spans.push(Span::raw(format!(" {}  ", binding.description)));
        }
        Line::from(spans)
    };
    frame.render_widget(Paragraph::new(line), area);
}

/// What the last key did, or why it did nothing, in words.
fn notice_text(notice: Notice, model: &Model, area: Rect) -> String {
    let window = span_label(model.window_seconds());
    let said = match notice {
        Notice::Zoomed => format!("zoom: {window} window"),
        Notice::ClosestZoom => format!("already at the closest zoom ({window})"),
        Notice::WidestZoom => format!("already at the widest zoom ({window})"),
        Notice::NoFilterHere => {
            return "/ filters the overview, overlaps and rejections, not this view".to_owned()
        }
    };
    // The overview's charts span the screen inside their border, in whole columns per second
    // or whole seconds per column: a little wider than the window unless it divides evenly.
    let series = model.series(usize::from(area.width.saturating_sub(2)));
    if series.span == model.window_seconds() {
        return said;
    }
    let per = match (series.step, series.widen) {
        (1, 1) => "one second per column".to_owned(),
        (1, widen) => format!("{widen} columns a second"),
        (step, _) => format!("{step}s per column"),
    };
    format!("{said}, drawn {} wide at {per}", span_label(series.span))
}
