//! `fencewatch audit … --database URL` on a database that holds a fence (`fencewatch fence
//! install`) rather than the daemon's tables, or with `--fence`: the same tools over the fence's
//! own audit. Its incidents are derived from its refusals (`domain::fence_overlaps`), as it has
//! no overlaps table; `verify` checks its chains and counts SQLite's unsealed tail apart.

use super::fence_rows::{each_row, walk_rows, Filter};
use super::{micros, text, time};
use crate::cli::AuditCommand;
use crate::domain::duration::saturating_micros;
use crate::domain::fence_audit::FenceAuditRow;
use crate::domain::fence_overlaps::incidents;
use crate::domain::incident::{condense, Evidence, Folding, IncidentReport};
use crate::domain::{AuditEntry, Outcome, Overlap};
use crate::owndb::OwnDb;
use crate::store::AuditWalk;
use chrono::{DateTime, Utc};
use serde::Serialize;
use std::io::Write;
use std::ops::ControlFlow;
use std::process::ExitCode;
use std::time::Duration;

/// An incident closes after this long without a refusal: the daemon's default
/// (`serve --overlap-quiet`).
const QUIET: Duration = Duration::from_secs(60);

/// Runs `command` on the fence in `db`.
pub(super) async fn run(
    db: &OwnDb,
    command: AuditCommand,
    now: DateTime<Utc>,
) -> anyhow::Result<ExitCode> {
    match command {
        AuditCommand::Verify {
            json,
            checkpoint,
            witness,
            public_key,
            ..
        } => {
            // A fence's audit is small beside the daemon's and always checked whole.
            if checkpoint.is_some() {
                anyhow::bail!("--checkpoint applies to the daemon's audit, not to a fence's");
            }
            if witness.is_some() || public_key.is_some() {
                anyhow::bail!(
                    "a fence's audit has no witness yet (docs/guarantees.md): --witness and \
                     --public-key apply to the daemon's audit"
                );
            }
            verify(db, json).await
        }
        AuditCommand::Log {
            filter,
            json,
            limit,
            oldest_first,
        } => {
            let walk = super::log::walk(oldest_first, limit);
            log(db, &Filter::new(&filter, now)?, json, walk).await
        }
        AuditCommand::Export {
            format,
            filter,
            output,
        } => {
            super::fence_export::export(db, &Filter::new(&filter, now)?, format, output.as_deref())
                .await
        }
        AuditCommand::Incidents {
            since,
            until,
            resource,
            limit,
            all,
            json,
        } => {
            let (since, until) = (
                micros(since.as_deref(), now)?,
                micros(until.as_deref(), now)?,
            );
            let found = fence_incidents(db, now).await?;
            let mut shown: Vec<Overlap> = found
                .into_iter()
                .filter(|o| resource.as_ref().is_none_or(|r| *r == o.resource))
                .filter(|o| since.is_none_or(|s| o.last_seen.timestamp_micros() >= s))
                .filter(|o| until.is_none_or(|u| o.first_seen.timestamp_micros() <= u))
                .collect();
            if !all {
                // The latest by first sighting, as the daemon's own audit lists them.
                shown.sort_by_key(|o| (o.first_seen, o.id));
                let keep = usize::try_from(limit).unwrap_or(usize::MAX);
                shown.drain(..shown.len().saturating_sub(keep));
            }
            super::incidents::print(&shown, json)
        }
        AuditCommand::Timeline {
            resource,
            around,
            since,
            until,
            // An installed fence's timeline is built from its whole audit, read at once.
            latest: _,
            all: _,
            json,
        } => {
            let window = match around {
                Some(id) => {
                    let rows = db.audit_rows().await?;
                    let found = incidents(&rows, quiet_us(), now.timestamp_micros());
                    let incident = found
                        .iter()
                        .find(|o| o.id == id)
                        .ok_or_else(|| anyhow::anyhow!("no incident {id}"))?;
                    if incident.resource != resource {
                        anyhow::bail!(
                            "incident {id} is of scope {:?}, not {resource:?}",
                            incident.resource
                        );
                    }
                    let facts = fence_report(&rows, incident, now, false);
                    let (since, until) = crate::domain::incident::window(&facts);
                    (
                        Some(since.timestamp_micros()),
                        Some(until.timestamp_micros()),
                    )
                }
                None => (
                    micros(since.as_deref(), now)?,
                    micros(until.as_deref(), now)?,
                ),
            };
            timeline(db, &resource, window, json).await
        }
        AuditCommand::Report { id, format, output } => {
            let rows = db.audit_rows().await?;
            let found = incidents(&rows, quiet_us(), now.timestamp_micros());
            let incident = found
                .iter()
                .find(|o| o.id == id)
                .ok_or_else(|| anyhow::anyhow!("no incident {id}: `audit incidents` lists them"))?;
            let report = fence_report(&rows, incident, now, true);
            super::report::write(&report, format, output.as_deref())
        }
        AuditCommand::Summary { since, json } => {
            let since = super::parse_time(&since, now)?;
            let rows = db.audit_rows().await?;
            let reports: Vec<IncidentReport> = incidents(&rows, quiet_us(), now.timestamp_micros())
                .iter()
                .filter(|o| o.last_seen >= since)
                .map(|o| fence_report(&rows, o, now, false))
                .collect();
            let summary = crate::domain::incident::summarise(&reports);
            super::summary::print_summary(&summary, &time(&since), json)
        }
        AuditCommand::Keygen { out } => super::witness::keygen(&out),
        AuditCommand::Witness { .. } => anyhow::bail!(
            "a fence's audit has no witness yet (docs/guarantees.md): `audit witness` is for \
             the daemon's database"
        ),
        AuditCommand::Refusals { .. } | AuditCommand::Prune { .. } => anyhow::bail!(
            "a fence's audit has no refusals before the fence and is not pruned: this command \
             is for the daemon's database"
        ),
    }
}

async fn fence_incidents(db: &OwnDb, now: DateTime<Utc>) -> anyhow::Result<Vec<Overlap>> {
    let rows = db.audit_rows().await?;
    Ok(incidents(&rows, quiet_us(), now.timestamp_micros()))
}

fn quiet_us() -> i64 {
    saturating_micros(QUIET)
}

/// An incident of the fence, from its audit alone: the fence keeps no history of the leases,
/// so the lapse and the takeover are unknown.
fn fence_report(
    rows: &[FenceAuditRow],
    incident: &Overlap,
    now: DateTime<Utc>,
    with_timeline: bool,
) -> IncidentReport {
    let of_scope: Vec<AuditEntry> = rows
        .iter()
        .filter(|r| r.resource == incident.resource)
        .filter_map(entry)
        .collect();
    let generations: Vec<AuditEntry> = of_scope
        .iter()
        .filter(|e| {
            e.token == Some(incident.stale_token) || e.token == Some(incident.superseding_token)
        })
        .cloned()
        .collect();
    let mut report = crate::domain::incident::facts(&Evidence {
        overlap: incident,
        writes: &generations,
        history: &[],
        now,
    });
    if with_timeline {
        let (since, until) = crate::domain::incident::window(&report);
        let in_window: Vec<AuditEntry> = of_scope
            .into_iter()
            .filter(|e| e.at >= since && e.at <= until)
            .collect();
        report.timeline = condense(&in_window, &[], Folding::Alike);
    }
    report
}

/// A fence row as an audit entry; one with an outcome the daemon does not know is left out.
fn entry(row: &FenceAuditRow) -> Option<AuditEntry> {
    Some(AuditEntry {
        id: row.id,
        at: row.at,
        resource: row.resource.clone(),
        outcome: row.known_outcome()?,
        token: row.token,
        highest_token: row.highest_token,
        revision: 0,
        idempotency_key: row.idempotency_key.clone(),
        expected_revision: None,
        owner: row.owner.clone(),
        lease: row.lease.clone(),
        body_sha256: None,
        body_len: None,
        detail: row.detail.clone(),
        caller: None,
        source: None,
    })
}

async fn verify(db: &OwnDb, json: bool) -> anyhow::Result<ExitCode> {
    let check = db.verify().await?;
    let mut out = std::io::stdout().lock();
    if json {
        writeln!(out, "{}", serde_json::to_string(&check)?)?;
    } else if check.intact() {
        writeln!(
            out,
            "ok: {} rows in {} chains of the fence verify ({} unsealed rows at their tails)",
            check.rows, check.scopes, check.unsealed
        )?;
        if check.unsealed > 0 {
            writeln!(
                out,
                "unsealed rows are SQLite's newest, not hashed yet: `fencewatch fence seal` or a \
                 daemon watching the file seals them"
            )?;
        }
    } else {
        for breach in &check.breaches {
            writeln!(
                out,
                "BROKEN {}: at audit row {} (position {}): {}",
                breach.resource,
                breach.id,
                breach.seq,
                serde_json::to_string(&breach.fault)?
            )?;
        }
    }
    Ok(if check.intact() {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    })
}

async fn log(db: &OwnDb, filter: &Filter, json: bool, walk: AuditWalk) -> anyhow::Result<ExitCode> {
    let mut out = std::io::stdout().lock();
    if !json {
        writeln!(
            out,
            "{:<8} {:<27} {:<13} {:<24} {:>6} {:>7} {:<12} {:<20} OPERATION",
            "ID", "AT", "OUTCOME", "SCOPE", "TOKEN", "HIGHEST", "OWNER", "TABLE"
        )?;
    }
    // The filters are applied here, not in SQL, so the limit ends the walk as soon as it is
    // met: no page after the one holding the last row shown is read.
    let mut shown = 0u64;
    let full = |shown: u64| walk.limit.is_some_and(|limit| shown >= limit);
    walk_rows(db, walk.order, |row| {
        if full(shown) {
            return Ok(ControlFlow::Break(()));
        }
        if !filter.matches(row) {
            return Ok(ControlFlow::Continue(()));
        }
        shown += 1;
        if json {
            writeln!(out, "{}", serde_json::to_string(row)?)?;
        } else {
            writeln!(
                out,
                "{:<8} {:<27} {:<13} {:<24} {:>6} {:>7} {:<12} {:<20} {}",
                row.id,
                time(&row.at),
                row.outcome,
                row.resource,
                row.token.map_or("-".into(), |t| t.to_string()),
                row.highest_token,
                text(&row.owner),
                text(&row.table_name),
                text(&row.idempotency_key)
            )?;
        }
        Ok(if full(shown) {
            ControlFlow::Break(())
        } else {
            ControlFlow::Continue(())
        })
    })
    .await?;
    Ok(ExitCode::SUCCESS)
}

/// A scope's history in the fence's audit.
#[derive(Debug, Serialize)]
struct FenceTimeline {
    resource: String,
    since: Option<String>,
    until: Option<String>,
    /// The scope's rows in the window, oldest first.
    entries: Vec<FenceAuditRow>,
    /// Ids of the refused rows among them.
    rejected: Vec<i64>,
}

async fn timeline(
    db: &OwnDb,
    resource: &str,
    (since_us, until_us): (Option<i64>, Option<i64>),
    json: bool,
) -> anyhow::Result<ExitCode> {
    let filter = Filter::scope(resource, since_us, until_us);
    let mut entries = Vec::new();
    each_row(db, |row| {
        if filter.matches(row) {
            entries.push(row.clone());
        }
        Ok(())
    })
    .await?;
    let rejected = entries
        .iter()
        .filter(|row| row.known_outcome().is_some_and(Outcome::is_rejection))
        .map(|row| row.id)
        .collect();
    let format = |us: Option<i64>| {
        us.and_then(DateTime::from_timestamp_micros)
            .map(|t| time(&t))
    };
    let timeline = FenceTimeline {
        resource: resource.to_owned(),
        since: format(since_us),
        until: format(until_us),
        entries,
        rejected,
    };
    let mut out = std::io::stdout().lock();
    if json {
        writeln!(out, "{}", serde_json::to_string(&timeline)?)?;
        return Ok(ExitCode::SUCCESS);
    }
    writeln!(
        out,
        "timeline of scope {} ({} entries)",
        timeline.resource,
        timeline.entries.len()
    )?;
    for row in &timeline.entries {
        let table = row
            .table_name
            .as_deref()
            .map(|t| format!(" on {t}"))
            .unwrap_or_else(|| " by the guard call".into());
        writeln!(
            out,
            "{}  WRITE {:<10} gen {} by {} (highest {}){table}{}",
            time(&row.at),
            row.outcome,
            row.token.map_or("-".into(), |t| t.to_string()),
            text(&row.owner),
            row.highest_token,
            row.detail
                .as_deref()
                .map(|d| format!(": {d}"))
                .unwrap_or_default()
        )?;
    }
    Ok(ExitCode::SUCCESS)
}
