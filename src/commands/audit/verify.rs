//! `audit verify`: every resource's hash chain, and the first broken link of each; with
//! `--checkpoint`, only the rows after the positions an earlier run verified, with `--witness`
//! only those after the heads the witness signed (`--full`: every row). Every run also
//! names rows added without a place in a chain and resources whose stored state disagrees
//! with their audit, as breaches like the chains'.

use super::verify_record;
use crate::domain::audit::format_rfc3339_micros;
use crate::domain::witness::{Checkpoint, PublicKey, WitnessError, WitnessedAudit};
use crate::store::{Breach, Store, VerifyReport};
use anyhow::Context;
use std::io::BufRead;
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
    print(
        &report,
        json,
        checkpoint.is_some().then_some("the checkpoint"),
    )?;
    Ok(if report.breaches.is_empty() {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    })
}

/// The audit held to the checkpoints in the witness file (every line must be signed by `key`:
/// one that is not is refused, not skipped) and to those the database keeps that `key` signed:
/// the rows after the heads they saw, or with `full` every row.
pub(super) async fn run_witnessed(
    store: &Store,
    json: bool,
    witness: Option<&Path>,
    key: &PublicKey,
    full: bool,
) -> anyhow::Result<ExitCode> {
    let mut witnessed = WitnessedAudit::default();
    if let Some(path) = witness {
        let file = std::fs::File::open(path)
            .with_context(|| format!("cannot read the witness {}", path.display()))?;
        for (number, line) in std::io::BufReader::new(file).lines().enumerate() {
            let line = line.with_context(|| format!("cannot read {}", path.display()))?;
            if line.trim().is_empty() {
                continue;
            }
            let checkpoint = Checkpoint::read(&line, key).with_context(|| {
                format!(
                    "line {} of the witness {} is refused",
                    number + 1,
                    path.display()
                )
            })?;
            witnessed.absorb(&checkpoint);
        }
    }
    // The database's copies: another key's are another witness's; one that claims this key
    // and does not verify was forged or edited.
    let mut forged = 0u64;
    store
        .each_witness_line(|line| match Checkpoint::read(line, key) {
            Ok(checkpoint) => witnessed.absorb(&checkpoint),
            Err(WitnessError::WrongKey { .. }) => {}
            Err(_) => forged += 1,
        })
        .await?;
    if witnessed.checkpoints == 0 {
        eprintln!(
            "warning: no checkpoint signed by this key was found: only chains, rows and state \
             are checked"
        );
    }
    let mut report = store.verify_audit_witnessed(&witnessed, key, full).await?;
    if forged > 0 {
        report.breaches.push(Breach {
            resource: "(audit_witness)".into(),
            audit_id: None,
            seq: None,
            problem: format!(
                "{forged} checkpoint(s) kept in the database name the witness's key but their \
                 signatures do not match: they were forged or edited"
            ),
        });
    }
    let covered = (!report.full).then_some("the witness's checkpoints");
    print(&report, json, covered)?;
    Ok(if report.breaches.is_empty() {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    })
}

/// One breach, as a line of `verify`'s text output.
pub(super) fn describe(breach: &Breach) -> String {
    let position = breach.seq.unwrap_or(0);
    let at = match breach.audit_id {
        Some(id) => format!("audit row {id} (position {position})"),
        None => format!("position {position}"),
    };
    format!("BROKEN {}: at {at}: {}", breach.resource, breach.problem)
}

/// `covered_by`: what vouches for the rows an incremental run did not read, for the text.
fn print(report: &VerifyReport, json: bool, covered_by: Option<&str>) -> anyhow::Result<()> {
    let mut out = std::io::stdout().lock();
    if json {
        writeln!(out, "{}", serde_json::to_string(report)?)?;
    } else if report.breaches.is_empty() {
        write!(
            out,
            "ok: {} rows in {} chains verify ({} older rows are not chained)",
            report.rows, report.resources, report.unchained
        )?;
        if let Some(covered_by) = covered_by {
            write!(
                out,
                "; {} earlier rows in {} chains are covered by {covered_by}",
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
            writeln!(out, "{}", describe(breach))?;
        }
    }
    if let (false, Some(witness)) = (json, &report.witness) {
        writeln!(
            out,
            "witness: {} checkpoint(s) over {} chains; the latest signed at {} with {} rows",
            witness.checkpoints,
            witness.chains,
            witness.latest_at.as_deref().unwrap_or("-"),
            witness.latest_rows.unwrap_or(0)
        )?;
    }
    Ok(())
}
