//! `fencewatch audit …`: its subcommands and their flags.

use super::{AuditFilterArgs, ExportFormat, ReportFormat};
use clap::Subcommand;
use std::path::PathBuf;

#[derive(Debug, Clone, Subcommand)]
pub enum AuditCommand {
    /// The postmortem of one incident (an id from `incidents`): the stale owner's pause, its
    /// grant's lapse, the successor's takeover and first write, the refused attempts and any
    /// write accepted after the lapse, with the condensed history around it.
    Report {
        id: i64,
        #[arg(long, value_enum, default_value = "text")]
        format: ReportFormat,
        /// Write to this file instead of standard output.
        #[arg(long, short, value_name = "PATH")]
        output: Option<std::path::PathBuf>,
    },
    /// Incidents since a time: counts per owner and resource, pause and zombie-lifetime
    /// percentiles, writes accepted after a lapse.
    Summary {
        /// RFC 3339 or a duration ago (`7d`).
        #[arg(long, default_value = "7d")]
        since: String,
        #[arg(long)]
        json: bool,
    },
    /// Check every resource's hash chain, that no row lacks a place in one, and that each
    /// resource's stored state is what its audit records; report the first broken link of each
    /// (exit 1 if any).
    Verify {
        #[arg(long)]
        json: bool,
        /// Record the verified end of every chain in this file (written only when nothing is
        /// broken) and, when it exists, check only the rows after the positions it holds.
        #[arg(long, value_name = "FILE")]
        checkpoint: Option<PathBuf>,
        /// Check every row even when `--checkpoint` holds verified positions, or with
        /// `--witness`, rather than only the rows after the heads its checkpoints signed.
        #[arg(long)]
        full: bool,
        /// Also hold the audit to the signed checkpoints in this witness file (and to those
        /// kept in the database): chains they saw must still reach the heads they saw, and
        /// starts move only by signed prunes. Needs --public-key; reads only the rows after
        /// those heads (with --full, every row).
        #[arg(
            long,
            value_name = "PATH",
            requires = "public_key",
            conflicts_with = "checkpoint"
        )]
        witness: Option<PathBuf>,
        /// The witness's public key (`audit keygen`'s FILE.pub). Without --witness, only the
        /// checkpoints kept in the database are used.
        #[arg(long, value_name = "FILE.pub", conflicts_with = "checkpoint")]
        public_key: Option<PathBuf>,
    },
    /// Make an Ed25519 key pair for a witnessed audit: FILE (private, readable by its owner
    /// only) and FILE.pub (docs/guarantees.md).
    Keygen {
        #[arg(long, value_name = "FILE")]
        out: PathBuf,
    },
    /// Verify the rows written since the last signed checkpoint and sign the next one, printed
    /// as one JSON line (append it to the witness file) and kept in the database: a witness for
    /// a daemon started without --audit-signing-key, run from cron. Exit 1, signing nothing,
    /// when the audit no longer holds what the last checkpoint did.
    Witness {
        /// The signing key (`audit keygen`'s FILE).
        #[arg(long, value_name = "FILE")]
        key: PathBuf,
    },
    /// Audit rows, newest first.
    Log {
        #[command(flatten)]
        filter: AuditFilterArgs,
        #[arg(long)]
        json: bool,
        /// The N newest matching rows (with `--oldest-first`, the N oldest).
        #[arg(long)]
        limit: Option<u64>,
        /// List the oldest rows first.
        #[arg(long)]
        oldest_first: bool,
    },
    /// Every matching row with every field, streamed (constant memory).
    Export {
        #[arg(long, value_enum)]
        format: ExportFormat,
        #[command(flatten)]
        filter: AuditFilterArgs,
        /// Write here instead of stdout.
        #[arg(long)]
        output: Option<PathBuf>,
    },
    /// Ownership-overlap incidents with their generations, owners, counts and times: the
    /// latest 100 by default, oldest of them first.
    Incidents {
        #[arg(long)]
        since: Option<String>,
        #[arg(long)]
        until: Option<String>,
        #[arg(long)]
        resource: Option<String>,
        /// The N latest incidents (by when each was first seen).
        #[arg(long, default_value_t = 100, value_parser = clap::value_parser!(u64).range(1..))]
        limit: u64,
        /// Every matching incident, however many.
        #[arg(long, conflicts_with = "limit")]
        all: bool,
        #[arg(long)]
        json: bool,
    },
    /// A resource's writes and its leases' history interleaved: who held which generation when,
    /// and the value before and after each accepted write (its latest 200 rows on unless a
    /// window or --all is given).
    Timeline {
        resource: String,
        /// A minute either side of this incident (from `incidents`).
        #[arg(long, conflicts_with_all = ["since", "until"])]
        around: Option<i64>,
        #[arg(long)]
        since: Option<String>,
        #[arg(long)]
        until: Option<String>,
        /// Without a window: from the resource's N-th newest audit row on.
        #[arg(long, default_value_t = 200, value_name = "N",
              value_parser = clap::value_parser!(u64).range(1..),
              conflicts_with_all = ["around", "since", "until"])]
        latest: u64,
        /// The whole history (without a window).
        #[arg(long, conflicts_with_all = ["around", "since", "until", "latest"])]
        all: bool,
        #[arg(long)]
        json: bool,
    },
    /// Requests refused before the fence (no or a wrong API key, a key's scopes, a foreign
    /// origin or Host, too many refusals), aggregated per source, reason and 10 s interval,
    /// oldest first.
    Refusals {
        /// RFC 3339 or a duration ago (`1h`).
        #[arg(long)]
        since: Option<String>,
        #[arg(long)]
        until: Option<String>,
        #[arg(long)]
        json: bool,
    },
    /// Delete rows older than a time behind per-resource checkpoints (what `--audit-retention`
    /// does in the daemon).
    Prune {
        /// RFC 3339 or a duration ago (`30d`).
        #[arg(long)]
        before: String,
        /// Sign the chain starts the prune moves with the witness's key, so that a witnessed
        /// `verify` tells them from rows deleted by hand.
        #[arg(long, value_name = "FILE")]
        key: Option<PathBuf>,
        #[arg(long)]
        json: bool,
    },
}
