//! An incident report as people read it: plain text for a terminal, Markdown to paste into a
//! postmortem, and a self-contained HTML page whose SVG draws one lane per owner and
//! generation. Pure functions of the report, so the command line and the dashboard print the
//! same thing.

use super::audit::format_rfc3339_micros;
use super::incident::{EntryKind, IncidentReport, TimelineEntry};
use chrono::{DateTime, Utc};
use std::fmt::Write;

fn time(at: &Option<DateTime<Utc>>) -> String {
    at.as_ref()
        .map_or_else(|| "unknown".to_owned(), format_rfc3339_micros)
}

fn duration(ms: Option<i64>) -> String {
    match ms {
        Some(ms) => format!("{}.{:03} s", ms / 1000, (ms % 1000).abs()),
        None => "unknown".to_owned(),
    }
}

fn who(generation: i64, owner: &Option<String>) -> String {
    match owner {
        Some(owner) => format!("generation {generation} ({owner})"),
        None => format!("generation {generation}"),
    }
}

/// The facts as (label, value) rows, in the order a postmortem tells them.
pub fn fact_rows(report: &IncidentReport) -> Vec<(&'static str, String)> {
    let after_lapse = match report.accepted_after_lapse {
        Some(0) => "0 (the fence covered the whole window)".to_owned(),
        Some(n) => format!("{n} (writes the fence did not cover)"),
        None => "unknown (no grant history)".to_owned(),
    };
    vec![
        (
            "Stale owner",
            who(report.stale_generation, &report.stale_owner),
        ),
        (
            "Superseding owner",
            who(report.superseding_generation, &report.superseding_owner),
        ),
        (
            "Stale owner last active",
            time(&report.stale_last_active_at),
        ),
        ("Stale grant lapsed", time(&report.stale_grant_lapsed_at)),
        ("Successor acquired", time(&report.superseding_acquired_at)),
        (
            "Successor's first write",
            time(&report.superseding_first_write_at),
        ),
        ("First refused", time(&report.first_refused_at)),
        ("Last refused", time(&report.last_refused_at)),
        ("Refused attempts", report.refused.to_string()),
        ("Pause", duration(report.pause_ms)),
        ("Zombie lifetime", duration(report.zombie_lifetime_ms)),
        ("Accepted after lapse", after_lapse),
    ]
}

/// What a timeline line says happened: `WRITE stale`, `LEASE renewed ×97`.
pub fn entry_event(entry: &TimelineEntry) -> String {
    let kind = match entry.kind {
        EntryKind::Write => "WRITE",
        EntryKind::Lease => "LEASE",
    };
    if entry.count > 1 {
        format!("{kind} {} ×{}", entry.event, entry.count)
    } else {
        format!("{kind} {}", entry.event)
    }
}

fn entry_span(entry: &TimelineEntry) -> String {
    match entry.last_at {
        Some(last) => format!(
            "{} .. {}",
            format_rfc3339_micros(&entry.at),
            format_rfc3339_micros(&last)
        ),
        None => format_rfc3339_micros(&entry.at),
    }
}

fn incident_title(report: &IncidentReport) -> String {
    match &report.source {
        Some(source) => format!(
            "incident {} on {source}:{}",
            report.incident, report.resource
        ),
        None => format!("incident {} on {}", report.incident, report.resource),
    }
}

pub fn text(report: &IncidentReport) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "{}", incident_title(report));
    for (label, value) in fact_rows(report) {
        let _ = writeln!(out, "  {:<25} {value}", format!("{label}:"));
    }
    let _ = writeln!(out, "timeline ({} lines)", report.timeline.len());
    for entry in &report.timeline {
        let _ = writeln!(
            out,
            "  {}  {:<24} gen {} by {}",
            entry_span(entry),
            entry_event(entry),
            entry.generation.map_or("-".to_owned(), |g| g.to_string()),
            entry.owner.as_deref().unwrap_or("-")
        );
    }
    out
}

/// A Markdown table cell: pipes and line breaks would end the cell or the row.
fn cell(text: &str) -> String {
    text.replace('\\', "\\\\")
        .replace('|', "\\|")
        .replace(['\n', '\r'], " ")
}

pub fn markdown(report: &IncidentReport) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "## {}\n", cell(&incident_title(report)));
    let _ = writeln!(out, "| Fact | Value |\n|---|---|");
    for (label, value) in fact_rows(report) {
        let _ = writeln!(out, "| {label} | {} |", cell(&value));
    }
    let _ = writeln!(out, "\n### Timeline\n");
    let _ = writeln!(
        out,
        "| At | Until | Event | Generation | Owner | Count |\n|---|---|---|---:|---|---:|"
    );
    for entry in &report.timeline {
        let _ = writeln!(
            out,
            "| {} | {} | {} | {} | {} | {} |",
            format_rfc3339_micros(&entry.at),
            entry
                .last_at
                .as_ref()
                .map(format_rfc3339_micros)
                .unwrap_or_default(),
            cell(&format!("{:?} {}", entry.kind, entry.event).to_lowercase()),
            entry.generation.map(|g| g.to_string()).unwrap_or_default(),
            cell(entry.owner.as_deref().unwrap_or("")),
            entry.count
        );
    }
    out
}

fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

/// One lane of the picture: an owner's generation.
struct Lane {
    generation: Option<i64>,
    owner: Option<String>,
}

/// The lanes: the stale owner's first, the successor's second, then any other generation the
/// window shows.
fn lanes(report: &IncidentReport) -> Vec<Lane> {
    let mut lanes = vec![
        Lane {
            generation: Some(report.stale_generation),
            owner: report.stale_owner.clone(),
        },
        Lane {
            generation: Some(report.superseding_generation),
            owner: report.superseding_owner.clone(),
        },
    ];
    for entry in &report.timeline {
        if !lanes.iter().any(|l| l.generation == entry.generation) {
            lanes.push(Lane {
                generation: entry.generation,
                owner: entry.owner.clone(),
            });
        }
    }
    lanes
}

const WIDTH: f64 = 960.0;
const LEFT: f64 = 190.0;
const RIGHT: f64 = 30.0;
const TOP: f64 = 34.0;
const LANE: f64 = 54.0;

/// The picture's time axis.
struct Scale {
    start: DateTime<Utc>,
    span_us: f64,
}

impl Scale {
    fn new(report: &IncidentReport) -> Self {
        let mut times: Vec<DateTime<Utc>> = report
            .timeline
            .iter()
            .flat_map(|e| [Some(e.at), e.last_at])
            .flatten()
            .collect();
        times.extend(
            [
                report.stale_last_active_at,
                report.stale_grant_lapsed_at,
                report.superseding_acquired_at,
                report.superseding_first_write_at,
                report.first_refused_at,
                report.last_refused_at,
            ]
            .into_iter()
            .flatten(),
        );
        let start = times.iter().min().copied().unwrap_or_default();
        let end = times.iter().max().copied().unwrap_or(start);
        let span_us = ((end - start).num_microseconds().unwrap_or(i64::MAX) as f64).max(1.0);
        // A little room either side, so that the first and last marks are not on the edge.
        let pad = span_us * 0.03;
        let start = start - chrono::TimeDelta::microseconds(pad as i64);
        Scale {
            start,
            span_us: span_us + 2.0 * pad,
        }
    }

    fn x(&self, at: DateTime<Utc>) -> f64 {
        let us = (at - self.start).num_microseconds().unwrap_or(0) as f64;
        LEFT + (us / self.span_us).clamp(0.0, 1.0) * (WIDTH - LEFT - RIGHT)
    }
}

/// The SVG timeline: a lane per owner and generation, the grant held as a bar up to its lapse,
/// the zombie's time after it dashed, refused attempts as red ticks, accepted writes as dots,
/// renewals as grey marks, the lapse and takeover as vertical lines, and the window the fence
/// did not cover (lapse to the successor's first write) shaded.
pub fn svg(report: &IncidentReport) -> String {
    let lanes = lanes(report);
    let scale = Scale::new(report);
    let height = TOP + LANE * lanes.len() as f64 + 40.0;
    let bottom = TOP + LANE * lanes.len() as f64;
    let mut s = String::new();
    let _ = write!(
        s,
        r##"<svg xmlns="http://www.w3.org/2000/svg" role="img" aria-label="incident timeline" width="{WIDTH}" height="{height}" viewBox="0 0 {WIDTH} {height}" font-family="sans-serif" font-size="12">"##
    );
    let _ = write!(
        s,
        r##"<rect x="0" y="0" width="{WIDTH}" height="{height}" fill="#ffffff"/>"##
    );
    if let (Some(lapsed), Some(first)) = (
        report.stale_grant_lapsed_at,
        report.superseding_first_write_at,
    ) {
        if first > lapsed {
            let (x0, x1) = (scale.x(lapsed), scale.x(first));
            let _ = write!(
                s,
                r##"<rect class="uncovered" x="{x0:.1}" y="{TOP}" width="{:.1}" height="{:.1}" fill="#f5a623" fill-opacity="0.25"><title>not covered by the fence: lapse to the successor's first write</title></rect>"##,
                (x1 - x0).max(1.0),
                bottom - TOP
            );
            let _ = write!(
                s,
                r##"<text x="{:.1}" y="{:.1}" text-anchor="middle" fill="#b86e00">uncovered</text>"##,
                (x0 + x1) / 2.0,
                bottom + 14.0
            );
        }
    }
    for (i, lane) in lanes.iter().enumerate() {
        let y = TOP + LANE * i as f64 + LANE / 2.0;
        let label = match (&lane.owner, lane.generation) {
            (Some(owner), Some(g)) => format!("{owner} · gen {g}"),
            (None, Some(g)) => format!("gen {g}"),
            (Some(owner), None) => owner.clone(),
            (None, None) => "no token".to_owned(),
        };
        let _ = write!(
            s,
            r##"<g class="lane" data-generation="{}"><text x="8" y="{:.1}" fill="#222">{}</text><line x1="{LEFT}" y1="{y:.1}" x2="{:.1}" y2="{y:.1}" stroke="#dddddd" stroke-width="1"/>"##,
            lane.generation.map(|g| g.to_string()).unwrap_or_default(),
            y + 4.0,
            escape(&label),
            WIDTH - RIGHT
        );
        let stale = lane.generation == Some(report.stale_generation);
        let successor = lane.generation == Some(report.superseding_generation);
        let own: Vec<&TimelineEntry> = report
            .timeline
            .iter()
            .filter(|e| e.generation == lane.generation)
            .collect();
        let first_seen = own.first().map(|e| e.at);
        if stale {
            let held_from = first_seen.or(report.stale_last_active_at);
            let held_to = report.stale_grant_lapsed_at.or(report.stale_last_active_at);
            if let (Some(from), Some(to)) = (held_from, held_to) {
                bar(&mut s, scale.x(from), scale.x(to), y, "#4a90d9", "held");
            }
            if let (Some(from), Some(to)) = (
                report.stale_grant_lapsed_at.or(report.stale_last_active_at),
                report.last_refused_at,
            ) {
                let _ = write!(
                    s,
                    r##"<line class="zombie" x1="{:.1}" y1="{y:.1}" x2="{:.1}" y2="{y:.1}" stroke="#d0021b" stroke-width="3" stroke-dasharray="6 4"><title>after its grant: the zombie</title></line>"##,
                    scale.x(from),
                    scale.x(to)
                );
            }
        } else if successor {
            let from = report
                .superseding_acquired_at
                .or(report.superseding_first_write_at)
                .or(first_seen);
            if let Some(from) = from {
                bar(&mut s, scale.x(from), WIDTH - RIGHT, y, "#7ed321", "held");
            }
        }
        for entry in own {
            mark(&mut s, &scale, entry, y);
        }
        s.push_str("</g>");
    }
    for (at, label, colour) in [
        (report.stale_grant_lapsed_at, "lapse", "#b86e00"),
        (report.superseding_acquired_at, "takeover", "#417505"),
    ] {
        if let Some(at) = at {
            let x = scale.x(at);
            let _ = write!(
                s,
                r##"<g class="marker"><line x1="{x:.1}" y1="{:.1}" x2="{x:.1}" y2="{bottom:.1}" stroke="{colour}" stroke-width="1.5" stroke-dasharray="3 3"/><text x="{x:.1}" y="{:.1}" text-anchor="middle" fill="{colour}">{label}</text></g>"##,
                TOP - 14.0,
                TOP - 18.0
            );
        }
    }
    let span_s = scale.span_us / 1e6;
    for step in 0..=4 {
        let fraction = f64::from(step) / 4.0;
        let x = LEFT + fraction * (WIDTH - LEFT - RIGHT);
        let _ = write!(
            s,
            r##"<text x="{x:.1}" y="{:.1}" text-anchor="middle" fill="#666">+{:.1} s</text>"##,
            height - 8.0,
            fraction * span_s
        );
    }
    let _ = write!(
        s,
        r##"<text x="8" y="{:.1}" fill="#666">from {}</text>"##,
        height - 8.0,
        escape(&format_rfc3339_micros(&scale.start))
    );
    s.push_str("</svg>");
    s
}

fn bar(s: &mut String, x0: f64, x1: f64, y: f64, colour: &str, title: &str) {
    let _ = write!(
        s,
        r##"<rect class="held" x="{x0:.1}" y="{:.1}" width="{:.1}" height="12" rx="3" fill="{colour}" fill-opacity="0.55"><title>{title}</title></rect>"##,
        y - 6.0,
        (x1 - x0).max(2.0)
    );
}

/// One timeline entry on its lane: refusals as red ticks, accepted writes as dots, lease events
/// as grey marks; a folded run spans from its first to its last.
fn mark(s: &mut String, scale: &Scale, entry: &TimelineEntry, y: f64) {
    let x0 = scale.x(entry.at);
    let x1 = entry.last_at.map_or(x0, |last| scale.x(last));
    let title = escape(&format!(
        "{} at {}",
        entry_event(entry),
        format_rfc3339_micros(&entry.at)
    ));
    let refused = entry.kind == EntryKind::Write && entry.event != "accepted";
    if refused {
        let _ = write!(s, r##"<g class="refused"><title>{title}</title>"##);
        for x in [x0, x1] {
            let _ = write!(
                s,
                r##"<line x1="{x:.1}" y1="{:.1}" x2="{x:.1}" y2="{:.1}" stroke="#d0021b" stroke-width="2"/>"##,
                y - 13.0,
                y + 13.0
            );
        }
        if x1 > x0 {
            let _ = write!(
                s,
                r##"<rect x="{x0:.1}" y="{:.1}" width="{:.1}" height="4" fill="#d0021b" fill-opacity="0.5"/>"##,
                y - 15.0,
                x1 - x0
            );
        }
        s.push_str("</g>");
    } else if entry.kind == EntryKind::Write {
        let _ = write!(
            s,
            r##"<g class="accepted"><title>{title}</title><circle cx="{x0:.1}" cy="{y:.1}" r="4" fill="#2b7a0b"/>"##
        );
        if x1 > x0 {
            let _ = write!(
                s,
                r##"<line x1="{x0:.1}" y1="{y:.1}" x2="{x1:.1}" y2="{y:.1}" stroke="#2b7a0b" stroke-width="2"/><circle cx="{x1:.1}" cy="{y:.1}" r="4" fill="#2b7a0b"/>"##
            );
        }
        s.push_str("</g>");
    } else {
        let _ = write!(
            s,
            r##"<g class="lease-event"><title>{title}</title><rect x="{x0:.1}" y="{:.1}" width="{:.1}" height="5" fill="#888888"/></g>"##,
            y + 8.0,
            (x1 - x0).max(2.0)
        );
    }
}

/// A page that needs nothing from the network: styles inline, the picture an inline SVG.
pub fn html(report: &IncidentReport) -> String {
    let mut out = String::new();
    let title = escape(&incident_title(report));
    let _ = write!(
        out,
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>{title}</title>\
         <style>body{{font-family:sans-serif;margin:24px;color:#222}}table{{border-collapse:collapse;margin:12px 0}}\
         td,th{{border:1px solid #ccc;padding:3px 8px;text-align:left;font-size:13px}}\
         th{{background:#f3f3f3}}.bad{{color:#d0021b;font-weight:bold}}</style></head><body>\n\
         <h1>{title}</h1>\n"
    );
    out.push_str(&svg(report));
    out.push_str("\n<h2>Facts</h2>\n<table class=\"facts\">");
    for (label, value) in fact_rows(report) {
        let bad = label == "Accepted after lapse" && report.accepted_after_lapse.unwrap_or(0) > 0;
        let _ = write!(
            out,
            "<tr><th>{}</th><td{}>{}</td></tr>",
            escape(label),
            if bad { " class=\"bad\"" } else { "" },
            escape(&value)
        );
    }
    out.push_str("</table>\n<h2>Timeline</h2>\n<table class=\"timeline\"><tr><th>At</th><th>Until</th><th>Event</th><th>Generation</th><th>Owner</th></tr>");
    for entry in &report.timeline {
        let _ = write!(
            out,
            "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
            escape(&format_rfc3339_micros(&entry.at)),
            escape(
                &entry
                    .last_at
                    .as_ref()
                    .map(format_rfc3339_micros)
                    .unwrap_or_default()
            ),
            escape(&entry_event(entry)),
            entry.generation.map(|g| g.to_string()).unwrap_or_default(),
            escape(entry.owner.as_deref().unwrap_or(""))
        );
    }
    out.push_str("</table>\n</body></html>\n");
    out
}

#[cfg(test)]
mod tests;
