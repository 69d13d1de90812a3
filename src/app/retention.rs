//! Retention, a setting of the database shared by every daemon on it (`store::retention`): the
//! first daemon stores its `--idempotency-retention` and `--audit-retention`, `--set-retention`
//! replaces them, and every daemon reads them again before each prune. A daemon that kept its
//! own would forget operations another still answers for, and a retry reaching it would be
//! applied twice.

use crate::domain::duration::saturating_micros;
use crate::store::{PruneReport, Retention, RetentionClaim, Store, StoreError, StoreRetention};
use std::time::Duration;
use tokio::task::JoinHandle;

/// `--idempotency-retention` left out.
pub const DEFAULT_IDEMPOTENCY_RETENTION: Duration = Duration::from_secs(24 * 60 * 60);

/// How often a daemon whose database keeps the audit for ever looks again: a retention stored
/// meanwhile starts pruning within this.
const KEEP_EVERYTHING_RECHECK: Duration = Duration::from_secs(60);

/// The retention flags a daemon was started with.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct RetentionFlags {
    /// `--idempotency-retention`, if given.
    pub idempotency: Option<Duration>,
    /// `--audit-retention`, if given; left out, the audit is kept for ever.
    pub audit: Option<Duration>,
    /// `--set-retention`: store this daemon's retention, whatever is stored.
    pub set: bool,
}

impl RetentionFlags {
    /// The retention these flags ask for, the defaults standing for those left out.
    pub fn wanted(&self) -> Retention {
        Retention {
            idempotency: self.idempotency.unwrap_or(DEFAULT_IDEMPOTENCY_RETENTION),
            audit: self.audit,
        }
    }

    /// The flags given whose value the stored retention overrides, with both values. A flag
    /// left out asks for nothing, so it is never overridden: the database's value applies.
    pub fn overridden_by(&self, stored: &Retention) -> Vec<Overridden> {
        let mut overridden = Vec::new();
        if let Some(given) = self
            .idempotency
            .filter(|given| *given != stored.idempotency)
        {
            overridden.push(Overridden {
                flag: "--idempotency-retention",
                given: show(Some(given)),
                stored: show(Some(stored.idempotency)),
            });
        }
        if let Some(given) = self.audit.filter(|given| Some(*given) != stored.audit) {
            overridden.push(Overridden {
                flag: "--audit-retention",
                given: show(Some(given)),
                stored: show(stored.audit),
            });
        }
        overridden
    }
}

/// A retention flag whose value the database's overrides.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Overridden {
    pub flag: &'static str,
    pub given: String,
    pub stored: String,
}

/// A retention as it is written on the command line (`24h`, `90d`, `1500ms`); `None` keeps
/// everything.
pub fn show(retention: Option<Duration>) -> String {
    let Some(retention) = retention else {
        return "keep everything".to_owned();
    };
    let secs = retention.as_secs();
    if retention.subsec_nanos() != 0 || secs == 0 {
        return humantime::format_duration(retention).to_string();
    }
    const DAY: u64 = 24 * 60 * 60;
    match secs {
        // A day reads as the default is written.
        s if s % DAY == 0 && s > DAY => format!("{}d", s / DAY),
        s if s % 3600 == 0 => format!("{}h", s / 3600),
        s if s % 60 == 0 => format!("{}m", s / 60),
        s => format!("{s}s"),
    }
}

/// Stores the daemon's retention as the database's when none is (the first daemon), or
/// whatever is with `--set-retention`, and logs what applies; a flag given with another value
/// than the stored one gets a warning naming both. Answers the retention that applies.
pub async fn claim_retention(
    store: &Store,
    flags: &RetentionFlags,
) -> Result<Retention, StoreError> {
    let wanted = flags.wanted();
    let when = match flags.set {
        true => StoreRetention::Replacing,
        false => StoreRetention::IfNoneStored,
    };
    let applies = match store.claim_retention(wanted, when).await? {
        RetentionClaim::Stored => {
            tracing::info!(
                idempotency_retention = %show(Some(wanted.idempotency)),
                audit_retention = %show(wanted.audit),
                "stored this daemon's retention as the database's, for every daemon on it"
            );
            wanted
        }
        RetentionClaim::Replaced(previous) => {
            tracing::warn!(
                "--set-retention: the database's retention is now {} for operations and {} \
                 for the audit (was {} and {}); every daemon on it follows from its next prune",
                show(Some(wanted.idempotency)),
                show(wanted.audit),
                show(Some(previous.idempotency)),
                show(previous.audit),
            );
            wanted
        }
        RetentionClaim::Kept(stored) => {
            for overridden in flags.overridden_by(&stored) {
                tracing::warn!(
                    "{} {} was given, but the database's {} applies: retention is shared by \
                     every daemon on the database; start one with --set-retention to change it",
                    overridden.flag,
                    overridden.given,
                    overridden.stored,
                );
            }
            tracing::info!(
                idempotency_retention = %show(Some(stored.idempotency)),
                audit_retention = %show(stored.audit),
                "the database's retention applies"
            );
            stored
        }
    };
    Ok(applies)
}

/// The daemon's pruning of operation records and of the audit, each reading the database's
/// retention before every prune, and of refusal rows past their own retention
/// (`app::refusals::REFUSAL_RETENTION`); all stop when this is dropped.
pub struct RetentionTasks {
    operations: JoinHandle<()>,
    audit: JoinHandle<()>,
    refusals: JoinHandle<()>,
}

impl RetentionTasks {
    /// Starts them on the current tokio runtime.
    pub fn spawn(store: Store) -> Self {
        Self {
            operations: tokio::spawn(prune_operations(store.clone())),
            refusals: crate::app::refusals::spawn_pruner(store.clone()),
            audit: tokio::spawn(prune_audit(store)),
        }
    }
}

impl Drop for RetentionTasks {
    fn drop(&mut self) {
        self.operations.abort();
        self.audit.abort();
        self.refusals.abort();
    }
}

/// Forgets operation records past the retention, every tenth of it (between a second and a
/// minute), so a record outlives its window by at most that much.
async fn prune_operations(store: Store) {
    let mut period = Duration::from_secs(1);
    loop {
        match store.retention().await {
            Ok(Some(retention)) => {
                period = (retention.idempotency / 10)
                    .clamp(Duration::from_secs(1), Duration::from_secs(60));
                match store.prune_operations(retention.idempotency).await {
                    Ok(0) => {}
                    Ok(pruned) => tracing::debug!(pruned, "pruned expired operation records"),
                    Err(error) => tracing::warn!(%error, "failed to prune operation records"),
                }
            }
            // Stored at start (`claim_retention`); until then nothing is forgotten.
            Ok(None) => {}
            Err(error) => tracing::warn!(%error, "failed to read the database's retention"),
        }
        tokio::time::sleep(period).await;
    }
}

/// Prunes audit rows past the retention, behind checkpoints, every tenth of it (between a
/// second and an hour); looks again every minute while the database keeps everything. Each pass
/// first makes the coming days' partitions of the audit (PostgreSQL), whatever the retention.
async fn prune_audit(store: Store) {
    let mut period = KEEP_EVERYTHING_RECHECK;
    loop {
        match store.ensure_audit_partitions().await {
            Ok(made) if made.created > 0 || made.held_by_default > 0 => tracing::info!(
                created = made.created,
                held_by_default = made.held_by_default,
                "made the audit's partitions for the coming days"
            ),
            Ok(_) => {}
            Err(error) => tracing::warn!(%error, "failed to make the audit's partitions"),
        }
        match store.retention().await {
            Ok(Some(Retention {
                audit: Some(keep), ..
            })) => {
                period = (keep / 10).clamp(Duration::from_secs(1), Duration::from_secs(3600));
                match prune_audit_once(&store, keep).await {
                    Ok(report) if report != PruneReport::default() => tracing::info!(
                        rows = report.rows,
                        resources = report.resources,
                        lease_events = report.lease_events,
                        closed_overlaps = report.closed_overlaps,
                        alert_transitions = report.alert_transitions,
                        refusals = report.refusals,
                        "pruned audit rows and the history beside them"
                    ),
                    Ok(_) => {}
                    Err(error) => tracing::warn!(%error, "failed to prune the audit"),
                }
            }
            Ok(_) => period = KEEP_EVERYTHING_RECHECK,
            Err(error) => tracing::warn!(%error, "failed to read the database's retention"),
        }
        tokio::time::sleep(period).await;
    }
}

async fn prune_audit_once(store: &Store, keep: Duration) -> Result<PruneReport, StoreError> {
    let keep_us = saturating_micros(keep);
    let now = store.retention_clock_us().await?;
    store.prune_audit(now.saturating_sub(keep_us)).await
}

#[cfg(test)]
mod tests {
    use super::*;

    const HOUR: Duration = Duration::from_secs(3600);

    #[test]
    fn retentions_read_as_they_are_written() {
        assert_eq!(show(Some(DEFAULT_IDEMPOTENCY_RETENTION)), "24h");
        assert_eq!(show(Some(90 * 24 * HOUR)), "90d");
        assert_eq!(show(Some(Duration::from_secs(2))), "2s");
        assert_eq!(show(Some(Duration::from_secs(90 * 60))), "90m");
        assert_eq!(show(Some(Duration::from_millis(1500))), "1s 500ms");
        assert_eq!(show(None), "keep everything");
        for text in ["24h", "90d", "2s", "90m", "1s 500ms"] {
            let parsed = humantime::parse_duration(text).unwrap();
            assert_eq!(show(Some(parsed)), text);
        }
    }

    #[test]
    fn only_a_flag_given_with_another_value_is_overridden() {
        let stored = Retention {
            idempotency: DEFAULT_IDEMPOTENCY_RETENTION,
            audit: None,
        };
        let left_out = RetentionFlags::default();
        assert_eq!(left_out.overridden_by(&stored), vec![]);
        let same = RetentionFlags {
            idempotency: Some(DEFAULT_IDEMPOTENCY_RETENTION),
            ..RetentionFlags::default()
        };
        assert_eq!(same.overridden_by(&stored), vec![]);
        let shorter = RetentionFlags {
            idempotency: Some(Duration::from_secs(2)),
            audit: Some(HOUR),
            set: false,
        };
        assert_eq!(
            shorter.overridden_by(&stored),
            vec![
                Overridden {
                    flag: "--idempotency-retention",
                    given: "2s".into(),
                    stored: "24h".into(),
                },
                Overridden {
                    flag: "--audit-retention",
                    given: "1h".into(),
                    stored: "keep everything".into(),
                },
            ]
        );
        // Left out, the audit flag asks for nothing, even where the database prunes.
        let pruning = Retention {
            audit: Some(HOUR),
            ..stored
        };
        assert_eq!(left_out.overridden_by(&pruning), vec![]);
        assert_eq!(
            left_out.wanted(),
            Retention {
                idempotency: DEFAULT_IDEMPOTENCY_RETENTION,
                audit: None
            }
        );
    }
}
