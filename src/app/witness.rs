//! The witness's signer: at each checkpoint it verifies the rows written since its last one,
//! checks that no chain start moved without a prune's signature, and only then signs every
//! chain's start and head. Each checkpoint so vouches for the one before it, which is what lets
//! `audit verify --witness` hold the audit to the latest checkpoint of each chain alone.
//! It runs beside the write path (`serve --audit-signing-key`) or from cron (`audit witness`),
//! never on it: a write waits for no signature.

use crate::domain::witness::{Checkpoint, SigningKey};
use crate::metrics::{CheckpointRound, WitnessMetrics};
use crate::store::{Breach, ChainPosition, Store, StoreError, VerifiedPositions};
use std::collections::HashMap;
use std::io::BufRead;
use std::path::Path;
use std::sync::Arc;

/// Checkpoint lines in the database looked through for the latest this key signed.
const RESUME_LINES: i64 = 100;

/// What one round of the signer did.
#[derive(Debug)]
pub enum SignOutcome {
    /// A new checkpoint, as its witness line (already kept in the database).
    Signed {
        line: String,
        rows: u64,
        chains: usize,
    },
    /// Nothing changed since the last checkpoint.
    Unchanged,
    /// The audit no longer holds what the last checkpoint did: nothing was signed.
    Refused(Vec<Breach>),
}

pub struct Signer {
    store: Store,
    key: Arc<SigningKey>,
    previous: Option<Checkpoint>,
    /// The breaches the daemon's last round refused to sign over, logged once, not each round.
    refused: Vec<Breach>,
}

impl Signer {
    pub fn new(store: Store, key: Arc<SigningKey>) -> Self {
        Self {
            store,
            key,
            previous: None,
            refused: Vec::new(),
        }
    }

    /// Starts from the latest checkpoint this key signed: the witness file's last line when
    /// there is one, else the newest in the database. Without either, the first checkpoint
    /// verifies every row.
    pub async fn resume(&mut self, witness_file: Option<&Path>) -> Result<(), StoreError> {
        if let Some(checkpoint) = witness_file.and_then(|path| self.last_in_file(path)) {
            self.previous = Some(checkpoint);
            return Ok(());
        }
        let public = self.key.public();
        self.previous = self
            .store
            .latest_witness_lines(RESUME_LINES)
            .await?
            .iter()
            .find_map(|line| Checkpoint::read(line, &public).ok());
        Ok(())
    }

    fn last_in_file(&self, path: &Path) -> Option<Checkpoint> {
        let file = std::fs::File::open(path).ok()?;
        let public = self.key.public();
        std::io::BufReader::new(file)
            .lines()
            .map_while(Result::ok)
            .filter(|line| !line.trim().is_empty())
            .last()
            .and_then(|line| Checkpoint::read(&line, &public).ok())
    }

    /// Verifies what was written since the last checkpoint and signs the next one (with
    /// `only_if_changed`, not when every chain is where it was).
    pub async fn checkpoint(&mut self, only_if_changed: bool) -> Result<SignOutcome, StoreError> {
        let previous = self.previous.as_ref().map(positions);
        let snapshot = self.store.witness_snapshot(previous.as_ref()).await?;
        if !snapshot.report.breaches.is_empty() {
            return Ok(SignOutcome::Refused(snapshot.report.breaches));
        }
        if let (Some(positions), Some(checkpoint)) = (&previous, &self.previous) {
            let starts = starts(checkpoint);
            let moved = snapshot.unsigned_starts(positions, &starts, &self.key.public());
            if !moved.is_empty() {
                return Ok(SignOutcome::Refused(moved));
            }
        }
        let chains = snapshot.chains();
        if only_if_changed && self.previous.as_ref().is_some_and(|p| p.chains == chains) {
            return Ok(SignOutcome::Unchanged);
        }
        let at_us = self.store.clock().now_us();
        let checkpoint = Checkpoint::new(at_us, chains, &self.key.public());
        let line = checkpoint
            .sign(&self.key)
            .map_err(|e| StoreError::Invariant(format!("could not sign a checkpoint: {e}")))?;
        self.store.record_witness_line(at_us, &line).await?;
        let outcome = SignOutcome::Signed {
            line,
            rows: checkpoint.rows,
            chains: checkpoint.chains.len(),
        };
        self.previous = Some(checkpoint);
        Ok(outcome)
    }

    /// When the checkpoint it signs after was taken (none before the first).
    pub fn last_signed_at_us(&self) -> Option<i64> {
        self.previous.as_ref().map(|checkpoint| checkpoint.at_us)
    }
}

/// A checkpoint's heads, as positions an incremental verify starts from.
fn positions(checkpoint: &Checkpoint) -> VerifiedPositions {
    checkpoint
        .chains
        .iter()
        .map(|chain| {
            (
                chain.resource.clone(),
                ChainPosition {
                    seq: chain.head.seq,
                    hash: chain.head.hash.clone(),
                    audit_id: chain.head.id,
                },
            )
        })
        .collect()
}

fn starts(checkpoint: &Checkpoint) -> HashMap<String, i64> {
    checkpoint
        .chains
        .iter()
        .filter_map(|chain| Some((chain.resource.clone(), chain.start.as_ref()?.seq)))
        .collect()
}

/// Appends `line` to the witness file (created if missing, reopened each time so that a rotated
/// file is followed), flushed to disk before it returns.
pub fn append_line(path: &Path, line: &str) -> std::io::Result<()> {
    use std::io::Write;
    let mut file = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)?;
    file.write_all(format!("{line}\n").as_bytes())?;
    file.sync_data()
}

/// The daemon's signer, every `interval`, beside the write path.
pub struct WitnessTask {
    signer: Arc<tokio::sync::Mutex<Signer>>,
    rounds: tokio::task::JoinHandle<()>,
    settings: Arc<Rounds>,
}

/// What every round needs beside the signer.
struct Rounds {
    file: Option<std::path::PathBuf>,
    metrics: WitnessMetrics,
}

impl WitnessTask {
    pub fn spawn(
        signer: Signer,
        file: Option<std::path::PathBuf>,
        interval: std::time::Duration,
        metrics: WitnessMetrics,
    ) -> Self {
        // The checkpoint resumed from is the newest signed until this daemon signs one.
        if let Some(at_us) = signer.last_signed_at_us() {
            metrics.signed_at(at_us);
        }
        let settings = Arc::new(Rounds { file, metrics });
        let signer = Arc::new(tokio::sync::Mutex::new(signer));
        let rounds = tokio::spawn(sign_every(signer.clone(), settings.clone(), interval));
        Self {
            signer,
            rounds,
            settings,
        }
    }

    /// Stops the rounds and signs what was written since the last one, so that a daemon
    /// stopped cleanly leaves nothing unwitnessed.
    pub async fn finish(self) {
        self.rounds.abort();
        let mut signer = self.signer.lock().await;
        round(&mut signer, &self.settings).await;
    }
}

impl Drop for WitnessTask {
    fn drop(&mut self) {
        self.rounds.abort();
    }
}

async fn sign_every(
    signer: Arc<tokio::sync::Mutex<Signer>>,
    settings: Arc<Rounds>,
    interval: std::time::Duration,
) {
    let mut ticks = tokio::time::interval(interval);
    ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        ticks.tick().await;
        let mut signer = signer.lock().await;
        round(&mut signer, &settings).await;
    }
}

/// One checkpoint, its outcome counted and logged: a refusal is an error an operator must see
/// (the audit was changed behind the daemon), a database failure a warning retried next round.
async fn round(signer: &mut Signer, settings: &Rounds) {
    let outcome = signer.checkpoint(true).await;
    let counted = match &outcome {
        Ok(SignOutcome::Signed { .. }) => CheckpointRound::Signed,
        Ok(SignOutcome::Unchanged) => CheckpointRound::Unchanged,
        Ok(SignOutcome::Refused(_)) => CheckpointRound::Refused,
        Err(_) => CheckpointRound::Failed,
    };
    settings.metrics.count(counted);
    match outcome {
        Ok(SignOutcome::Signed { line, rows, chains }) => {
            tracing::debug!(rows, chains, "signed an audit checkpoint");
            if let Some(at_us) = signer.last_signed_at_us() {
                settings.metrics.signed_at(at_us);
            }
            // A later refusal is news again, even of the same breaches.
            signer.refused.clear();
            if let Some(path) = &settings.file {
                if let Err(error) = append_line(path, &line) {
                    tracing::error!(%error, path = %path.display(),
                        "could not append the signed checkpoint to the witness file");
                }
            }
        }
        Ok(SignOutcome::Unchanged) => {}
        Ok(SignOutcome::Refused(breaches)) if breaches == signer.refused => {}
        Ok(SignOutcome::Refused(breaches)) => {
            for breach in &breaches {
                tracing::error!(
                    resource = %breach.resource,
                    audit_id = ?breach.audit_id,
                    problem = %breach.problem,
                    "not signing a checkpoint: the audit no longer holds what the last one did \
                     (run audit verify --witness)"
                );
            }
            signer.refused = breaches;
        }
        Err(error) => tracing::warn!(%error, "could not take an audit checkpoint"),
    }
}
