//! `audit export`: every matching row as CSV or JSON lines, to stdout or a file.

use super::{io, time};
use crate::cli::ExportFormat;
use crate::store::{AuditFilter, AuditRecord, AuditWalk, Store};
use std::io::{IsTerminal, Write};
use std::path::Path;
use std::process::ExitCode;

pub const CSV_COLUMNS: [&str; 18] = [
    "id",
    "at",
    "resource",
    "outcome",
    "token",
    "highest_token",
    "revision",
    "idempotency_key",
    "expected_revision",
    "owner",
    "lease",
    "body_sha256",
    "body_len",
    "detail",
    "caller",
    "seq",
    "prev_hash",
    "hash",
];

pub(super) async fn run(
    store: &Store,
    filter: &AuditFilter,
    format: ExportFormat,
    output: Option<&Path>,
) -> anyhow::Result<ExitCode> {
    let writer = super::output_writer(output)?;
    let count = export(store, filter, format, writer).await?;
    if std::io::stderr().is_terminal() {
        eprintln!("\rexported {count} rows");
    }
    Ok(ExitCode::SUCCESS)
}

/// Where the rows go, buffered: one CSV writer for the whole export, or JSON lines.
enum Sink {
    Csv(Box<csv::Writer<Box<dyn Write>>>),
    Jsonl(std::io::BufWriter<Box<dyn Write>>),
}

/// Streams the rows out one at a time: constant memory however large the audit.
async fn export(
    store: &Store,
    filter: &AuditFilter,
    format: ExportFormat,
    writer: Box<dyn Write>,
) -> anyhow::Result<u64> {
    let progress = std::io::stderr().is_terminal();
    let mut sink = match format {
        ExportFormat::Csv => {
            let mut csv = csv::Writer::from_writer(writer);
            csv.write_record(CSV_COLUMNS)?;
            Sink::Csv(Box::new(csv))
        }
        ExportFormat::Jsonl => Sink::Jsonl(std::io::BufWriter::new(writer)),
    };
    let mut count = 0u64;
    let written = store
        .each_audit_record(filter, AuditWalk::ALL, |record| {
            count += 1;
            if progress && count % 10_000 == 0 {
                eprint!("\rexported {count} rows");
            }
            match &mut sink {
                Sink::Csv(csv) => csv.write_record(csv_fields(record)).map_err(io),
                Sink::Jsonl(writer) => {
                    serde_json::to_writer(&mut *writer, record).map_err(io)?;
                    writer.write_all(b"\n").map_err(io)
                }
            }
        })
        .await?;
    match &mut sink {
        Sink::Csv(csv) => csv.flush()?,
        Sink::Jsonl(writer) => writer.flush()?,
    }
    Ok(written)
}

fn csv_fields(record: &AuditRecord) -> [String; CSV_COLUMNS.len()] {
    let e = &record.entry;
    let opt = |v: Option<i64>| v.map(|n| n.to_string()).unwrap_or_default();
    let s = |v: &Option<String>| v.clone().unwrap_or_default();
    [
        e.id.to_string(),
        time(&e.at),
        e.resource.clone(),
        e.outcome.as_str().to_owned(),
        opt(e.token),
        e.highest_token.to_string(),
        e.revision.to_string(),
        s(&e.idempotency_key),
        opt(e.expected_revision),
        s(&e.owner),
        s(&e.lease),
        s(&e.body_sha256),
        opt(e.body_len),
        s(&e.detail),
        s(&e.caller),
        opt(record.seq),
        s(&record.prev_hash),
        s(&record.hash),
    ]
}
