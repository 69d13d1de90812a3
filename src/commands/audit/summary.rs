//! `audit summary --since 7d`: the incidents of a period, aggregated.

use super::time;
use crate::domain::incident::{summarise, Percentiles, Summary};
use crate::store::Store;
use chrono::{DateTime, Utc};
use std::io::Write;
use std::process::ExitCode;

pub(super) async fn run(
    store: &Store,
    since: DateTime<Utc>,
    now: DateTime<Utc>,
    json: bool,
) -> anyhow::Result<ExitCode> {
    let incidents = store
        .incidents(Some(since.timestamp_micros()), None, None, None)
        .await?;
    let mut reports = Vec::with_capacity(incidents.len());
    for overlap in &incidents {
        reports.push(crate::app::incident::facts(store, overlap, now).await?.0);
    }
    print_summary(&summarise(&reports), &time(&since), json)
}

/// The summary as text or JSON, on standard output.
pub(super) fn print_summary(
    summary: &Summary,
    since: &str,
    json: bool,
) -> anyhow::Result<ExitCode> {
    let mut out = std::io::stdout().lock();
    if json {
        writeln!(out, "{}", serde_json::to_string(summary)?)?;
    } else {
        print(&mut out, summary, since)?;
    }
    Ok(ExitCode::SUCCESS)
}

fn print(out: &mut impl Write, s: &Summary, since: &str) -> std::io::Result<()> {
    writeln!(out, "{} incidents since {since}", s.incidents)?;
    let figures = |p: &Percentiles| match (p.p50, p.p90, p.p99, p.max) {
        (Some(p50), Some(p90), Some(p99), Some(max)) => format!(
            "p50 {p50} ms, p90 {p90} ms, p99 {p99} ms, max {max} ms ({} incidents)",
            p.count
        ),
        _ => "unknown".to_owned(),
    };
    writeln!(out, "  pause:                {}", figures(&s.pause_ms))?;
    writeln!(
        out,
        "  zombie lifetime:      {}",
        figures(&s.zombie_lifetime_ms)
    )?;
    writeln!(
        out,
        "  accepted after lapse: {}{}",
        s.accepted_after_lapse,
        if s.lapse_unknown > 0 {
            format!(" ({} incidents without a grant history)", s.lapse_unknown)
        } else {
            String::new()
        }
    )?;
    writeln!(out, "by stale owner:")?;
    for c in &s.by_owner {
        writeln!(out, "  {:>6}  {}", c.incidents, c.name)?;
    }
    writeln!(out, "by resource:")?;
    for c in &s.by_resource {
        writeln!(out, "  {:>6}  {}", c.incidents, c.name)?;
    }
    Ok(())
}
