//! The overview: totals, the two rate charts, the latest rejections.

use super::{clock, outcome_label, refused_write, Theme};
use crate::api::events::WriteEvent;
use crate::domain::Outcome;
use crate::tui::model::Model;
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::style::Color;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Paragraph, Sparkline};
use ratatui::Frame;

/// "45s", "2m36s": the span a chart covers.
pub fn span_label(seconds: u64) -> String {
    match (seconds / 60, seconds % 60) {
        (0, s) => format!("{s}s"),
        (m, 0) => format!("{m}m"),
        (m, s) => format!("{m}m{s:02}s"),
    }
}

/// "2m38s wide · data for 40s": how much time the chart spans and, when the dashboard has
/// data for less of it, how much, so that an empty left side is not read as a quiet one.
pub fn chart_extent(span: u64, charted: Option<u64>) -> String {
    let wide = format!("{} wide", span_label(span));
    match charted {
        None => format!("{wide} · no data yet"),
        Some(charted) if charted < span => format!("{wide} · data for {}", span_label(charted)),
        Some(_) => wide,
    }
}

pub fn render(frame: &mut Frame, area: Rect, model: &Model, theme: Theme) {
    // Taller charts when the terminal has the room.
    let chart = if area.height >= 26 { 8 } else { 4 };
    let [totals, accepted, rejected, bottom] = Layout::vertical([
        Constraint::Length(4),
        Constraint::Length(chart),
        Constraint::Length(chart),
        Constraint::Min(3),
    ])
    .areas(area);
    let total = |outcome| model.total(outcome);
    let lines = vec![
        Line::from(vec![
            Span::styled(
                format!("accepted {}", total(Outcome::Accepted)),
                theme.outcome(Outcome::Accepted),
            ),
            Span::raw(format!("  replayed {}", total(Outcome::Replayed))),
            Span::styled(
                format!("  stale {}", total(Outcome::Stale)),
                theme.outcome(Outcome::Stale),
            ),
            Span::styled(
                format!("  superseded {}", total(Outcome::Superseded)),
                theme.outcome(Outcome::Superseded),
            ),
            Span::styled(
                format!("  reset {}", total(Outcome::Reset)),
                theme.outcome(Outcome::Reset),
            ),
        ]),
        Line::from(vec![
            Span::raw(format!(
                "rev conflicts {}",
                total(Outcome::RevisionConflict)
            )),
            Span::raw(format!(
                "  key reuse {}",
                total(Outcome::IdempotencyConflict)
            )),
            Span::raw(format!("  invalid {}", total(Outcome::Invalid))),
            Span::raw(format!("  unauthorized {}", total(Outcome::Unauthorized))),
            Span::raw(format!("  lease expired {}", total(Outcome::LeaseExpired))),
        ]),
    ];
    let (open, firing) = (model.open_overlaps(), model.firing_alerts());
    // With watched databases, the totals are theirs and the daemon's together.
    let title = match model.sources.as_slice() {
        [] => " Totals ".to_owned(),
        sources => format!(" Totals, with {} ", sources.join(", ")),
    };
    let block = Block::bordered().title(Line::from(vec![
        Span::styled(title, theme.bold()),
        Span::styled(
            format!(" {open} open overlaps "),
            theme.state(if open > 0 { "open" } else { "closed" }),
        ),
        Span::styled(
            format!(" {firing} firing alerts "),
            theme.state(if firing > 0 { "firing" } else { "inactive" }),
        ),
    ]));
    frame.render_widget(Paragraph::new(lines).block(block), totals);

    // One value per inner column, so the newest second is the rightmost cell.
    let columns = usize::from(accepted.width.saturating_sub(2));
    let series = model.series(columns);
    let extent = chart_extent(series.span, model.charted_seconds());
    let per = if series.step == 1 {
        String::new()
    } else {
        format!(", busiest second per {}s", series.step)
    };
    let peak = |values: &[u64]| values.iter().copied().max().unwrap_or(0);
    let last = |values: &[u64]| values.last().copied().unwrap_or(0);
    frame.render_widget(
        Sparkline::default()
            .block(Block::bordered().title(format!(
                " accepted/s, {extent}{per}: now {} peak {} ",
                last(&series.accepted),
                peak(&series.accepted)
            )))
            .data(&series.accepted)
            .style(theme.fg(Color::Green)),
        accepted,
    );
    let ratio = series
        .rejection_percent()
        .map_or_else(|| "no writes".to_owned(), |p| format!("{p:.1}% of writes"));
    frame.render_widget(
        Sparkline::default()
            .block(Block::bordered().title(format!(
                " rejected/s, {extent}: now {} peak {}, {ratio} ",
                last(&series.rejected),
                peak(&series.rejected)
            )))
            .data(&series.rejected)
            .style(theme.fg(Color::Red)),
        rejected,
    );
    let recent: Vec<Line> = model
        .visible_rejections()
        .into_iter()
        .take(usize::from(bottom.height.saturating_sub(2)))
        .map(|row| rejection_line(row, model.holder_of(row), theme))
        .collect();
    let (title, none) = if model.filter_applies() {
        (
            format!(" Latest rejections matching \"{}\" ", model.filter),
            "no rejected write matches the filter",
        )
    } else {
        (
            " Latest rejections ".to_owned(),
            "no rejected writes since the dashboard attached",
        )
    };
    let recent = if recent.is_empty() {
        vec![Line::from(none)]
    } else {
        recent
    };
    frame.render_widget(
        Paragraph::new(recent).block(Block::bordered().title(title)),
        bottom,
    );
}

/// `holder`: who has the higher generation that refused the write, when known.
fn rejection_line(row: &WriteEvent, holder: Option<&str>, theme: Theme) -> Line<'static> {
    Line::from(vec![
        Span::raw(format!("{} ", clock(&row.at))),
        Span::styled(
            format!("{:<13}", outcome_label(row.outcome)),
            theme.outcome(row.outcome),
        ),
        Span::raw(format!(
            " {}{}: {}",
            row.source
                .as_deref()
                .map(|source| format!("{source}: "))
                .unwrap_or_default(),
            row.resource,
            refused_write(row.owner.as_deref(), row.token, row.highest_token, holder)
        )),
    ])
}
