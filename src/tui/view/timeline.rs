//! A resource's timeline: its audit around an incident, the overlap's two generations marked.

use super::{clock_millis, or_dash, outcome_label, wide, Theme};
use crate::tui::model::Model;
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::Line;
use ratatui::widgets::{Block, Cell, Paragraph, Row, Table, TableState};
use ratatui::Frame;

pub fn render(frame: &mut Frame, area: Rect, model: &Model, theme: Theme) {
    let Some(timeline) = &model.timeline else {
        return;
    };
    let [table_area, detail_area] =
        Layout::vertical([Constraint::Min(3), Constraint::Length(3)]).areas(area);
    let wide = wide(area);
    let marked = timeline.generations();
    let rows: Vec<Row> = timeline
        .rows
        .iter()
        .map(|r| {
            // The overlap's generations stand out from the rest of the resource's writes.
            let mark = match (marked, r.token) {
                (Some((stale, _)), Some(token)) if token == stale && r.outcome.is_rejection() => {
                    "◀ stale"
                }
                (Some((stale, _)), Some(token)) if token == stale => "  old",
                (Some((_, newer)), Some(token)) if token == newer => "  new",
                _ => "",
            };
            let mut cells = vec![
                Cell::from(r.id.to_string()),
                Cell::from(clock_millis(&r.at)),
                Cell::from(outcome_label(r.outcome)).style(theme.outcome(r.outcome)),
                Cell::from(r.token.map_or_else(|| "-".to_owned(), |t| t.to_string())),
                Cell::from(r.highest_token.to_string()),
                Cell::from(or_dash(r.owner.as_deref()).to_owned()),
                Cell::from(mark),
            ];
            if wide {
                cells.push(Cell::from(r.revision.to_string()));
                cells.push(Cell::from(or_dash(r.detail.as_deref()).to_owned()));
            }
            let row = Row::new(cells);
            if timeline.focus == Some(r.id) {
                row.style(theme.fg(Color::Red).add_modifier(Modifier::BOLD))
            } else {
                row
            }
        })
        .collect();
    let mut columns = vec![
        ("ID", Constraint::Length(7)),
        ("TIME", Constraint::Length(12)),
        ("OUTCOME", Constraint::Length(13)),
        ("GEN", Constraint::Length(5)),
        ("HIGHEST", Constraint::Length(7)),
        ("OWNER", Constraint::Fill(1)),
        ("", Constraint::Length(7)),
    ];
    if wide {
        columns.push(("REV", Constraint::Length(6)));
        columns.push(("DETAIL", Constraint::Fill(2)));
    }
    let (headers, widths): (Vec<&str>, Vec<Constraint>) = columns.into_iter().unzip();
    let about = match marked {
        Some((stale, newer)) => format!(" overlap gen {stale} < {newer}"),
        None => String::new(),
    };
    let more = |more: bool, text: &'static str| if more { text } else { "" };
    let title = if timeline.loading && timeline.rows.is_empty() {
        format!(" Timeline of {}{about}: loading… ", timeline.resource)
    } else {
        format!(
            " Timeline of {}{about}: {} rows{}{}{} ",
            timeline.resource,
            timeline.rows.len(),
            more(!timeline.at_start, ", older ↑"),
            more(!timeline.at_end, ", newer ↓"),
            more(timeline.at_end, ", live"),
        )
    };
    let table = Table::new(rows, widths)
        .header(Row::new(headers).style(theme.bold()))
        .row_highlight_style(Style::default().add_modifier(Modifier::REVERSED))
        .block(Block::bordered().title(title));
    // Keep the selection mid-screen, so the rows before an incident show with it.
    let visible = usize::from(table_area.height.saturating_sub(3));
    let offset = timeline.selected.saturating_sub(visible / 2);
    let mut state = TableState::default()
        .with_offset(offset)
        .with_selected(Some(timeline.selected));
    frame.render_stateful_widget(table, table_area, &mut state);

    let detail = match timeline.selected_row() {
        Some(r) => format!(
            "#{} {} gen {} by {}: {}; highest accepted then {}",
            r.id,
            clock_millis(&r.at),
            r.token.map_or_else(|| "-".to_owned(), |t| t.to_string()),
            or_dash(r.owner.as_deref()),
            outcome_label(r.outcome),
            r.highest_token,
        ),
        None if timeline.loading => "loading…".to_owned(),
        None => "no writes to this resource".to_owned(),
    };
    frame.render_widget(
        Paragraph::new(Line::from(detail))
            .block(Block::bordered().title(" Selected (PgUp/PgDn page, Home/End ends, Esc back) ")),
        detail_area,
    );
}
