//! `audit incidents`: the overlaps seen, as a table or JSON.

use super::{text, time};
use crate::domain::Overlap;
use crate::store::Store;
use serde_json::json;
use std::io::Write;
use std::process::ExitCode;

pub(super) async fn run(
    store: &Store,
    since_us: Option<i64>,
    until_us: Option<i64>,
    resource: Option<&str>,
    newest: Option<u64>,
    json: bool,
) -> anyhow::Result<ExitCode> {
    let incidents = store
        .incidents(since_us, until_us, resource, newest)
        .await?;
    let code = print(&incidents, json)?;
    if let Some(newest) = newest {
        if !json && incidents.len() as u64 == newest {
            // On stderr, so that the table stays a table for whatever reads it.
            eprintln!("(the {newest} latest incidents; --limit N or --all for more)");
        }
    }
    Ok(code)
}

/// The incidents as a table (a watched database's resource prefixed with its source) or JSON.
pub(super) fn print(incidents: &[Overlap], json: bool) -> anyhow::Result<ExitCode> {
    let mut out = std::io::stdout().lock();
    if json {
        writeln!(
            out,
            "{}",
            serde_json::to_string(&json!({ "incidents": incidents }))?
        )?;
        return Ok(ExitCode::SUCCESS);
    }
    writeln!(
        out,
        "{:<5} {:<24} {:>5} {:>5} {:<12} {:<12} {:>6} {:<27} {:<27} STATE",
        "ID",
        "RESOURCE",
        "STALE",
        "NEW",
        "STALE OWNER",
        "NEW OWNER",
        "COUNT",
        "FIRST SEEN",
        "LAST SEEN"
    )?;
    for o in incidents {
        writeln!(
            out,
            "{:<5} {:<24} {:>5} {:>5} {:<12} {:<12} {:>6} {:<27} {:<27} {}",
            o.id,
            match &o.source {
                Some(source) => format!("{source}:{}", o.resource),
                None => o.resource.clone(),
            },
            o.stale_token,
            o.superseding_token,
            text(&o.stale_owner),
            text(&o.superseding_owner),
            o.rejected_writes,
            time(&o.first_seen),
            time(&o.last_seen),
            o.state.as_str()
        )?;
    }
    Ok(ExitCode::SUCCESS)
}
