//! `fencewatch fence …`: install, protect, unprotect, status, reset, uninstall and seal the
//! fence in the user's own database. Each prints one line saying what it did (status: what it
//! found, exiting 1 when that includes a problem); errors go to stderr with the exit code
//! `OwnDbError::exit_code` gives.

use crate::cli::{FenceArgs, FenceCommand};
use crate::domain::{FencingToken, ResetReason};
use crate::owndb::{
    AutonomousAudit, DdlGuard, FenceStatus, Generation, InstallOptions, InstallOutcome,
    OpenOptions, OwnDb, OwnDbError, ProtectSpec, ProtectedTable, ScopeSource, UninstallOutcome,
    UnprotectOutcome,
};
use std::process::ExitCode;

/// What a subcommand prints, and whether what it found is a problem (exit 1).
struct Answer {
    lines: Vec<String>,
    problem: bool,
}

impl From<Vec<String>> for Answer {
    fn from(lines: Vec<String>) -> Self {
        Answer {
            lines,
            problem: false,
        }
    }
}

pub async fn run(args: FenceArgs) -> anyhow::Result<ExitCode> {
    match execute(args.command).await {
        Ok(answer) => {
            for line in answer.lines {
                super::print_line(&line)?;
            }
            Ok(match answer.problem {
                true => ExitCode::FAILURE,
                false => ExitCode::SUCCESS,
            })
        }
        Err(error) => {
            eprintln!("error: {error}");
            Ok(ExitCode::from(error.exit_code()))
        }
    }
}

/// Runs one subcommand; what it prints.
async fn execute(command: FenceCommand) -> Result<Answer, OwnDbError> {
    let target = command.target();
    let db = OwnDb::open(
        &target.database,
        &OpenOptions {
            schema: target.schema.clone(),
            ..OpenOptions::default()
        },
    )
    .await?;
    let lines = dispatch(&db, command).await;
    db.close().await;
    lines
}

async fn dispatch(db: &OwnDb, command: FenceCommand) -> Result<Answer, OwnDbError> {
    match command {
        FenceCommand::Install {
            lease_schema,
            operation_retention,
            ..
        } => {
            let outcome = db
                .install(&InstallOptions {
                    lease_schema,
                    operation_retention,
                })
                .await?;
            let line = match outcome {
                InstallOutcome::Installed { version } => {
                    format!("installed fencewatch fence v{version} in {}", db.place())
                }
                InstallOutcome::AlreadyInstalled { version } => {
                    format!("already installed (v{version})")
                }
                InstallOutcome::Upgraded { from, to } => format!("upgraded v{from} → v{to}"),
            };
            // Said on stderr: the one line on stdout is what was done.
            if let AutonomousAudit::Unavailable { reason } = db.status().await?.autonomous_audit {
                eprintln!(
                    "warning: a refused guard call is audited only if the caller commits: {reason} \
                     (see docs/own-database.md, \"Refusals that survive a rollback\")"
                );
            }
            Ok(Answer::from(vec![line]))
        }
        FenceCommand::Protect {
            table,
            token_column,
            scope_column,
            scope,
            op_column,
            owner_column,
            lease,
            generation,
            ..
        } => {
            let scope = match (scope_column, scope) {
                (Some(column), None) => ScopeSource::Column(column),
                (None, Some(scope)) => ScopeSource::Fixed(scope),
                _ => {
                    return Err(OwnDbError::Invalid(
                        "give --scope-column or --scope, not both".into(),
                    ))
                }
            };
            let protected = db
                .protect(&ProtectSpec {
                    table,
                    token_column,
                    scope,
                    op_column,
                    owner_column,
                    lease,
                    generation: generation.as_deref().and_then(Generation::parse),
                })
                .await?;
            Ok(Answer::from(vec![format!(
                "protected {}",
                describe(&protected)
            )]))
        }
        FenceCommand::Unprotect { table, .. } => {
            Ok(Answer::from(vec![match db.unprotect(&table).await? {
                UnprotectOutcome::Unprotected => format!("unprotected {table}"),
                UnprotectOutcome::WasNotProtected => format!("{table} was not protected"),
            }]))
        }
        FenceCommand::Status { json, .. } => {
            let status = db.status().await?;
            let lines = match json {
                true => vec![serde_json::to_string(&status).unwrap_or_default()],
                false => status_lines(&status),
            };
            Ok(Answer {
                lines,
                problem: !status.problems.is_empty(),
            })
        }
        FenceCommand::Reset {
            scope, to, reason, ..
        } => {
            let to = FencingToken::new(to)
                .map_err(|e| OwnDbError::Invalid(format!("--to {to}: {e}")))?;
            let reason = ResetReason::parse(&reason)
                .map_err(|e| OwnDbError::Invalid(format!("--reason: {e}")))?;
            let done = db.reset(&scope, to.get(), reason.as_str()).await?;
            Ok(Answer::from(vec![format!(
                "reset {scope} from {} to {}",
                done.previous,
                to.get()
            )]))
        }
        FenceCommand::Uninstall { .. } => match db.uninstall().await? {
            UninstallOutcome::NotInstalled => {
                Ok(Answer::from(
                    vec!["not installed; nothing to remove".into()],
                ))
            }
            UninstallOutcome::Uninstalled { version, left } => {
                for note in &left {
                    eprintln!("warning: {note}");
                }
                Ok(Answer::from(vec![format!(
                    "uninstalled fencewatch fence v{version} from {}",
                    db.place()
                )]))
            }
        },
        FenceCommand::Seal { .. } => match db {
            OwnDb::Postgres(_) => Ok(Answer::from(vec![
                "nothing to seal: PostgreSQL's fence hashes each row as it writes it".into(),
            ])),
            OwnDb::Sqlite(_) => {
                let report = db.seal().await?;
                Ok(Answer::from(vec![format!(
                    "sealed {} rows on {} scopes",
                    report.sealed, report.scopes
                )]))
            }
        },
    }
}

/// `orders (token tok, scope column region, op column op, owner column who, lease jobs)`.
fn describe(table: &ProtectedTable) -> String {
    let mut parts = vec![format!("token column {}", table.token_column)];
    match (&table.scope_column, &table.scope) {
        (Some(column), _) => parts.push(format!("scope column {column}")),
        (None, Some(scope)) => parts.push(format!("scope {scope}")),
        (None, None) => {}
    }
    if let Some(column) = &table.op_column {
        parts.push(format!("op column {column}"));
    }
    if let Some(column) = &table.owner_column {
        parts.push(format!("owner column {column}"));
    }
    if let Some(lease) = &table.lease {
        parts.push(format!("lease {lease}"));
    }
    format!("{} ({})", table.table, parts.join(", "))
}

fn status_lines(status: &FenceStatus) -> Vec<String> {
    let place = match &status.schema {
        Some(schema) => format!("{} (schema {schema})", status.database),
        None => status.database.clone(),
    };
    let Some(version) = status.installed_version else {
        return vec![format!(
            "not installed in {place} (this fencewatch installs v{})",
            status.latest_version
        )];
    };
    let mut lines = vec![format!(
        "installed v{version} in {place}{}",
        match version < status.latest_version {
            true => format!(
                " (run `fencewatch fence install` to upgrade to v{})",
                status.latest_version
            ),
            false => String::new(),
        }
    )];
    lines.push(format!(
        "{} scopes, {} audit rows{}",
        status.scopes,
        status.audit_rows,
        match status.backend {
            "sqlite" => format!(", {} not sealed yet", status.unsealed_rows),
            _ => String::new(),
        }
    ));
    if let Some(micros) = status.operation_retention_us {
        let retention = std::time::Duration::from_micros(u64::try_from(micros).unwrap_or(0));
        lines.push(format!(
            "operation ids replayed for {}",
            humantime::format_duration(retention)
        ));
    }
    lines.push(match &status.autonomous_audit {
        AutonomousAudit::Works => {
            "refused guard calls: audited even when the caller rolls back (dblink loopback works)"
                .into()
        }
        AutonomousAudit::Unavailable { reason } => {
            format!("refused guard calls: audited only if the caller commits ({reason})")
        }
        AutonomousAudit::NotApplicable => {
            "refused guard calls: audited in the caller's transaction (kept if it commits)".into()
        }
    });
    match &status.ddl_guard {
        DdlGuard::EventTrigger { name } => lines.push(format!(
            "DDL that would let a write past the fence: refused (event trigger {name})"
        )),
        DdlGuard::StatementTriggers { reason } => lines.push(format!(
            "DDL that would let a write past the fence: not refused ({reason}); each protected \
             table checks before every statement instead"
        )),
        DdlGuard::NotApplicable => {}
    }
    match status.protected.is_empty() {
        true => lines.push("no protected tables".into()),
        false => lines.extend(
            status
                .protected
                .iter()
                .map(|table| format!("protected {}", describe(table))),
        ),
    }
    lines.extend(
        status
            .problems
            .iter()
            .map(|problem| format!("problem: {problem}")),
    );
    lines
}
