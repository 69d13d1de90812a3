//! `fencewatch audit export` on a fence's own audit: CSV with a header, or one JSON object a
//! line.

use super::fence_rows::{each_row, Filter};
use super::time;
use crate::cli::ExportFormat;
use crate::domain::fence_audit::FenceAuditRow;
use crate::owndb::OwnDb;
use std::io::{IsTerminal, Write};
use std::path::Path;
use std::process::ExitCode;

/// The columns of `audit export --format csv` on a fence.
pub const FENCE_CSV_COLUMNS: [&str; 14] = [
    "id",
    "at",
    "resource",
    "outcome",
    "token",
    "highest_token",
    "idempotency_key",
    "owner",
    "lease",
    "detail",
    "table_name",
    "seq",
    "prev_hash",
    "hash",
];

pub(super) async fn export(
    db: &OwnDb,
    filter: &Filter,
    format: ExportFormat,
    output: Option<&Path>,
) -> anyhow::Result<ExitCode> {
    let writer = super::output_writer(output)?;
    let mut csv = match format {
        ExportFormat::Csv => {
            let mut csv = csv::Writer::from_writer(writer);
            csv.write_record(FENCE_CSV_COLUMNS)?;
            Ok(csv)
        }
        ExportFormat::Jsonl => Err(std::io::BufWriter::new(writer)),
    };
    let mut count = 0u64;
    each_row(db, |row| {
        if !filter.matches(row) {
            return Ok(());
        }
        count += 1;
        match &mut csv {
            Ok(csv) => csv.write_record(csv_fields(row))?,
            Err(lines) => {
                serde_json::to_writer(&mut *lines, row)?;
                lines.write_all(b"\n")?;
            }
        }
        Ok(())
    })
    .await?;
    match &mut csv {
        Ok(csv) => csv.flush()?,
        Err(lines) => lines.flush()?,
    }
    if std::io::stderr().is_terminal() {
        eprintln!("exported {count} rows");
    }
    Ok(ExitCode::SUCCESS)
}

fn csv_fields(row: &FenceAuditRow) -> [String; FENCE_CSV_COLUMNS.len()] {
    let opt = |v: Option<i64>| v.map(|n| n.to_string()).unwrap_or_default();
    let s = |v: &Option<String>| v.clone().unwrap_or_default();
    [
        row.id.to_string(),
        time(&row.at),
        row.resource.clone(),
        row.outcome.clone(),
        opt(row.token),
        row.highest_token.to_string(),
        s(&row.idempotency_key),
        s(&row.owner),
        s(&row.lease),
        s(&row.detail),
        s(&row.table_name),
        row.seq.to_string(),
        s(&row.prev_hash),
        s(&row.hash),
    ]
}
