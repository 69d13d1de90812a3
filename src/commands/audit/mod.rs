//! `fencewatch audit …`: incident reconstruction, tamper checks, retention and export, straight
//! from the database, so they work while the daemon is down. One file per subcommand.

mod export;
mod fence;
mod fence_export;
mod fence_rows;
mod incidents;
pub mod keys;
mod log;
mod prune;
mod refusals;
mod report;
mod summary;
mod timeline;
mod verify;
mod verify_record;
mod witness;

pub use export::CSV_COLUMNS;
pub use fence_export::FENCE_CSV_COLUMNS;
pub use timeline::{holdings, timeline, Holding, Timeline};

use crate::cli::{AuditArgs, AuditCommand, AuditFilterArgs};
use crate::domain::audit::format_rfc3339_micros;
use crate::domain::Outcome;
use crate::owndb::{OpenOptions, OwnDb};
use crate::redact::redact_url;
use crate::store::{is_sqlite_url, AuditFilter, OpenMode, Store, StoreError, StoreOptions};
use anyhow::Context;
use chrono::{DateTime, Utc};
use std::process::ExitCode;
use std::sync::Arc;

/// A time on the command line that is neither absolute nor a duration ago.
#[derive(Debug, thiserror::Error)]
pub enum TimeError {
    #[error("{0:?} is neither an RFC 3339 time nor a duration like 1h")]
    Unrecognised(String),
    #[error(transparent)]
    TooFarBack(#[from] chrono::OutOfRangeError),
}

/// Parses `2026-11-30T03:40:00Z` or a duration ago such as `1h` or `90m`.
pub fn parse_time(text: &str, now: DateTime<Utc>) -> Result<DateTime<Utc>, TimeError> {
    if let Ok(at) = DateTime::parse_from_rfc3339(text) {
        return Ok(at.with_timezone(&Utc));
    }
    let ago =
        humantime::parse_duration(text).map_err(|_| TimeError::Unrecognised(text.to_owned()))?;
    Ok(now - chrono::Duration::from_std(ago)?)
}

pub async fn run(args: AuditArgs) -> anyhow::Result<ExitCode> {
    // Only `prune` writes; nothing here creates a database or migrates one, so that a mistyped
    // path is an error rather than an empty audit that verifies.
    if let AuditCommand::Keygen { out } = &args.command {
        return witness::keygen(out);
    }
    let mode = match args.command {
        AuditCommand::Prune { .. } | AuditCommand::Witness { .. } => OpenMode::Existing,
        _ => OpenMode::ReadOnly,
    };
    let now = Utc::now();
    let store = match open(&args, mode).await? {
        Audited::Daemon(store) => store,
        Audited::Fence(db) => {
            let code = fence::run(&db, args.command, now).await;
            db.close().await;
            return code;
        }
    };
    let code = match args.command {
        AuditCommand::Verify {
            json,
            checkpoint,
            full,
            witness: None,
            public_key: None,
        } => verify::run(&store, json, checkpoint.as_deref(), full).await?,
        AuditCommand::Verify {
            json,
            full,
            witness,
            public_key,
            ..
        } => {
            let key = public_key.as_deref().map(keys::public_key).transpose()?;
            match key {
                Some(key) => {
                    verify::run_witnessed(&store, json, witness.as_deref(), &key, full).await?
                }
                None => anyhow::bail!("--witness needs --public-key"),
            }
        }
        AuditCommand::Keygen { out } => witness::keygen(&out)?,
        AuditCommand::Witness { key } => witness::sign(store.clone(), &key).await?,
        AuditCommand::Log {
            filter: filter_args,
            json,
            limit,
            oldest_first,
        } => {
            let walk = log::walk(oldest_first, limit);
            log::run(&store, &filter(&filter_args, now)?, json, walk).await?
        }
        AuditCommand::Export {
            format,
            filter: filter_args,
            output,
        } => {
            export::run(
                &store,
                &filter(&filter_args, now)?,
                format,
                output.as_deref(),
            )
            .await?
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
            let newest = (!all).then_some(limit);
            incidents::run(&store, since, until, resource.as_deref(), newest, json).await?
        }
        AuditCommand::Timeline {
            resource,
            around,
            since,
            until,
            latest,
            all,
            json,
        } => {
            let window = match around {
                Some(id) => timeline::Window::Around(id),
                None if since.is_none() && until.is_none() && !all => {
                    timeline::Window::Latest(latest)
                }
                None => timeline::Window::Between(
                    micros(since.as_deref(), now)?,
                    micros(until.as_deref(), now)?,
                ),
            };
            timeline::run(&store, &resource, window, json).await?
        }
        AuditCommand::Report { id, format, output } => {
            report::run(&store, id, format, output.as_deref(), now).await?
        }
        AuditCommand::Summary { since, json } => {
            summary::run(&store, parse_time(&since, now)?, now, json).await?
        }
        AuditCommand::Refusals { since, until, json } => {
            refusals::run(
                &store,
                micros(since.as_deref(), now)?,
                micros(until.as_deref(), now)?,
                json,
            )
            .await?
        }
        AuditCommand::Prune { before, key, json } => {
            let store = match key {
                Some(path) => store
                    .clone()
                    .with_audit_signer(Arc::new(keys::signing_key(&path)?)),
                None => store.clone(),
            };
            prune::run(&store, parse_time(&before, now)?, json).await?
        }
    };
    store.close().await;
    Ok(code)
}

/// Whose audit the tools read.
enum Audited {
    Daemon(Store),
    /// A fence installed in the user's own database.
    Fence(OwnDb),
}

/// The daemon's audit, unless `--fence` asks for the fence or the database has a fence and no
/// daemon tables. Neither is created: a database with neither is an error (the daemon's).
async fn open(args: &AuditArgs, mode: OpenMode) -> anyhow::Result<Audited> {
    let fence = || async {
        let db = OwnDb::open(
            &args.database,
            &OpenOptions {
                schema: args.schema.clone(),
                ..OpenOptions::default()
            },
        )
        .await?;
        match db.installed_version().await {
            Ok(Some(_)) => Ok(Some(db)),
            Ok(None) => {
                db.close().await;
                Ok(None)
            }
            Err(error) => {
                db.close().await;
                Err(error)
            }
        }
    };
    if args.fence {
        return match fence().await.context("failed to open the database")? {
            Some(db) => Ok(Audited::Fence(db)),
            None => anyhow::bail!("no fence is installed in {}", redact_url(&args.database)),
        };
    }
    let options = StoreOptions {
        max_connections: 2,
        mode,
        // A SQLite file has no schemas, and a name the daemon would refuse can only be a
        // fence's: either way the daemon's tables are looked for where they would be.
        schema: args
            .schema
            .as_deref()
            .filter(|_| !is_sqlite_url(&args.database))
            .and_then(|name| name.parse().ok()),
        ..StoreOptions::default()
    };
    match Store::open(&args.database, &options).await {
        Ok(store) => Ok(Audited::Daemon(store)),
        Err(error) => match fence().await {
            Ok(Some(db)) => Ok(Audited::Fence(db)),
            _ => Err(anyhow::Error::new(error).context("failed to open the database")),
        },
    }
}

fn micros(text: Option<&str>, now: DateTime<Utc>) -> Result<Option<i64>, TimeError> {
    text.map(|t| parse_time(t, now).map(|at| at.timestamp_micros()))
        .transpose()
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

/// Where an export goes: the file named (created, or truncated), else standard output.
fn output_writer(output: Option<&std::path::Path>) -> anyhow::Result<Box<dyn std::io::Write>> {
    Ok(match output {
        Some(path) => Box::new(
            std::fs::File::create(path)
                .with_context(|| format!("cannot create {}", path.display()))?,
        ),
        None => Box::new(std::io::stdout().lock()),
    })
}

fn time(at: &DateTime<Utc>) -> String {
    format_rfc3339_micros(at)
}

/// An absent text column, as the tables print it.
fn text(value: &Option<String>) -> &str {
    value.as_deref().unwrap_or("-")
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

/// A failed write of the output, inside a visit of the audit rows.
fn io(error: impl std::fmt::Display) -> OutputError {
    OutputError::Write(error.to_string())
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
        assert_eq!(
            parse_time("yesterday", now).unwrap_err().to_string(),
            "\"yesterday\" is neither an RFC 3339 time nor a duration like 1h"
        );
    }
}
