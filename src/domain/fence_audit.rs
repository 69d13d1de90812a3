//! The audit of a fence installed in the user's own database (`fencewatch fence install`): its
//! row, the canonical encoding and hash its chain uses, and the check of a chain read back.
//!
//! The hash is computed twice, once here and once by the database: PostgreSQL's installed
//! `row_hash()` builds the same JSON array from `to_json()` of each text, which escapes exactly
//! as serde_json does (`\"`, `\\`, `\b`, `\f`, `\n`, `\r`, `\t`, other control characters as
//! lowercase `\u00xx`, everything else as is). SQLite has no SHA-256 in SQL: its rows are
//! written unsealed and sealed with [`row_hash`] here.

use super::chain::GENESIS;
use super::{AuditEntry, Outcome};
use chrono::{DateTime, Utc};
use serde::Serialize;
use sha2::{Digest, Sha256};
use std::collections::BTreeMap;

/// The first element of every row's canonical encoding: a fence row can never hash like a row
/// of the daemon's own audit (`fencewatch-audit-v1`).
pub const ENCODING_TAG: &str = "fencewatch-fence-v1";

/// One row of a fence's audit, as stored (`fencewatch.audit`, SQLite `fencewatch_audit`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct FenceAuditRow {
    /// The watched database's id: grows in the order decisions on a scope were made.
    pub id: i64,
    #[serde(serialize_with = "super::audit::serialize_rfc3339_micros")]
    pub at: DateTime<Utc>,
    /// The scope.
    pub resource: String,
    /// `accepted`, `replayed`, `stale`, `superseded`, `unauthorized` or `invalid`, as the
    /// database wrote it.
    pub outcome: String,
    pub token: Option<i64>,
    /// The scope's highest accepted generation after the decision.
    pub highest_token: i64,
    /// The operation id.
    pub idempotency_key: Option<String>,
    pub owner: Option<String>,
    pub lease: Option<String>,
    pub detail: Option<String>,
    /// The protected table the write went to; `None` for the guard call.
    pub table_name: Option<String>,
    /// The row's position in its scope's chain, from 1.
    pub seq: i64,
    /// `None` until sealed (SQLite's rows, until `fencewatch fence seal` or a watcher seals them).
    pub prev_hash: Option<String>,
    pub hash: Option<String>,
}

impl FenceAuditRow {
    /// The outcome, if it is one the daemon knows.
    pub fn known_outcome(&self) -> Option<Outcome> {
        Outcome::parse(&self.outcome)
    }

    /// The hash this row has at its position after `prev_hash`.
    pub fn computed_hash(&self, prev_hash: &str) -> String {
        row_hash(self, prev_hash)
    }

    /// The row as the daemon's audit shows one: no revision (0) and no body, the protected
    /// table folded into the detail, `source` naming the database it came from (`None` when the
    /// fence's own audit is read in place). `None` for an outcome the daemon does not know.
    pub fn to_audit_entry(&self, source: Option<&str>) -> Option<AuditEntry> {
        let detail = match (&self.table_name, &self.detail) {
            (Some(table), Some(detail)) => Some(format!("{detail} (table {table})")),
            (Some(table), None) => Some(format!("table {table}")),
            (None, detail) => detail.clone(),
        };
        Some(AuditEntry {
            id: self.id,
            at: self.at,
            resource: self.resource.clone(),
            outcome: self.known_outcome()?,
            token: self.token,
            highest_token: self.highest_token,
            revision: 0,
            idempotency_key: self.idempotency_key.clone(),
            expected_revision: None,
            owner: self.owner.clone(),
            lease: self.lease.clone(),
            body_sha256: None,
            body_len: None,
            detail,
            caller: None,
            source: source.map(str::to_owned),
        })
    }
}

/// The canonical encoding of `row` after `prev_hash`: `["fencewatch-fence-v1", seq, at_us,
/// resource, outcome, token, highest_token, idempotency_key, owner, lease, detail, table_name,
/// prev_hash]` as compact JSON (times as integer microseconds since the epoch). The id is left
/// out: it is the database's, and order is checked through `seq`.
pub fn canonical_encoding(row: &FenceAuditRow, prev_hash: &str) -> Vec<u8> {
    let fields = (
        ENCODING_TAG,
        row.seq,
        row.at.timestamp_micros(),
        &row.resource,
        &row.outcome,
        row.token,
        row.highest_token,
        &row.idempotency_key,
        &row.owner,
        &row.lease,
        &row.detail,
        &row.table_name,
        prev_hash,
    );
    // Writing strings, integers and nulls into a Vec cannot fail.
    serde_json::to_vec(&fields).unwrap_or_default()
}

/// SHA-256 of the canonical encoding, in lowercase hex: what the database stores in `hash`.
pub fn row_hash(row: &FenceAuditRow, prev_hash: &str) -> String {
    hex::encode(Sha256::digest(canonical_encoding(row, prev_hash)))
}

/// The `prev_hash` of a scope's first row.
pub fn genesis() -> &'static str {
    GENESIS
}

/// Why a chain does not verify at a row.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case", tag = "kind")]
pub enum ChainFault {
    /// The row is not at the position after its predecessor (a row removed, or one inserted).
    Gap { expected_seq: i64 },
    /// Its `prev_hash` is not its predecessor's hash.
    Unlinked,
    /// Its hash is not the hash of what it holds.
    Altered,
    /// A sealed row after an unsealed one: sealing goes in order, so the rows were changed.
    SealedAfterUnsealed,
    /// A row with one of `prev_hash` and `hash` set but not the other.
    HalfSealed,
    /// The scope's row (its highest accepted generation, chain head or sealed head) says what
    /// its chain does not: the scope's row was edited by hand, or rows were taken from the
    /// chain's end. `what` names the field; the breach's row is the chain's last.
    HeadDisagrees {
        what: String,
        stored: String,
        chained: String,
    },
    /// The scope has audit rows but no row of its own (its highest generation was erased).
    NoScopeRow,
}

/// A scope's row as the fence keeps it beside its chain (PostgreSQL's `scopes`, SQLite's
/// `fencewatch_scopes`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ScopeHead {
    pub scope: String,
    /// The scope's highest accepted generation: the `highest_token` of its chain's last row.
    pub highest_token: i64,
    /// The `seq` of its chain's last row (0: no row yet).
    pub head_seq: i64,
    /// PostgreSQL: the last row's hash, hex (64 zeros before the first).
    pub head_hash: Option<String>,
    /// SQLite: the last sealed row's seq and hash (0 and none before the first seal).
    pub sealed: Option<(i64, Option<String>)>,
}

/// The first row of a scope whose chain does not verify.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ChainBreach {
    pub resource: String,
    pub id: i64,
    pub seq: i64,
    pub fault: ChainFault,
}

/// What a check of the chains found.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize)]
pub struct ChainCheck {
    pub rows: usize,
    pub scopes: usize,
    /// Rows not sealed yet, each at the tail of its scope's chain (SQLite): not a fault.
    pub unsealed: usize,
    /// At most one per scope: the first row where its chain breaks.
    pub breaches: Vec<ChainBreach>,
}

impl ChainCheck {
    pub fn intact(&self) -> bool {
        self.breaches.is_empty()
    }
}

/// Checks every scope's chain in `rows` (any order). Each scope's rows must run from seq 1 with
/// no gap; each sealed row must link to its predecessor and hash to what it holds; unsealed rows
/// may only form a tail.
pub fn check_chains(rows: &[FenceAuditRow]) -> ChainCheck {
    let mut by_scope: BTreeMap<&str, Vec<&FenceAuditRow>> = BTreeMap::new();
    for row in rows {
        by_scope.entry(&row.resource).or_default().push(row);
    }
    let mut check = ChainCheck {
        rows: rows.len(),
        scopes: by_scope.len(),
        ..ChainCheck::default()
    };
    for (_, mut chain) in by_scope {
        chain.sort_by_key(|row| (row.seq, row.id));
        let (unsealed, breach) = check_scope(&chain);
        check.unsealed += unsealed;
        check.breaches.extend(breach);
    }
    check
}

/// [`check_chains`], and each scope's row held to its chain: its highest generation and head
/// are the chain's last row's, its sealed head a sealed row's (SQLite); a scope with rows but
/// no row of its own, or a row of its own claiming rows the chain lacks, is a breach. A scope
/// whose chain already broke is not checked again.
pub fn check_fence(rows: &[FenceAuditRow], heads: &[ScopeHead]) -> ChainCheck {
    let mut check = check_chains(rows);
    let mut by_scope: BTreeMap<&str, Vec<&FenceAuditRow>> = BTreeMap::new();
    for row in rows {
        by_scope.entry(&row.resource).or_default().push(row);
    }
    let heads_by_scope: BTreeMap<&str, &ScopeHead> = heads
        .iter()
        .map(|head| (head.scope.as_str(), head))
        .collect();
    let broken: Vec<String> = check
        .breaches
        .iter()
        .map(|breach| breach.resource.clone())
        .collect();
    for (scope, mut chain) in by_scope {
        if broken.iter().any(|b| b == scope) {
            continue;
        }
        chain.sort_by_key(|row| row.seq);
        let Some(last) = chain.last() else {
            continue;
        };
        let breach = |fault| ChainBreach {
            resource: scope.to_owned(),
            id: last.id,
            seq: last.seq,
            fault,
        };
        match heads_by_scope.get(scope) {
            None => check.breaches.push(breach(ChainFault::NoScopeRow)),
            Some(head) => {
                if let Some(fault) = head_fault(head, &chain) {
                    check.breaches.push(breach(fault));
                }
            }
        }
    }
    for head in heads {
        let claims_rows = head.head_seq != 0 || head.highest_token != 0;
        if claims_rows && !rows.iter().any(|row| row.resource == head.scope) {
            check.breaches.push(ChainBreach {
                resource: head.scope.clone(),
                id: 0,
                seq: 0,
                fault: ChainFault::HeadDisagrees {
                    what: "rows".into(),
                    stored: format!(
                        "highest {}, head at seq {}",
                        head.highest_token, head.head_seq
                    ),
                    chained: "no audit rows".into(),
                },
            });
        }
    }
    check
}

/// What a scope's row says that its chain (in seq order, not empty) does not.
fn head_fault(head: &ScopeHead, chain: &[&FenceAuditRow]) -> Option<ChainFault> {
    let last = chain.last()?;
    let disagrees = |what: &str, stored: String, chained: String| {
        Some(ChainFault::HeadDisagrees {
            what: what.into(),
            stored,
            chained,
        })
    };
    if head.highest_token != last.highest_token {
        return disagrees(
            "highest_token",
            head.highest_token.to_string(),
            last.highest_token.to_string(),
        );
    }
    if head.head_seq != last.seq {
        return disagrees("head_seq", head.head_seq.to_string(), last.seq.to_string());
    }
    if let (Some(stored), Some(chained)) = (&head.head_hash, &last.hash) {
        if stored != chained {
            return disagrees("head_hash", stored.clone(), chained.clone());
        }
    }
    if let Some((sealed_seq, sealed_hash)) = &head.sealed {
        let at = chain.iter().find(|row| row.seq == *sealed_seq);
        let chained = at.and_then(|row| row.hash.clone());
        let agrees = match (*sealed_seq, sealed_hash) {
            (0, None) => true,
            (_, Some(hash)) => chained.as_ref() == Some(hash),
            (_, None) => false,
        };
        if !agrees {
            return disagrees(
                "sealed head",
                format!(
                    "seq {sealed_seq} {}",
                    sealed_hash.as_deref().unwrap_or("none")
                ),
                chained.unwrap_or_else(|| "no sealed row there".into()),
            );
        }
    }
    None
}

/// One scope's rows in seq order: how many are unsealed, and the first breach.
fn check_scope(chain: &[&FenceAuditRow]) -> (usize, Option<ChainBreach>) {
    let mut prev_hash: Option<&str> = Some(GENESIS);
    let mut unsealed = 0;
    for (index, row) in chain.iter().enumerate() {
        let breach = |fault| {
            Some(ChainBreach {
                resource: row.resource.clone(),
                id: row.id,
                seq: row.seq,
                fault,
            })
        };
        let expected_seq = index as i64 + 1;
        if row.seq != expected_seq {
            return (unsealed, breach(ChainFault::Gap { expected_seq }));
        }
        match (&row.prev_hash, &row.hash) {
            (None, None) => {
                unsealed += 1;
                prev_hash = None;
            }
            (Some(stored_prev), Some(stored_hash)) => {
                let Some(expected_prev) = prev_hash else {
                    return (unsealed, breach(ChainFault::SealedAfterUnsealed));
                };
                if stored_prev != expected_prev {
                    return (unsealed, breach(ChainFault::Unlinked));
                }
                if row_hash(row, stored_prev) != *stored_hash {
                    return (unsealed, breach(ChainFault::Altered));
                }
                prev_hash = Some(stored_hash);
            }
            _ => return (unsealed, breach(ChainFault::HalfSealed)),
        }
    }
    (unsealed, None)
}

/// Fills in `prev_hash` and `hash` of the unsealed rows of one scope, given in seq order after
/// the sealed row whose hash is `sealed_head` (`GENESIS` when none is). Returns each sealed
/// row's `(id, prev_hash, hash)`.
pub fn seal_scope(sealed_head: &str, unsealed: &[FenceAuditRow]) -> Vec<(i64, String, String)> {
    let mut prev = sealed_head.to_owned();
    unsealed
        .iter()
        .map(|row| {
            let hash = row_hash(row, &prev);
            let sealed = (row.id, prev.clone(), hash.clone());
            prev = hash;
            sealed
        })
        .collect()
}

#[cfg(test)]
mod tests;
