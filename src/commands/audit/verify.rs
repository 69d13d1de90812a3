//! `audit verify`: every resource's hash chain, and the first broken link of each.

use crate::store::Store;
use std::io::Write;
use std::process::ExitCode;

/// Exits 1 when any chain is broken.
pub(super) async fn run(store: &Store, json: bool) -> anyhow::Result<ExitCode> {
    let report = store.verify_audit().await?;
    let mut out = std::io::stdout().lock();
    if json {
        writeln!(out, "{}", serde_json::to_string(&report)?)?;
    } else if report.breaches.is_empty() {
        writeln!(
            out,
            "ok: {} rows in {} chains verify ({} older rows are not chained)",
            report.rows, report.resources, report.unchained
        )?;
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
    Ok(if report.breaches.is_empty() {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    })
}
