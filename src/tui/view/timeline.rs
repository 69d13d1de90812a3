//! A resource's timeline: its audit around an incident, the overlap's two generations marked,
//! the history of the lease its writes name beside it, and for the selected write who held its
//! generation at the time.

use super::{clock, clock_millis, or_dash, outcome_label, wide, Theme};
use crate::domain::incident::IncidentReport;
use crate::domain::lease_history::{Standing, Tenure};
use crate::tui::model::timeline::Timeline;
use crate::tui::model::Model;
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::Line;
use ratatui::widgets::{Block, Cell, Paragraph, Row, Table, TableState};
use ratatui::Frame;

/// The lease column's width beside the table, on terminals wide enough to keep both.
const LEASE_COLUMN: u16 = 54;
/// The lease panel's height under the table on narrow terminals (three events).
const LEASE_ROWS: u16 = 5;

pub fn render(frame: &mut Frame, area: Rect, model: &Model, theme: Theme) {
    let Some(timeline) = &model.timeline else {
        return;
    };
    // An incident's facts head its timeline, once its report is in.
    let area = match &timeline.report {
        Some(report) => {
            let [header, rest] =
                Layout::vertical([Constraint::Length(5), Constraint::Min(6)]).areas(area);
            render_report(frame, header, report, timeline.saved.as_deref());
            rest
        }
        None => area,
    };
    let [main_area, detail_area] =
        Layout::vertical([Constraint::Min(3), Constraint::Length(4)]).areas(area);
    // The lease's history beside the writes where there is room, under them where not; no
    // panel when the writes name no lease.
    let (table_area, lease_area) = if timeline.lease_asked.is_none() {
        (main_area, None)
    } else if area.width >= 120 {
        let [table, lease] =
            Layout::horizontal([Constraint::Min(40), Constraint::Length(LEASE_COLUMN)])
                .areas(main_area);
        (table, Some(lease))
    } else {
        let [table, lease] =
            Layout::vertical([Constraint::Min(3), Constraint::Length(LEASE_ROWS)]).areas(main_area);
        (table, Some(lease))
    };
    if let Some(lease_area) = lease_area {
        render_lease(frame, lease_area, timeline, theme);
    }
    let wide = wide(table_area);
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
        Some(r) => vec![
            Line::from(format!(
                "#{} {} gen {} by {}: {}; highest accepted then {}",
                r.id,
                clock_millis(&r.at),
                r.token.map_or_else(|| "-".to_owned(), |t| t.to_string()),
                or_dash(r.owner.as_deref()),
                outcome_label(r.outcome),
                r.highest_token,
            )),
            Line::from(who_held(timeline, r.token)),
        ],
        None if timeline.loading => vec![Line::from("loading…")],
        None => vec![Line::from("no writes to this resource")],
    };
    frame.render_widget(
        Paragraph::new(detail)
            .block(Block::bordered().title(" Selected (PgUp/PgDn page, Home/End ends, Esc back) ")),
        detail_area,
    );
}

/// The report's facts in three lines: who paused how long, the lapse and the takeover; how
/// long the zombie kept trying and whether any write got through after the lapse; the `w` key.
fn render_report(frame: &mut Frame, area: Rect, report: &IncidentReport, saved: Option<&str>) {
    let at =
        |t: &Option<chrono::DateTime<chrono::Utc>>| t.as_ref().map_or("?".to_owned(), clock_millis);
    let ms =
        |ms: Option<i64>| ms.map_or("?".to_owned(), |ms| format!("{:.3}s", ms as f64 / 1000.0));
    let who = |owner: &Option<String>, generation: i64| {
        format!("{} g{generation}", or_dash(owner.as_deref()))
    };
    let first = format!(
        "{} paused {}, lapsed {}; {} from {}",
        who(&report.stale_owner, report.stale_generation),
        ms(report.pause_ms),
        at(&report.stale_grant_lapsed_at),
        who(&report.superseding_owner, report.superseding_generation),
        at(&report.superseding_acquired_at),
    );
    let after_lapse = report
        .accepted_after_lapse
        .map_or("?".to_owned(), |n| n.to_string());
    let mut second = Line::from(format!(
        "refused {} over {}, accepted after lapse {after_lapse}, first write {}",
        report.refused,
        ms(report.zombie_lifetime_ms),
        at(&report.superseding_first_write_at),
    ));
    if report.accepted_after_lapse.unwrap_or(0) > 0 {
        second = second.style(Style::default().add_modifier(Modifier::BOLD));
    }
    let third = Line::from(saved.unwrap_or("w writes the report to a file").to_owned());
    frame.render_widget(
        Paragraph::new(vec![Line::from(first), second, third])
            .block(Block::bordered().title(format!(" Incident {} ", report.incident))),
        area,
    );
}

/// "Who held generation G at this row's time", from the lease's history.
fn who_held(timeline: &Timeline, token: Option<i64>) -> String {
    let Some(row) = timeline.selected_row() else {
        return String::new();
    };
    let (Some(token), Some(lease)) = (token, row.lease.as_deref()) else {
        return "this write names no lease: no holder to look up".to_owned();
    };
    match (timeline.tenure(), &timeline.lease) {
        (Some(tenure), _) => tenure_text(&tenure),
        (None, Some(_)) => format!("gen {token}: not in lease {lease}'s history as loaded"),
        (None, None) => format!("gen {token}: lease {lease}'s history loading…"),
    }
}

fn tenure_text(tenure: &Tenure) -> String {
    let Tenure {
        token,
        holder,
        granted_at,
        standing,
        successor,
    } = tenure;
    let since = match standing {
        Standing::Seen { .. } | Standing::LastSeen { .. } => {
            format!("gen {token}: {holder}'s, seen since {}", clock(granted_at))
        }
        _ => format!("gen {token}: {holder}'s since {}", clock(granted_at)),
    };
    let then = match standing {
        Standing::NotYetGranted => {
            return format!(
                "gen {token} not granted yet then ({holder} got it at {})",
                clock_millis(granted_at)
            )
        }
        Standing::NotYetSeen => {
            return format!(
                "gen {token} not seen holding yet then ({holder} first seen at {})",
                clock_millis(granted_at)
            )
        }
        Standing::Held { until } => format!("valid until {}", clock_millis(until)),
        Standing::Seen { until } => format!("seen holding until {}", clock_millis(until)),
        Standing::LastSeen { at } => format!("LAST SEEN holding {}", clock_millis(at)),
        Standing::Lapsed { at } => format!("LAPSED {}", clock_millis(at)),
        Standing::Released { at } => format!("RELEASED {}", clock_millis(at)),
    };
    let instead = successor
        .as_ref()
        .map_or_else(String::new, |(who, gen)| format!("; {who} held gen {gen}"));
    format!("{since}, {then}{instead}")
}

/// The lease's events around the selected write's time, the last one at or before it marked.
fn render_lease(frame: &mut Frame, area: Rect, timeline: &Timeline, theme: Theme) {
    let name = timeline
        .lease_asked
        .as_ref()
        .map_or("", |fetch| fetch.lease.as_str());
    let Some(trail) = &timeline.lease else {
        frame.render_widget(
            Paragraph::new("loading…").block(Block::bordered().title(format!(" Lease {name} "))),
            area,
        );
        return;
    };
    let marked = timeline.generations();
    let entries = trail.lines();
    let cursor = timeline.lease_cursor(&entries);
    let visible = usize::from(area.height.saturating_sub(2));
    let last_start = entries.len().saturating_sub(visible);
    // More of what led up to the write than of what followed it.
    let start = cursor
        .map_or(last_start, |at| at.saturating_sub(visible * 2 / 3))
        .min(last_start);
    let lines: Vec<Line> = entries
        .iter()
        .enumerate()
        .skip(start)
        .take(visible)
        .map(|(index, e)| {
            let here = if Some(index) == cursor { "▶" } else { " " };
            let what = match e.count {
                1 => e.change.as_str().to_owned(),
                n => format!("{} ×{n}", e.change.as_str()),
            };
            let text = format!(
                "{here}{} {what:<12} g{:<3} {} →{}",
                clock_millis(&e.at),
                e.token,
                e.holder,
                clock(&e.expires_at)
            );
            let style = match marked {
                Some((stale, _)) if e.token == stale => theme.fg(Color::Red),
                Some((_, newer)) if e.token == newer => theme.fg(Color::Green),
                _ => Style::default(),
            };
            let style = if Some(index) == cursor {
                style.add_modifier(Modifier::BOLD)
            } else {
                style
            };
            Line::styled(text, style)
        })
        .collect();
    let title = format!(
        " Lease {}: {} events ",
        trail.fetch.lease,
        trail.events.len()
    );
    frame.render_widget(
        Paragraph::new(lines).block(Block::bordered().title(title)),
        area,
    );
}
