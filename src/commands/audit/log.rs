//! `audit log`: the audit rows that match a filter, newest first unless asked otherwise, as a
//! table or JSON lines.

use super::{io, text, time};
use crate::store::{AuditFilter, AuditOrder, AuditWalk, Store};
use std::io::Write;
use std::process::ExitCode;

/// The walk the flags ask for: an operator looking at the log wants the latest rows.
pub(super) fn walk(oldest_first: bool, limit: Option<u64>) -> AuditWalk {
    AuditWalk {
        order: if oldest_first {
            AuditOrder::OldestFirst
        } else {
            AuditOrder::NewestFirst
        },
        limit,
    }
}

pub(super) async fn run(
    store: &Store,
    filter: &AuditFilter,
    json: bool,
    walk: AuditWalk,
) -> anyhow::Result<ExitCode> {
    let mut out = std::io::stdout().lock();
    if !json {
        writeln!(
            out,
            "{:<8} {:<27} {:<20} {:<24} {:>6} {:>7} {:>4} {:<12} OPERATION",
            "ID", "AT", "OUTCOME", "RESOURCE", "TOKEN", "HIGHEST", "REV", "OWNER"
        )?;
    }
    store
        .each_audit_record(filter, walk, |record| {
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
