//! `fencewatch fence …`: the fence in the user's own database.

use clap::{ArgGroup, Args, Subcommand};
use std::time::Duration;

pub const FENCE_EXIT_CODES_HELP: &str = "Exit codes:
  0  done (or nothing to do: already installed, not protected, not installed)
  1  the database could not be reached or failed, or holds a fence this fencewatch cannot work
     on; status: a problem was found (a write could get past the fence, or a role holds more
     of it than install gave)
  2  bad command line, or a table, column, file or lease the database does not have";

#[derive(Debug, Clone, Args)]
#[command(after_help = FENCE_EXIT_CODES_HELP)]
pub struct FenceArgs {
    #[command(subcommand)]
    pub command: FenceCommand,
}

/// Which database, and where in it the fence lives.
#[derive(Debug, Clone, Args)]
pub struct FenceTarget {
    /// Your database: `postgres://USER@HOST/DB` or `sqlite://PATH` (an existing file; it is
    /// never created).
    #[arg(long)]
    pub database: String,
    /// PostgreSQL: the schema the fence lives in (default fencewatch). Not for SQLite, whose
    /// fence objects are named fencewatch_*.
    #[arg(long)]
    pub schema: Option<String>,
}

#[derive(Debug, Clone, Subcommand)]
pub enum FenceCommand {
    /// Install the fence, or upgrade it to this fencewatch's version (idempotent).
    Install {
        #[command(flatten)]
        target: FenceTarget,
        /// PostgreSQL: the schema of the fencewatch daemon's `leases` table that the guard's
        /// `lease =>` reads (default public).
        #[arg(long)]
        lease_schema: Option<String>,
        /// How long an applied operation id is answered `replayed` rather than applied again
        /// (e.g. 24h, 7d; default 24h). Kept when not given.
        #[arg(long, value_parser = humantime::parse_duration)]
        operation_retention: Option<Duration>,
    },
    /// Fence writes to a table: an INSERT or UPDATE whose token is below its scope's highest
    /// accepted generation affects zero rows, and every attempt is audited.
    #[command(group(ArgGroup::new("scope_source").required(true).args(["scope_column", "scope"])))]
    Protect {
        #[command(flatten)]
        target: FenceTarget,
        /// The table (PostgreSQL: as your search path finds it, or schema.table).
        table: String,
        /// The column holding the writer's fencing token (an integer).
        #[arg(long)]
        token_column: String,
        /// The column whose value is the row's scope.
        #[arg(long)]
        scope_column: Option<String>,
        /// One scope for the whole table.
        #[arg(long)]
        scope: Option<String>,
        /// The column holding the operation id (a retry of an applied one is not applied again).
        #[arg(long)]
        op_column: Option<String>,
        /// The column naming the writer, for the audit.
        #[arg(long)]
        owner_column: Option<String>,
        /// A lease of the fencewatch daemon whose store is this database: a generation it
        /// superseded is refused even on a scope that never saw the newer one. `{scope}` in
        /// the name stands for the row's scope: `orders/{scope}` is one lease per scope.
        #[arg(long)]
        lease: Option<String>,
        /// Where a write's generation comes from: `stated` (the transaction's, from
        /// `fencewatch.begin(token => …)`, or the token column the statement sets; an UPDATE
        /// stating neither is refused; PostgreSQL's default) or `row` (the row's token column
        /// as the statement leaves it; SQLite's only).
        #[arg(long, value_parser = ["stated", "row"])]
        generation: Option<String>,
    },
    /// Remove the fence's trigger from a table (the table is otherwise left as it is).
    Unprotect {
        #[command(flatten)]
        target: FenceTarget,
        table: String,
    },
    /// The installed version, protected tables, counts, and whether refusals survive a rollback.
    Status {
        #[command(flatten)]
        target: FenceTarget,
        #[arg(long)]
        json: bool,
    },
    /// Remove everything install and protect created, and nothing else (idempotent).
    Uninstall {
        #[command(flatten)]
        target: FenceTarget,
    },
    /// Set a scope's highest accepted generation by hand (the way back from a runaway token),
    /// audited in the scope's chain with outcome `reset`.
    Reset {
        #[command(flatten)]
        target: FenceTarget,
        /// The scope to reset.
        scope: String,
        /// Its highest accepted generation afterwards (at least 1).
        #[arg(long)]
        to: i64,
        /// Why, for the audit (1 to 512 printable characters).
        #[arg(long)]
        reason: String,
    },
    /// SQLite: hash-chain the audit rows written since the last seal (PostgreSQL hashes each
    /// row as it writes it).
    Seal {
        #[command(flatten)]
        target: FenceTarget,
    },
}

impl FenceCommand {
    pub fn target(&self) -> &FenceTarget {
        match self {
            FenceCommand::Install { target, .. }
            | FenceCommand::Protect { target, .. }
            | FenceCommand::Unprotect { target, .. }
            | FenceCommand::Status { target, .. }
            | FenceCommand::Reset { target, .. }
            | FenceCommand::Uninstall { target }
            | FenceCommand::Seal { target } => target,
        }
    }
}
