//! `audit refusals`: requests refused before the fence, as the daemon aggregated them (one row
//! per source, reason and interval), as a table or JSON lines.

use super::time;
use crate::domain::refusal::RefusalCount;
use crate::store::Store;
use chrono::{DateTime, Utc};
use serde::Serialize;
use std::io::Write;
use std::process::ExitCode;

/// A row as `--json` prints it.
#[derive(Serialize)]
struct Line<'a> {
    interval_start: String,
    first_at: String,
    last_at: String,
    source_kind: &'static str,
    source: String,
    reason: &'static str,
    count: i64,
    sample_resource: Option<&'a str>,
    sample_request: &'a str,
    detail: &'a str,
}

fn at(micros: i64) -> String {
    DateTime::<Utc>::from_timestamp_micros(micros)
        .map(|at| time(&at))
        .unwrap_or_default()
}

impl<'a> From<&'a RefusalCount> for Line<'a> {
    fn from(count: &'a RefusalCount) -> Self {
        Self {
            interval_start: at(count.interval_start_us),
            first_at: at(count.first_at_us),
            last_at: at(count.last_at_us),
            source_kind: count.source.kind(),
            source: count.source.name(),
            reason: count.reason.as_str(),
            count: count.count,
            sample_resource: count.sample.resource.as_deref(),
            sample_request: &count.sample.request,
            detail: &count.sample.detail,
        }
    }
}

pub(super) async fn run(
    store: &Store,
    since_us: Option<i64>,
    until_us: Option<i64>,
    json: bool,
) -> anyhow::Result<ExitCode> {
    let counts = store.refusals(since_us, until_us).await?;
    let mut out = std::io::stdout().lock();
    if !json {
        writeln!(
            out,
            "{:<27} {:<8} {:<39} {:<20} {:>8} {:<27} REQUEST",
            "INTERVAL", "KIND", "SOURCE", "REASON", "COUNT", "LAST"
        )?;
    }
    for count in &counts {
        let line = Line::from(count);
        if json {
            writeln!(out, "{}", serde_json::to_string(&line)?)?;
            continue;
        }
        writeln!(
            out,
            "{:<27} {:<8} {:<39} {:<20} {:>8} {:<27} {}",
            line.interval_start,
            line.source_kind,
            line.source,
            line.reason,
            line.count,
            line.last_at,
            line.sample_request
        )?;
    }
    Ok(ExitCode::SUCCESS)
}
