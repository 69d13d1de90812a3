//! The alerts screen: each rule's state, value against threshold, and since when.

use super::{or_dash, source_column, source_label, table, table_state, Theme};
use crate::tui::model::Model;
use ratatui::layout::{Constraint, Rect};
use ratatui::widgets::{Cell, Row};
use ratatui::Frame;

pub fn render(frame: &mut Frame, area: Rect, model: &Model, theme: Theme) {
    let sources = model.shows_sources();
    let rows: Vec<Row> = model
        .alerts
        .values()
        .map(|a| {
            let state = a.state.as_str();
            let mut cells = vec![
                Cell::from(state.to_uppercase()).style(theme.state(state)),
                Cell::from(a.rule.clone()),
            ];
            if sources {
                cells.push(Cell::from(source_label(a.source.as_deref())));
            }
            cells.extend([
                Cell::from(or_dash(a.resource.as_deref()).to_owned()),
                Cell::from(format!("{} / {}", a.value, a.threshold)),
                Cell::from(
                    a.since
                        .as_deref()
                        .and_then(|t| t.get(11..19))
                        .unwrap_or("-"),
                ),
            ]);
            Row::new(cells)
        })
        .collect();
    let rule_width = model
        .alerts
        .values()
        .map(|a| a.rule.chars().count())
        .max()
        .unwrap_or(4)
        .max(4) as u16;
    let mut columns = vec![
        ("STATE", Constraint::Length(8)),
        ("RULE", Constraint::Length(rule_width)),
    ];
    if sources {
        columns.push(source_column(model));
    }
    columns.extend([
        ("RESOURCE", Constraint::Fill(1)),
        ("VALUE/MAX", Constraint::Length(9)),
        ("SINCE", Constraint::Length(8)),
    ]);
    frame.render_stateful_widget(
        table(rows, columns, " Alerts ".to_owned(), theme),
        area,
        &mut table_state(model.selected),
    );
}
