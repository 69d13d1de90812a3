//! `audit log`: the audit rows that match a filter, as a table or JSON lines.

use super::{io, text, time};
use crate::store::{AuditFilter, Store};
use std::io::Write;
use std::process::ExitCode;

pub(super) async fn run(
    store: &Store,
    filter: &AuditFilter,
    json: bool,
    limit: Option<u64>,
) -> anyhow::Result<ExitCode> {
    let mut out = std::io::stdout().lock();
    let mut shown = 0u64;
    if !json {
        writeln!(
            out,
            "{:<8} {:<27} {:<20} {:<24} {:>6} {:>7} {:>4} {:<12} OPERATION",
            "ID", "AT", "OUTCOME", "RESOURCE", "TOKEN", "HIGHEST", "REV", "OWNER"
        )?;
    }
    store
        .each_audit_record(filter, |record| {
            if limit.is_some_and(|limit| shown >= limit) {
                return Ok(());
            }
            shown += 1;
            if json {
                let line = serde_json::to_string(record).map_err(io)?;
                return writeln!(out, "{line}").map_err(io);
            }
            let e = &record.entry;
            writeln!(
                out,
                "{:<8} {:<27} {:<20} {:<24} {:>6} {:>7} {:>4} {:<12} {}",
                e.id,
                time(&e.at),
                e.outcome.as_str(),
                e.resource,
                e.token.map_or("-".into(), |t| t.to_string()),
                e.highest_token,
                e.revision,
                text(&e.owner),
                text(&e.idempotency_key)
            )
            .map_err(io)
        })
        .await?;
    Ok(ExitCode::SUCCESS)
}
