//! `bench --witness-interval`: the HTTP load again against a daemon that signs audit
//! checkpoints beside its write path, to show what the witness costs the writes.

use super::load::{self, Fence, PLAIN_GENERATION};
use super::{BenchOptions, CpuPerWrite, PathResult};
use crate::commands::audit::keys;
use anyhow::Context;
use serde::Serialize;
use std::io::BufRead;
use std::path::Path;
use std::time::Duration;

/// The witness path's resources are `bench-witness/N`, apart from the plain fence's on a
/// shared database.
const NAMESPACE: &str = "bench-witness";

/// The HTTP path against a daemon signing checkpoints every `interval_ms`.
#[derive(Debug, Clone, Serialize)]
pub struct WitnessPath {
    pub interval_ms: u64,
    /// Checkpoints the daemon signed from its start to its end (its witness file's lines): the
    /// first at its start, then one each round the audit had changed.
    pub checkpoints: u64,
    pub writes: PathResult,
    pub daemon_peak_rss_mib: Option<f64>,
    pub cpu: Option<CpuPerWrite>,
}

/// Runs the writers against a daemon of its own started with a key made for this run; the key
/// and the witness file live in `folder` (the bench's temporary one) and go with it.
pub(super) async fn run(
    options: &BenchOptions,
    folder: &Path,
    interval: Duration,
) -> anyhow::Result<WitnessPath> {
    anyhow::ensure!(
        options.url.is_none(),
        "the witness path needs a daemon the bench starts: not with a URL"
    );
    let key = folder.join("bench-witness.key");
    keys::generate(&key).context("failed to make the run's signing key")?;
    let file = folder.join("bench-witness.jsonl");
    let fence = Fence {
        namespace: NAMESPACE.to_owned(),
        token: PLAIN_GENERATION,
        lease: None,
        serve_args: vec![
            "--audit-signing-key".to_owned(),
            key.display().to_string(),
            "--witness-file".to_owned(),
            file.display().to_string(),
            "--witness-interval".to_owned(),
            humantime::format_duration(interval).to_string(),
        ],
        database_file: "bench-witness.db",
        path: "http witness",
    };
    let (run, peak) = load::run_daemon_and_http(options, folder, &fence).await?;
    Ok(WitnessPath {
        interval_ms: u64::try_from(interval.as_millis()).unwrap_or(u64::MAX),
        checkpoints: lines_in(&file)?,
        writes: run.writes,
        daemon_peak_rss_mib: peak,
        cpu: run.cpu,
    })
}

/// The checkpoints in a witness file: its non-empty lines (none when it was never written).
fn lines_in(file: &Path) -> anyhow::Result<u64> {
    let opened = match std::fs::File::open(file) {
        Ok(opened) => opened,
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => return Ok(0),
        Err(error) => return Err(error).with_context(|| format!("cannot read {}", file.display())),
    };
    let mut lines = 0;
    for line in std::io::BufReader::new(opened).lines() {
        let line = line.with_context(|| format!("cannot read {}", file.display()))?;
        if !line.trim().is_empty() {
            lines += 1;
        }
    }
    Ok(lines)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_witness_files_checkpoints_are_its_lines() {
        let folder = tempfile::tempdir().unwrap();
        let file = folder.path().join("w.jsonl");
        assert_eq!(lines_in(&file).unwrap(), 0, "never written");
        std::fs::write(&file, "{\"a\":1}\n{\"b\":2}\n\n{\"c\":3}\n").unwrap();
        assert_eq!(lines_in(&file).unwrap(), 3);
    }
}
