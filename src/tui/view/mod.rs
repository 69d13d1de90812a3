//! Drawing: a pure function of the model. Colour only ever repeats what the text says.
//! One file per screen (overview, overlaps, rejections, alerts, timeline), the help overlay,
//! and the chrome around them; this module lays them out and holds what they share.

use super::model::{Model, View};
use crate::domain::Outcome;
use chrono::{DateTime, Utc};
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::style::{Color, Modifier, Style};
use ratatui::widgets::{Block, Row, Table, TableState};
use ratatui::Frame;

mod alerts;
mod chrome;
mod help;
mod overlaps;
mod overview;
mod rejections;
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
            // An operator's hand on the fence, not a writer's attempt.
            Outcome::Reset => Color::Cyan,
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

/// What the header says besides the model's state: the daemon, and a note of the caller's.
#[derive(Debug, Clone, Copy)]
pub struct Header<'a> {
    pub url: &'a str,
    pub note: Option<&'a str>,
}

pub fn render(frame: &mut Frame, model: &Model, header_text: Header<'_>, theme: Theme) {
    let [header, tabs, body, footer] = Layout::vertical([
        Constraint::Length(1),
        Constraint::Length(1),
        Constraint::Min(3),
        Constraint::Length(1),
    ])
    .areas(frame.area());
    chrome::header(frame, header, model, header_text, theme);
    chrome::tabs(frame, tabs, model, theme);
    match model.view {
        View::Overview => overview::render(frame, body, model, theme),
        View::Overlaps => overlaps::render(frame, body, model, theme),
        View::Rejections => rejections::render(frame, body, model, theme),
        View::Alerts => alerts::render(frame, body, model, theme),
        View::Timeline => timeline::render(frame, body, model, theme),
    }
    chrome::footer(frame, footer, model, theme);
    if model.help {
        help::render(frame, body, theme);
    }
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

/// Where a row or overlap came from: a watched database's name, or `daemon` for the daemon's
/// own.
fn source_label(source: Option<&str>) -> String {
    source.unwrap_or("daemon").to_owned()
}

/// The SOURCE column, as wide as the longest name shown (at least its header).
fn source_column<'a>(model: &Model) -> (&'a str, Constraint) {
    let longest = model
        .sources
        .iter()
        .map(|name| name.chars().count())
        .chain(
            model
                .overlaps
                .values()
                .filter_map(|o| o.overlap.source.as_ref().map(|s| s.chars().count())),
        )
        .chain(
            model
                .rejections
                .iter()
                .filter_map(|r| r.source.as_ref().map(|s| s.chars().count())),
        )
        .max()
        .unwrap_or(0);
    ("SOURCE", Constraint::Length(longest.clamp(6, 16) as u16))
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

/// Whose write was refused, with which generation, and who has the higher one when the
/// dashboard knows: "worker-7 wrote gen 7 < worker-8's 8". `owner` is the refused write's own
/// `Fencing-Owner`, never the resource's.
fn refused_write(
    owner: Option<&str>,
    token: Option<i64>,
    highest: i64,
    holder: Option<&str>,
) -> String {
    let writer = owner.unwrap_or("an unnamed writer");
    match (token, holder) {
        (Some(token), Some(holder)) if token < highest => {
            format!("{writer} wrote gen {token} < {holder}'s {highest}")
        }
        (Some(token), None) if token < highest => format!("{writer} wrote gen {token} < {highest}"),
        (Some(token), _) => format!("{writer} wrote gen {token}"),
        (None, _) => format!("{writer} wrote without a generation"),
    }
}

/// `1 of 2 matching "acc"` when the filter narrows the list, else just how many it holds.
fn filtered_count(model: &Model, shown: usize, all: usize) -> String {
    if model.filter_applies() {
        format!("{shown} of {all} matching \"{}\"", model.filter)
    } else {
        shown.to_string()
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

/// A table with a bold header row, the selected row reversed, in a titled border. Narrow
/// terminals get fewer columns rather than cut ones: every fixed column is at least as wide as
/// its header.
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
