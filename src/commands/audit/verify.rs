//! `audit verify`: every resource's hash chain, and the first broken link of each; with
//! `--checkpoint`, only the rows after the positions an earlier run verified. Every run also
//! names rows added without a place in a chain and resources whose stored state disagrees
//! with their audit, as breaches like the chains'.

use super::verify_record;
use crate::domain::audit::format_rfc3339_micros;
use crate::store::{Store, VerifyReport};
use std::io::Write;
use std::path::Path;
use std::process::ExitCode;

/// Unchecked states listed in the text output: with a retention, every idle resource's rows
/// at its head are pruned in time.
const UNCHECKED_LISTED: usize = 10;

/// Exits 1 when any chain is broken, any row unchained or any state disagrees with its audit.
pub(super) async fn run(
    store: &Store,
    json: bool,
    checkpoint: Option<&Path>,
    full: bool,
) -> anyhow::Result<ExitCode> {
    let verified = match checkpoint {
        Some(path) if !full => verify_record::read(path)?,
        _ => None,
    };
    let mut report = store.verify_audit_from(verified.as_ref()).await?;
    if let Some(path) = checkpoint {
        if report.breaches.is_empty() {
            let now = format_rfc3339_micros(&chrono::Utc::now());
            verify_record::write(path, std::mem::take(&mut report.positions), now)?;
        }
    }
    print(&report, json, checkpoint.is_some())?;
    Ok(if report.breaches.is_empty() {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    })
}

fn print(report: &VerifyReport, json: bool, incremental: bool) -> anyhow::Result<()> {
    let mut out = std::io::stdout().lock();
    if json {
        writeln!(out, "{}", serde_json::to_string(report)?)?;
    } else if report.breaches.is_empty() {
        write!(
            out,
            "ok: {} rows in {} chains verify ({} older rows are not chained)",
            report.rows, report.resources, report.unchained
        )?;
        if incremental {
            write!(
                out,
                "; {} earlier rows in {} chains are covered by the checkpoint",
                report.covered_rows, report.covered_chains
            )?;
        }
        write!(
            out,
            "; the stored state of {} resources agrees with their audit",
            report.states
        )?;
        writeln!(out)?;
        for unchecked in report.unchecked_states.iter().take(UNCHECKED_LISTED) {
            writeln!(
                out,
                "unchecked {}: its {}: {}",
                unchecked.resource, unchecked.what, unchecked.why
            )?;
        }
        if let Some(more) = report
            .unchecked_states
            .len()
            .checked_sub(UNCHECKED_LISTED)
            .filter(|n| *n > 0)
        {
            writeln!(out, "unchecked: {more} more (--json lists them all)")?;
        }
    } else {
        for breach in &report.breaches {
            let row = breach
                .audit_id
                .map(|id| format!("audit row {id}"))
                .unwrap_or_else(|| "its end".into());
            writeln!(
                out,
                "BROKEN {}: at {row} (position {}): {}",
                breach.resource,
                breach.seq.unwrap_or(0),
                breach.problem
            )?;
        }
    }
    Ok(())
}
