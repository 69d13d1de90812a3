//! `audit prune`: drops audit rows before a time, each chain behind a checkpoint.

use crate::store::Store;
use chrono::{DateTime, Utc};
use std::io::Write;
use std::process::ExitCode;

pub(super) async fn run(
    store: &Store,
    before: DateTime<Utc>,
    json: bool,
) -> anyhow::Result<ExitCode> {
    let report = store.prune_audit(before.timestamp_micros()).await?;
    let mut out = std::io::stdout().lock();
    if json {
        writeln!(out, "{}", serde_json::to_string(&report)?)?;
    } else {
        writeln!(
            out,
            "pruned {} rows of {} resources, each behind a checkpoint; {} lease events, \
             {} closed overlaps, {} alert transitions and {} rows of refusals",
            report.rows,
            report.resources,
            report.lease_events,
            report.closed_overlaps,
            report.alert_transitions,
            report.refusals
        )?;
    }
    Ok(ExitCode::SUCCESS)
}
