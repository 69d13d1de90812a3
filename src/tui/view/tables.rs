//! The overlaps, rejections and alerts tables. Narrow terminals get fewer columns rather than
//! cut ones: every fixed column is at least as wide as its header.

use super::{clock, generations, or_dash, outcome_label, table_state, wide, Theme};
use crate::tui::model::Model;
use ratatui::layout::{Constraint, Rect};
use ratatui::style::{Modifier, Style};
use ratatui::widgets::{Block, Cell, Row, Table};
use ratatui::Frame;

fn table<'a>(
    rows: Vec<Row<'a>>,
    columns: Vec<(&'a str, Constraint)>,
    title: String,
    theme: Theme,
) -> Table<'a> {
    let (headers, widths): (Vec<&str>, Vec<Constraint>) = columns.into_iter().unzip();
    Table::new(rows, widths)
        .header(Row::new(headers).style(theme.bold()))
        .row_highlight_style(Style::default().add_modifier(Modifier::REVERSED))
        .block(Block::bordered().title(title))
}

pub fn overlaps(frame: &mut Frame, area: Rect, model: &Model, theme: Theme) {
    let wide = wide(area);
    let rows: Vec<Row> = model
        .visible_overlaps()
        .into_iter()
        .map(|o| {
            let o = &o.overlap;
            let state = o.state.as_str();
            let mut cells = vec![
                Cell::from(state.to_uppercase()).style(theme.state(state)),
                Cell::from(o.resource.clone()),
                Cell::from(format!("{} < {}", o.stale_token, o.superseding_token)),
                Cell::from(or_dash(o.stale_owner.as_deref()).to_owned()),
            ];
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
    let mut columns = vec![
        ("STATE", Constraint::Length(6)),
        ("RESOURCE", Constraint::Fill(2)),
        ("GENERATIONS", Constraint::Length(11)),
        ("STALE OWNER", Constraint::Fill(1)),
    ];
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
        rows.len(),
        model.sort.label()
    );
    frame.render_stateful_widget(
        table(rows, columns, title, theme),
        area,
        &mut table_state(model.selected),
    );
}

pub fn rejections(frame: &mut Frame, area: Rect, model: &Model, theme: Theme) {
    let wide = wide(area);
    let rows: Vec<Row> = model
        .visible_rejections()
        .into_iter()
        .map(|r| {
            let mut cells = vec![
                Cell::from(clock(&r.at)),
                Cell::from(outcome_label(r.outcome)).style(theme.outcome(r.outcome)),
                Cell::from(r.resource.clone()),
                Cell::from(generations(r.token, r.highest_token)),
                Cell::from(or_dash(r.owner.as_deref()).to_owned()),
            ];
            if wide {
                cells.push(Cell::from(or_dash(r.detail.as_deref()).to_owned()));
            }
            Row::new(cells)
        })
        .collect();
    let mut columns = vec![
        ("TIME", Constraint::Length(8)),
        ("OUTCOME", Constraint::Length(13)),
        ("RESOURCE", Constraint::Fill(2)),
        ("GENERATIONS", Constraint::Length(11)),
        ("OWNER", Constraint::Fill(1)),
    ];
    if wide {
        columns.push(("DETAIL", Constraint::Fill(2)));
    }
    let title = format!(" Rejected writes: {} ", rows.len());
    frame.render_stateful_widget(
        table(rows, columns, title, theme),
        area,
        &mut table_state(model.selected),
    );
}

pub fn alerts(frame: &mut Frame, area: Rect, model: &Model, theme: Theme) {
    let rows: Vec<Row> = model
        .alerts
        .values()
        .map(|a| {
            let state = a.state.as_str();
            Row::new(vec![
                Cell::from(state.to_uppercase()).style(theme.state(state)),
                Cell::from(a.rule.clone()),
                Cell::from(or_dash(a.resource.as_deref()).to_owned()),
                Cell::from(format!("{} / {}", a.value, a.threshold)),
                Cell::from(
                    a.since
                        .as_deref()
                        .and_then(|t| t.get(11..19))
                        .unwrap_or("-"),
                ),
            ])
        })
        .collect();
    let rule_width = model
        .alerts
        .values()
        .map(|a| a.rule.chars().count())
        .max()
        .unwrap_or(4)
        .max(4) as u16;
    let columns = vec![
        ("STATE", Constraint::Length(8)),
        ("RULE", Constraint::Length(rule_width)),
        ("RESOURCE", Constraint::Fill(1)),
        ("VALUE/MAX", Constraint::Length(9)),
        ("SINCE", Constraint::Length(8)),
    ];
    frame.render_stateful_widget(
        table(rows, columns, " Alerts ".to_owned(), theme),
        area,
        &mut table_state(model.selected),
    );
}
