//! The rejections screen: the log of refused writes, newest first.

use super::{
    clock, filtered_count, generations, or_dash, outcome_label, source_column, source_label, table,
    table_state, wide, Theme,
};
use crate::tui::model::Model;
use ratatui::layout::{Constraint, Rect};
use ratatui::widgets::{Cell, Row};
use ratatui::Frame;

pub fn render(frame: &mut Frame, area: Rect, model: &Model, theme: Theme) {
    let wide = wide(area);
    let sources = model.shows_sources();
    let rows: Vec<Row> = model
        .visible_rejections()
        .into_iter()
        .map(|r| {
            let mut cells = vec![
                Cell::from(clock(&r.at)),
                Cell::from(outcome_label(r.outcome)).style(theme.outcome(r.outcome)),
            ];
            if sources {
                cells.push(Cell::from(source_label(r.source.as_deref())));
            }
            cells.extend([
                Cell::from(r.resource.clone()),
                Cell::from(generations(r.token, r.highest_token)),
                Cell::from(or_dash(r.owner.as_deref()).to_owned()),
            ]);
            if wide {
                cells.push(Cell::from(or_dash(r.detail.as_deref()).to_owned()));
            }
            Row::new(cells)
        })
        .collect();
    let mut columns = vec![
        ("TIME", Constraint::Length(8)),
        ("OUTCOME", Constraint::Length(13)),
    ];
    if sources {
        columns.push(source_column(model));
    }
    columns.extend([
        ("RESOURCE", Constraint::Fill(2)),
        ("GENERATIONS", Constraint::Length(11)),
        // The refused write's own owner, not the holder of the higher generation.
        ("WRITER", Constraint::Fill(1)),
    ]);
    if wide {
        columns.push(("DETAIL", Constraint::Fill(2)));
    }
    let title = format!(
        " Rejected writes: {} ",
        filtered_count(model, rows.len(), model.rejections.len())
    );
    frame.render_stateful_widget(
        table(rows, columns, title, theme),
        area,
        &mut table_state(model.selected),
    );
}
