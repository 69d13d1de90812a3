//! `audit verify`: every resource's hash chain, and the first broken link of each; with
//! `--checkpoint`, only the rows after the positions an earlier run verified.

use super::verify_record;
use crate::domain::audit::format_rfc3339_micros;
use crate::store::{Store, VerifyReport};
use std::io::Write;
use std::path::Path;
use std::process::ExitCode;

/// Exits 1 when any chain is broken.
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
        writeln!(out)?;
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
