//! The overlaps screen: every ownership overlap, sortable; Enter opens its timeline.

use super::{
    clock, filtered_count, or_dash, source_column, source_label, table, table_state, wide, Theme,
};
use crate::tui::model::Model;
use ratatui::layout::{Constraint, Rect};
use ratatui::widgets::{Cell, Row};
use ratatui::Frame;

pub fn render(frame: &mut Frame, area: Rect, model: &Model, theme: Theme) {
    let wide = wide(area);
    let sources = model.shows_sources();
    let rows: Vec<Row> = model
        .visible_overlaps()
        .into_iter()
        .map(|o| {
            let o = &o.overlap;
            let state = o.state.as_str();
            let mut cells = vec![Cell::from(state.to_uppercase()).style(theme.state(state))];
            if sources {
                cells.push(Cell::from(source_label(o.source.as_deref())));
            }
            cells.extend([
                Cell::from(o.resource.clone()),
                Cell::from(format!("{} < {}", o.stale_token, o.superseding_token)),
                Cell::from(or_dash(o.stale_owner.as_deref()).to_owned()),
            ]);
            if wide {
                cells.push(Cell::from(
                    or_dash(o.superseding_owner.as_deref()).to_owned(),
                ));
            }
            cells.push(Cell::from(o.rejected_writes.to_string()));
            if wide {
                cells.push(Cell::from(clock(&o.first_seen)));
            }
            cells.push(Cell::from(clock(&o.last_seen)));
            Row::new(cells)
        })
        .collect();
    let mut columns = vec![("STATE", Constraint::Length(6))];
    if sources {
        columns.push(source_column(model));
    }
    columns.extend([
        ("RESOURCE", Constraint::Fill(2)),
        ("GENERATIONS", Constraint::Length(11)),
        ("STALE OWNER", Constraint::Fill(1)),
    ]);
    if wide {
        columns.push(("NEW OWNER", Constraint::Fill(1)));
    }
    columns.push(("COUNT", Constraint::Length(5)));
    if wide {
        columns.push(("FIRST", Constraint::Length(8)));
    }
    columns.push(("LAST", Constraint::Length(8)));
    let title = format!(
        " Ownership overlaps: {} (sorted by {}; Enter: timeline) ",
        filtered_count(model, rows.len(), model.overlaps.len()),
        model.sort.label()
    );
    frame.render_stateful_widget(
        table(rows, columns, title, theme),
        area,
        &mut table_state(model.selected),
    );
}
