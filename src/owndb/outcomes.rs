//! What the fence's commands are asked and what they answer: install's options and outcome,
//! what protect takes and records, status, reset, uninstall and seal.

use serde::Serialize;
use std::time::Duration;

/// What `install` may set; `None` keeps what is stored (the default on a first install).
#[derive(Debug, Clone, Default)]
pub struct InstallOptions {
    /// PostgreSQL: the schema of the daemon's `leases` table that `lease =>` reads.
    pub lease_schema: Option<String>,
    /// How long an applied operation id is replayed rather than applied again.
    pub operation_retention: Option<Duration>,
}

/// What `install` did.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case", tag = "outcome")]
pub enum InstallOutcome {
    Installed { version: i64 },
    AlreadyInstalled { version: i64 },
    Upgraded { from: i64, to: i64 },
}

impl InstallOutcome {
    pub fn version(&self) -> i64 {
        match self {
            InstallOutcome::Installed { version }
            | InstallOutcome::AlreadyInstalled { version } => *version,
            InstallOutcome::Upgraded { to, .. } => *to,
        }
    }
}

/// Where a protected row's scope comes from.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ScopeSource {
    /// A column of the row.
    Column(String),
    /// One scope for the whole table.
    Fixed(String),
}

/// What `protect` is asked to do.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ProtectSpec {
    pub table: String,
    pub token_column: String,
    pub scope: ScopeSource,
    pub op_column: Option<String>,
    pub owner_column: Option<String>,
    /// A lease of the daemon whose store is this database: a generation it superseded is
    /// refused even on a scope that never saw the newer one. `{scope}` in it stands for the
    /// row's scope (one lease per scope).
    pub lease: Option<String>,
    /// Where a write's generation comes from; `None`: the backend's default (PostgreSQL
    /// [`Generation::Stated`], SQLite [`Generation::Row`]).
    pub generation: Option<Generation>,
}

/// Where a protected write's generation comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Generation {
    /// The transaction's (`fencewatch.begin(token => …)`), or the token column the statement
    /// sets; an UPDATE that states neither is refused (PostgreSQL).
    Stated,
    /// The row's token column as the statement leaves it: an UPDATE that leaves the column
    /// out is judged with the token already in the row.
    Row,
}

impl Generation {
    pub fn as_str(self) -> &'static str {
        match self {
            Generation::Stated => "stated",
            Generation::Row => "row",
        }
    }

    /// `stated` or `row`, as `--generation` and the fence's `protected` table spell them.
    pub fn parse(text: &str) -> Option<Generation> {
        match text {
            "stated" => Some(Generation::Stated),
            "row" => Some(Generation::Row),
            _ => None,
        }
    }
}

/// A protected table as the fence records it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ProtectedTable {
    /// As the database names it (PostgreSQL: schema-qualified where the search path needs it).
    pub table: String,
    pub token_column: String,
    pub scope_column: Option<String>,
    pub scope: Option<String>,
    pub op_column: Option<String>,
    pub owner_column: Option<String>,
    pub lease: Option<String>,
    pub generation: Generation,
}

/// What `unprotect` found.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum UnprotectOutcome {
    Unprotected,
    WasNotProtected,
}

/// What `uninstall` did.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case", tag = "outcome")]
pub enum UninstallOutcome {
    Uninstalled {
        version: i64,
        /// What install created but could not be removed, and why (a schema that holds
        /// objects of someone else's, an extension something else uses).
        left: Vec<String>,
    },
    NotInstalled,
}

/// Whether a refused guard call's audit row survives the caller's rollback (PostgreSQL).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case", tag = "state")]
pub enum AutonomousAudit {
    /// Tried now: the loopback session opened.
    Works,
    /// Refusals are still refused, but their audit rows go with a rolled-back transaction.
    Unavailable { reason: String },
    /// SQLite: a refusal's row is part of the caller's transaction (kept when it commits).
    NotApplicable,
}

/// `fencewatch fence status`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct FenceStatus {
    pub backend: &'static str,
    /// The redacted URL.
    pub database: String,
    /// PostgreSQL only.
    pub schema: Option<String>,
    /// `None`: not installed.
    pub installed_version: Option<i64>,
    pub latest_version: i64,
    pub protected: Vec<ProtectedTable>,
    pub scopes: i64,
    pub audit_rows: i64,
    /// SQLite: rows not sealed yet. PostgreSQL seals as it writes: 0.
    pub unsealed_rows: i64,
    /// How long an applied operation id is replayed, in microseconds.
    pub operation_retention_us: Option<i64>,
    pub lease_schema: Option<String>,
    pub autonomous_audit: AutonomousAudit,
    /// What lets a write past the fence or gives a role more than install did: an owner or a
    /// grant of the fence's objects beyond the documented ones, a protected table dropped, its
    /// triggers gone, an inheritance child, a trigger that would change a row after the fence
    /// judged it. `status` exits 1 while there is any.
    pub problems: Vec<String>,
    /// How DDL that would let a write past the fence is stopped (PostgreSQL).
    pub ddl_guard: DdlGuard,
}

/// How a PostgreSQL fence stops DDL that would let a write past it (a trigger of a protected
/// table's own firing after the fence's, an inheritance child).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case", tag = "state")]
pub enum DdlGuard {
    /// An event trigger refuses such DDL; writes pay nothing for it.
    EventTrigger { name: String },
    /// No event trigger (its role may not create one): each protected table has a statement
    /// trigger that refuses a statement while such a trigger or child exists, at a cost to
    /// every statement.
    StatementTriggers { reason: String },
    /// SQLite, or a fence older than v3.
    NotApplicable,
}

/// What `reset` did.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct ResetDone {
    /// The scope's highest accepted generation before.
    pub previous: i64,
    /// The audit row of the reset.
    pub row_id: i64,
}

/// What `seal` did.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize)]
pub struct SealReport {
    pub sealed: usize,
    pub scopes: usize,
}
