//! `fencewatch audit …`: incident reconstruction, tamper checks, retention and export, straight
//! from the database, so they work while the daemon is down.

use crate::cli::{AuditArgs, AuditCommand, AuditFilterArgs, ExportFormat};
use crate::domain::audit::format_rfc3339_micros;
use crate::domain::{Outcome, Overlap};
use crate::store::{
    AuditFilter, AuditRecord, LeaseEvent, OpenMode, Store, StoreError, StoreOptions,
};
use anyhow::Context;
use chrono::{DateTime, Utc};
use serde::Serialize;
use serde_json::{json, Value};
use std::io::{IsTerminal, Write};
use std::process::ExitCode;

/// Parses `2026-11-30T03:40:00Z` or a duration ago such as `1h` or `90m`.
pub fn parse_time(text: &str, now: DateTime<Utc>) -> Result<DateTime<Utc>, String> {
    if let Ok(at) = DateTime::parse_from_rfc3339(text) {
        return Ok(at.with_timezone(&Utc));
    }
    let ago = humantime::parse_duration(text)
        .map_err(|_| format!("{text:?} is neither an RFC 3339 time nor a duration like 1h"))?;
    let ago = chrono::Duration::from_std(ago).map_err(|e| e.to_string())?;
    Ok(now - ago)
}

fn micros(text: Option<&str>, now: DateTime<Utc>) -> anyhow::Result<Option<i64>> {
    text.map(|t| parse_time(t, now).map(|at| at.timestamp_micros()))
        .transpose()
        .map_err(anyhow::Error::msg)
}

fn filter(args: &AuditFilterArgs, now: DateTime<Utc>) -> anyhow::Result<AuditFilter> {
    Ok(AuditFilter {
        resource: args.resource.clone(),
        owner: args.owner.clone(),
        outcome: args
            .outcome
            .as_deref()
            .map(|o| Outcome::parse(o).ok_or_else(|| anyhow::anyhow!("unknown outcome {o:?}")))
            .transpose()?,
        token: args.token,
        since_us: micros(args.since.as_deref(), now)?,
        until_us: micros(args.until.as_deref(), now)?,
    })
}

fn time(at: &DateTime<Utc>) -> String {
    format_rfc3339_micros(at)
}

fn text(value: &Option<String>) -> &str {
    value.as_deref().unwrap_or("-")
}

pub async fn run(args: AuditArgs) -> anyhow::Result<ExitCode> {
    // Only `prune` writes; nothing here creates a database or migrates one, so that a mistyped
    // path is an error rather than an empty audit that verifies.
    let mode = match args.command {
        AuditCommand::Prune { .. } => OpenMode::Existing,
        _ => OpenMode::ReadOnly,
    };
    let store = Store::open(
        &args.database,
        &StoreOptions {
            max_connections: 2,
            mode,
            ..StoreOptions::default()
        },
    )
    .await
    .context("failed to open the database")?;
    let now = Utc::now();
    let mut out = std::io::stdout().lock();
    let code = match args.command {
        AuditCommand::Verify { json } => {
            let report = store.verify_audit().await?;
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
            if report.breaches.is_empty() {
                ExitCode::SUCCESS
            } else {
                ExitCode::FAILURE
            }
        }
        AuditCommand::Log {
            filter: filter_args,
            json,
            limit,
        } => {
            let filter = filter(&filter_args, now)?;
            let mut shown = 0u64;
            if !json {
                writeln!(
                    out,
                    "{:<8} {:<27} {:<20} {:<24} {:>6} {:>7} {:>4} {:<12} OPERATION",
                    "ID", "AT", "OUTCOME", "RESOURCE", "TOKEN", "HIGHEST", "REV", "OWNER"
                )?;
            }
            store
                .each_audit_record(&filter, |record| {
                    if limit.is_some_and(|limit| shown >= limit) {
                        return Ok(());
                    }
                    shown += 1;
                    let e = &record.entry;
                    let written = if json {
                        serde_json::to_string(record)
                            .map_err(io)
                            .and_then(|line| writeln!(out, "{line}").map_err(io))
                    } else {
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
                    };
                    written
                })
                .await?;
            ExitCode::SUCCESS
        }
        AuditCommand::Export {
            format,
            filter: filter_args,
            output,
        } => {
            let filter = filter(&filter_args, now)?;
            let writer: Box<dyn Write> = match &output {
                Some(path) => Box::new(
                    std::fs::File::create(path)
                        .with_context(|| format!("cannot create {}", path.display()))?,
                ),
                None => Box::new(std::io::stdout().lock()),
            };
            drop(out);
            let count = export(&store, &filter, format, writer).await?;
            if std::io::stderr().is_terminal() {
                eprintln!("\rexported {count} rows");
            }
            return Ok(ExitCode::SUCCESS);
        }
        AuditCommand::Incidents {
            since,
            until,
            resource,
            json,
        } => {
            let incidents = store
                .incidents(
                    micros(since.as_deref(), now)?,
                    micros(until.as_deref(), now)?,
                    resource.as_deref(),
                )
                .await?;
            if json {
                writeln!(
                    out,
                    "{}",
                    serde_json::to_string(&json!({ "incidents": incidents }))?
                )?;
            } else {
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
                for o in &incidents {
                    writeln!(
                        out,
                        "{:<5} {:<24} {:>5} {:>5} {:<12} {:<12} {:>6} {:<27} {:<27} {}",
                        o.id,
                        o.resource,
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
            }
            ExitCode::SUCCESS
        }
        AuditCommand::Timeline {
            resource,
            around,
            since,
            until,
            json,
        } => {
            let (since_us, until_us) = match around {
                Some(id) => {
                    let incident = store
                        .overlap(id)
                        .await?
                        .ok_or_else(|| anyhow::anyhow!("no incident {id}"))?;
                    if incident.resource != resource {
                        anyhow::bail!(
                            "incident {id} is of resource {:?}, not {resource:?}: \
                             use `audit timeline {:?} --around {id}`",
                            incident.resource,
                            incident.resource
                        );
                    }
                    window_around(&incident)
                }
                None => (
                    micros(since.as_deref(), now)?,
                    micros(until.as_deref(), now)?,
                ),
            };
            let timeline = timeline(&store, &resource, since_us, until_us).await?;
            if json {
                writeln!(out, "{}", serde_json::to_string(&timeline)?)?;
            } else {
                print_timeline(&mut out, &timeline)?;
            }
            ExitCode::SUCCESS
        }
        AuditCommand::Prune { before, json } => {
            let before = parse_time(&before, now).map_err(anyhow::Error::msg)?;
            let report = store.prune_audit(before.timestamp_micros()).await?;
            if json {
                writeln!(out, "{}", serde_json::to_string(&report)?)?;
            } else {
                writeln!(
                    out,
                    "pruned {} rows of {} resources, each behind a checkpoint; {} lease events, \
                     {} closed overlaps and {} alert transitions",
                    report.rows,
                    report.resources,
                    report.lease_events,
                    report.closed_overlaps,
                    report.alert_transitions
                )?;
            }
            ExitCode::SUCCESS
        }
    };
    store.close().await;
    Ok(code)
}

/// Why printing or exporting the audit stopped.
#[derive(Debug, thiserror::Error)]
enum OutputError {
    #[error(transparent)]
    Store(#[from] StoreError),
    /// The output could not be written (a closed pipe, a full disk) or encoded.
    #[error("failed to write the output: {0}")]
    Write(String),
}

fn io(error: impl std::fmt::Display) -> OutputError {
    OutputError::Write(error.to_string())
}

/// A minute either side of an incident.
fn window_around(incident: &Overlap) -> (Option<i64>, Option<i64>) {
    let margin = 60_000_000;
    (
        Some(incident.first_seen.timestamp_micros() - margin),
        Some(incident.last_seen.timestamp_micros() + margin),
    )
}

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

/// Streams the rows out one at a time: constant memory however large the audit.
async fn export(
    store: &Store,
    filter: &AuditFilter,
    format: ExportFormat,
    writer: Box<dyn Write>,
) -> anyhow::Result<u64> {
    let progress = std::io::stderr().is_terminal();
    let mut writer = std::io::BufWriter::new(writer);
    let mut csv = match format {
        ExportFormat::Csv => {
            let mut csv = csv::Writer::from_writer(Vec::new());
            csv.write_record(CSV_COLUMNS)?;
            writer.write_all(&csv.into_inner().map_err(|e| anyhow::anyhow!("{e}"))?)?;
            Some(())
        }
        ExportFormat::Jsonl => None,
    };
    let mut count = 0u64;
    let written = store
        .each_audit_record(filter, |record| {
            count += 1;
            if progress && count % 10_000 == 0 {
                eprint!("\rexported {count} rows");
            }
            match &mut csv {
                Some(()) => {
                    let mut line = csv::Writer::from_writer(Vec::new());
                    line.write_record(csv_fields(record)).map_err(io)?;
                    let bytes = line.into_inner().map_err(io)?;
                    writer.write_all(&bytes).map_err(io)
                }
                None => {
                    serde_json::to_writer(&mut writer, record).map_err(io)?;
                    writer.write_all(b"\n").map_err(io)
                }
            }
        })
        .await?;
    writer.flush()?;
    Ok(written)
}

fn csv_fields(record: &AuditRecord) -> Vec<String> {
    let e = &record.entry;
    let opt = |v: Option<i64>| v.map(|n| n.to_string()).unwrap_or_default();
    let s = |v: &Option<String>| v.clone().unwrap_or_default();
    vec![
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

/// Who held a lease's generation, from when until when.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Holding {
    pub lease: String,
    pub token: i64,
    pub holder: String,
    pub from: String,
    /// When the grant ended (released, expired as observed, or superseded); `None` if current.
    pub until: Option<String>,
    pub ended_by: Option<String>,
}

#[derive(Debug, Clone, Serialize)]
pub struct Timeline {
    pub resource: String,
    pub since: Option<String>,
    pub until: Option<String>,
    pub leases: Vec<String>,
    pub holders: Vec<Holding>,
    /// Writes and lease events interleaved in time order.
    pub entries: Vec<Value>,
    /// Accepted writes whose generation the lease authority had already superseded: the stale
    /// writes that got through (possible only without `Fencing-Lease`).
    pub accepted_while_superseded: Vec<i64>,
    /// Rejected attempts: audit id, outcome, token, operation, owner.
    pub rejected: Vec<Value>,
}

/// The resource's writes and the history of the leases that touch it, interleaved, with the
/// value's revision and hash before and after each accepted write.
pub async fn timeline(
    store: &Store,
    resource: &str,
    since_us: Option<i64>,
    until_us: Option<i64>,
) -> anyhow::Result<Timeline> {
    let mut records = Vec::new();
    store
        .each_audit_record(
            &AuditFilter {
                resource: Some(resource.to_owned()),
                ..AuditFilter::default()
            },
            |r| {
                records.push(r.clone());
                Ok::<_, StoreError>(())
            },
        )
        .await?;
    // Leases named by the writes, and leases whose scope covers the resource.
    let mut leases: Vec<String> = records
        .iter()
        .filter_map(|r| r.entry.lease.clone())
        .collect();
    for name in store.lease_names().await? {
        if resource == name || resource.starts_with(&format!("{name}/")) {
            leases.push(name);
        }
    }
    leases.sort();
    leases.dedup();
    let history = store.lease_history(&leases, None, None).await?;
    let holders = holdings(&history);

    let in_window = |us: i64| since_us.is_none_or(|s| us >= s) && until_us.is_none_or(|u| us <= u);
    let mut entries: Vec<(i64, i64, Value)> = Vec::new();
    let mut accepted_while_superseded = Vec::new();
    let mut rejected = Vec::new();
    let mut before: (i64, Option<String>) = (0, None);
    for record in &records {
        let e = &record.entry;
        let at = e.at.timestamp_micros();
        let mut row = serde_json::to_value(record)?;
        row["kind"] = "write".into();
        if e.outcome == Outcome::Accepted {
            row["revision_before"] = before.0.into();
            row["value_sha256_before"] = before.1.clone().into();
            row["revision_after"] = e.revision.into();
            row["value_sha256_after"] = e.body_sha256.clone().into();
            // The newest generation any related lease had issued when this write landed.
            let current = history
                .iter()
                .filter(|ev| {
                    ev.event == "acquired"
                        && ev.at <= e.at
                        && (e.lease.is_none() || e.lease.as_deref() == Some(ev.lease.as_str()))
                })
                .map(|ev| ev.token)
                .max();
            if let (Some(current), Some(token)) = (current, e.token) {
                row["lease_generation_at_write"] = current.into();
                if token < current {
                    accepted_while_superseded.push(e.id);
                }
            }
            before = (e.revision, e.body_sha256.clone());
        } else if in_window(at) {
            rejected.push(json!({
                "audit_id": e.id, "at": time(&e.at), "outcome": e.outcome.as_str(), "token": e.token,
                "highest_token": e.highest_token, "idempotency_key": e.idempotency_key, "owner": e.owner,
            }));
        }
        if in_window(at) {
            entries.push((at, 1, row));
        }
    }
    for event in &history {
        let at = event.at.timestamp_micros();
        if in_window(at) {
            let mut row = serde_json::to_value(event)?;
            row["kind"] = "lease".into();
            entries.push((at, 0, row));
        }
    }
    entries.sort_by_key(|(at, kind, row)| (*at, *kind, row["id"].as_i64()));
    let accepted_while_superseded: Vec<i64> = accepted_while_superseded
        .into_iter()
        .filter(|id| {
            records
                .iter()
                .any(|r| r.entry.id == *id && in_window(r.entry.at.timestamp_micros()))
        })
        .collect();
    let format = |us: Option<i64>| {
        us.and_then(DateTime::from_timestamp_micros)
            .map(|t| time(&t))
    };
    Ok(Timeline {
        resource: resource.to_owned(),
        since: format(since_us),
        until: format(until_us),
        leases,
        holders,
        entries: entries.into_iter().map(|(_, _, row)| row).collect(),
        accepted_while_superseded,
        rejected,
    })
}

/// Turns a lease's events into who held which generation when.
pub fn holdings(events: &[LeaseEvent]) -> Vec<Holding> {
    let mut holdings: Vec<Holding> = Vec::new();
    for event in events {
        match event.event.as_str() {
            "acquired" => {
                if let Some(open) = holdings
                    .iter_mut()
                    .rev()
                    .find(|h| h.lease == event.lease && h.until.is_none())
                {
                    open.until = Some(time(&event.at));
                    open.ended_by = Some(format!("superseded by generation {}", event.token));
                }
                holdings.push(Holding {
                    lease: event.lease.clone(),
                    token: event.token,
                    holder: event.holder.clone(),
                    from: time(&event.at),
                    until: None,
                    ended_by: None,
                });
            }
            "released" | "expired" => {
                if let Some(open) = holdings
                    .iter_mut()
                    .rev()
                    .find(|h| h.lease == event.lease && h.token == event.token && h.until.is_none())
                {
                    let end = if event.event == "expired" {
                        event.expires_at
                    } else {
                        event.at
                    };
                    open.until = Some(time(&end));
                    open.ended_by = Some(event.event.clone());
                }
            }
            _ => {}
        }
    }
    holdings
}

fn print_timeline(out: &mut impl Write, timeline: &Timeline) -> std::io::Result<()> {
    writeln!(
        out,
        "timeline of {} ({} entries)",
        timeline.resource,
        timeline.entries.len()
    )?;
    for holding in &timeline.holders {
        writeln!(
            out,
            "  lease {} generation {} held by {} from {} until {}{}",
            holding.lease,
            holding.token,
            holding.holder,
            holding.from,
            holding.until.as_deref().unwrap_or("now"),
            holding
                .ended_by
                .as_ref()
                .map(|e| format!(" ({e})"))
                .unwrap_or_default()
        )?;
    }
    for entry in &timeline.entries {
        let text = |key: &str| match &entry[key] {
            Value::Null => "-".to_owned(),
            Value::String(s) => s.clone(),
            other => other.to_string(),
        };
        if entry["kind"] == "lease" {
            writeln!(
                out,
                "{}  LEASE {:<9} {} generation {} by {}",
                text("at"),
                text("event"),
                text("lease"),
                text("token"),
                text("holder")
            )?;
        } else if entry["outcome"] == "accepted" {
            writeln!(
                out,
                "{}  WRITE accepted  gen {} by {}: revision {} -> {}, value {} -> {}",
                text("at"),
                text("token"),
                text("owner"),
                text("revision_before"),
                text("revision_after"),
                short(&text("value_sha256_before")),
                short(&text("value_sha256_after"))
            )?;
        } else {
            writeln!(
                out,
                "{}  WRITE {:<9} gen {} by {} (highest {}): {}",
                text("at"),
                text("outcome"),
                text("token"),
                text("owner"),
                text("highest_token"),
                text("detail")
            )?;
        }
    }
    if timeline.accepted_while_superseded.is_empty() {
        writeln!(out, "no write of a superseded generation was accepted")?;
    } else {
        writeln!(
            out,
            "ACCEPTED WHILE SUPERSEDED: audit rows {:?}",
            timeline.accepted_while_superseded
        )?;
    }
    Ok(())
}

fn short(hash: &str) -> String {
    hash.get(..12).unwrap_or(hash).to_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn times_are_absolute_or_ago() {
        let now = DateTime::parse_from_rfc3339("2026-11-30T04:00:00Z")
            .unwrap()
            .with_timezone(&Utc);
        assert_eq!(
            parse_time("2026-11-30T03:40:00Z", now)
                .unwrap()
                .to_rfc3339(),
            "2026-11-30T03:40:00+00:00"
        );
        assert_eq!(
            parse_time("1h", now).unwrap().to_rfc3339(),
            "2026-11-30T03:00:00+00:00"
        );
        assert_eq!(
            parse_time("90m", now).unwrap().to_rfc3339(),
            "2026-11-30T02:30:00+00:00"
        );
        assert!(parse_time("yesterday", now).is_err());
    }
}
