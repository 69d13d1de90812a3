//! Each resource's stored state held to its audit, in the run's snapshot. Every audit row records
//! the resource as its decision left it (`highest_token`, `revision`: a rejection, a replay or a
//! reset as much as an accepted write), so the row at the chain's head says what the resource's
//! row must hold now; and the value is the one the last accepted write brought, so that row's
//! `body_sha256` and `revision` must match the value's digest and the revision stored.
//!
//! Two rows per resource, each found by a backward seek of the `(resource, id)` index: one
//! statement for all resources. On a partitioned PostgreSQL audit a seek probes every day's
//! partition, so it looks first only at the days since the resource's last accepted write
//! (`updated_at_us`, that write's own time: run-time partition pruning leaves the others out),
//! then again without that bound for the few resources it did not find there (a clock stepped
//! back, a changed `updated_at_us`). The bound decides only how fast, never what is found.
//!
//! What the audit no longer holds is not guessed: a resource whose rows at its head, or whose
//! last accepted write, were pruned is listed as unchecked.

use super::{Anchors, Breach, UncheckedState, VerifyReport};
use crate::store::native::{Native, Tx};
use crate::store::StoreError;
use futures_util::TryStreamExt;
use sha2::{Digest, Sha256};
use std::collections::{HashMap, HashSet};

/// A resource's row beside the audit rows that record its state.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Recorded {
    pub key: String,
    pub highest_token: i64,
    pub revision: i64,
    pub chain_seq: i64,
    pub value_sha256: Vec<u8>,
    /// Its latest chained row.
    pub head: Option<HeadRow>,
    /// Its latest accepted row.
    pub accepted: Option<AcceptedRow>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct HeadRow {
    pub id: i64,
    pub seq: i64,
    pub highest_token: i64,
    pub revision: i64,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct AcceptedRow {
    pub id: i64,
    pub seq: Option<i64>,
    pub revision: i64,
    pub body_sha256: Option<Vec<u8>>,
}

/// A row of the statement, in its columns' order.
type StateRow = (
    String,
    i64,
    i64,
    i64,
    Vec<u8>,
    Option<i64>,
    Option<i64>,
    Option<i64>,
    Option<i64>,
    Option<i64>,
    Option<i64>,
    Option<i64>,
    Option<Vec<u8>>,
);

/// What the audit says of a resource beyond what the statement read, and what the run found.
pub(super) struct Known<'a> {
    /// Where each pruned chain now starts.
    pub checkpoints: &'a HashMap<String, i64>,
    /// Whether the database has rows from before the audit was chained.
    pub pre_chain: bool,
    /// Resources a walk already found broken.
    pub broken: &'a HashSet<String>,
}

/// What one resource's check came to.
#[derive(Debug, Default, PartialEq, Eq)]
pub(super) struct Judged {
    pub breaches: Vec<Breach>,
    pub unchecked: Vec<UncheckedState>,
}

/// Checks every resource's state and adds what it finds to `report`; `full` when the run read
/// every row, so that chains whose resource is gone were walked and can be named.
pub(super) async fn check(
    tx: &mut Tx<'_>,
    anchors: &Anchors,
    pre_chain: bool,
    full: bool,
    report: &mut VerifyReport,
) -> Result<(), StoreError> {
    let mut recorded = read(tx, Look::SinceLastAccepted).await?;
    let again: Vec<String> = recorded
        .values()
        .filter(|r| !found_at_head(r) || r.accepted.is_none())
        .map(|r| r.key.clone())
        .collect();
    if matches!(tx, Native::Postgres(_)) && !again.is_empty() {
        recorded.extend(read(tx, Look::Everywhere(&again)).await?);
    }
    let checkpoints: HashMap<String, i64> = anchors
        .checkpoints
        .iter()
        .map(|(resource, (seq, _))| (resource.clone(), *seq))
        .collect();
    let broken: HashSet<String> = report.breaches.iter().map(|b| b.resource.clone()).collect();
    let known = Known {
        checkpoints: &checkpoints,
        pre_chain,
        broken: &broken,
    };
    let mut keys: Vec<&String> = recorded.keys().collect();
    keys.sort();
    for key in keys {
        let Some(resource) = recorded.get(key) else {
            continue;
        };
        let judged = judge(resource, &known);
        report.states += 1;
        report.breaches.extend(judged.breaches);
        report.unchecked_states.extend(judged.unchecked);
    }
    if full {
        erased(anchors, &recorded, report);
    }
    Ok(())
}

/// A chain walked whole whose resource has neither a row nor a chain head: its row was deleted
/// (an incremental run finds these among the positions it verified before).
fn erased(anchors: &Anchors, recorded: &HashMap<String, Recorded>, report: &mut VerifyReport) {
    let gone: Vec<Breach> = report
        .positions
        .iter()
        .filter(|(resource, position)| {
            position.seq > 0
                && !anchors.heads.contains_key(*resource)
                && !recorded.contains_key(*resource)
        })
        .map(|(resource, position)| Breach {
            resource: resource.clone(),
            audit_id: position.audit_id,
            seq: Some(position.seq),
            problem: format!(
                "its audit chain reaches position {} but the resource has no row and no chain \
                 head: it was erased",
                position.seq
            ),
        })
        .collect();
    report.breaches.extend(gone);
}

fn found_at_head(resource: &Recorded) -> bool {
    resource
        .head
        .as_ref()
        .is_some_and(|head| head.seq == resource.chain_seq)
}

/// Which audit rows a statement looks at for each resource.
enum Look<'k> {
    /// Only rows from the resource's last accepted write's time on (PostgreSQL; SQLite's audit
    /// is one table and reads the same either way).
    SinceLastAccepted,
    /// Every row, for these resources.
    Everywhere(&'k [String]),
}

/// The resources' rows with their latest chained and latest accepted rows, by key.
async fn read(tx: &mut Tx<'_>, look: Look<'_>) -> Result<HashMap<String, Recorded>, StoreError> {
    let mut recorded = HashMap::new();
    match tx.conn() {
        Native::Sqlite(conn) => {
            // No digest function in SQLite: each value is hashed here, one row at a time.
            let sql = format!(
                "SELECT r.key, r.highest_token, r.revision, r.chain_seq, r.value, \
                   h.id, h.seq, h.highest_token, h.revision, a.id, a.seq, a.revision, \
                   a.body_sha256 \
                 FROM resources AS r \
                 LEFT JOIN audit AS h ON h.id = ({}) \
                 LEFT JOIN audit AS a ON a.id = ({})",
                latest("id", "seq IS NOT NULL", ""),
                latest("id", "outcome = 'accepted'", ""),
            );
            let mut rows = sqlx::query_as::<_, StateRow>(&sql).fetch(conn);
            while let Some(mut row) = rows.try_next().await? {
                row.4 = Sha256::digest(&row.4).to_vec();
                let resource = decode(row);
                recorded.insert(resource.key.clone(), resource);
            }
        }
        Native::Postgres(conn) => {
            let (bound, only) = match look {
                Look::SinceLastAccepted => (" AND at_us >= r.updated_at_us", ""),
                Look::Everywhere(_) => ("", " WHERE r.key = ANY($1)"),
            };
            let sql = format!(
                "SELECT r.key, r.highest_token, r.revision, r.chain_seq, sha256(r.value), \
                   h.id, h.seq, h.highest_token, h.revision, a.id, a.seq, a.revision, \
                   a.body_sha256 \
                 FROM resources AS r \
                 LEFT JOIN LATERAL ({}) AS h ON true \
                 LEFT JOIN LATERAL ({}) AS a ON true{only}",
                latest("id, seq, highest_token, revision", "seq IS NOT NULL", bound),
                latest(
                    "id, seq, revision, body_sha256",
                    "outcome = 'accepted'",
                    bound
                ),
            );
            let query = sqlx::query_as::<_, StateRow>(&sql);
            let query = match look {
                Look::Everywhere(keys) => query.bind(keys),
                Look::SinceLastAccepted => query,
            };
            let mut rows = query.fetch(conn);
            while let Some(row) = rows.try_next().await? {
                let resource = decode(row);
                recorded.insert(resource.key.clone(), resource);
            }
        }
    }
    Ok(recorded)
}

/// The resource's (`r.key`) newest audit row that matches `filter`: a backward seek of the
/// `(resource, id)` index.
fn latest(columns: &str, filter: &str, bound: &str) -> String {
    format!(
        "SELECT {columns} FROM audit WHERE resource = r.key AND {filter}{bound} \
         ORDER BY id DESC LIMIT 1"
    )
}

fn decode(row: StateRow) -> Recorded {
    let (key, highest_token, revision, chain_seq, value_sha256, h_id, h_seq, h_highest, h_rev) = (
        row.0, row.1, row.2, row.3, row.4, row.5, row.6, row.7, row.8,
    );
    let head = match (h_id, h_seq, h_highest, h_rev) {
        (Some(id), Some(seq), Some(highest_token), Some(revision)) => Some(HeadRow {
            id,
            seq,
            highest_token,
            revision,
        }),
        _ => None,
    };
    let accepted = match (row.9, row.11) {
        (Some(id), Some(revision)) => Some(AcceptedRow {
            id,
            seq: row.10,
            revision,
            body_sha256: row.12,
        }),
        _ => None,
    };
    Recorded {
        key,
        highest_token,
        revision,
        chain_seq,
        value_sha256,
        head,
        accepted,
    }
}

/// One resource held to its audit.
pub(super) fn judge(resource: &Recorded, known: &Known<'_>) -> Judged {
    let mut judged = Judged::default();
    let key = resource.key.as_str();
    let breach = |row: Option<(i64, Option<i64>)>, problem: String| Breach {
        resource: key.to_owned(),
        audit_id: row.map(|(id, _)| id),
        seq: row.and_then(|(_, seq)| seq),
        problem,
    };
    let unchecked = |what: &str, why: &str| UncheckedState {
        resource: key.to_owned(),
        what: what.to_owned(),
        why: why.to_owned(),
    };
    if known.broken.contains(key) {
        // Its chain's first broken link stands for it: what the rows after it say, or no
        // longer say, is not the audit's.
        return judged;
    }
    let checkpoint = known.checkpoints.get(key).copied();
    let mut revision_told = false;

    // The generation and revision, against the row at the chain's head.
    match &resource.head {
        _ if resource.chain_seq == 0 => match &resource.head {
            // Its head was set back to the start, or the row was made by hand.
            Some(head) => judged.breaches.push(breach(
                Some((head.id, Some(head.seq))),
                format!(
                    "its chain head is at position 0 but its audit reaches position {}",
                    head.seq
                ),
            )),
            None if known.pre_chain => judged.unchecked.push(unchecked(
                "highest generation and revision",
                "last written before the audit was chained",
            )),
            None => {
                // One breach for one forged row: its value has no audit either.
                judged.breaches.push(breach(
                    None,
                    "it has no audit chain: its row was added outside fencewatch".into(),
                ));
                return judged;
            }
        },
        Some(head) if head.seq == resource.chain_seq => {
            // One breach for the row, naming each field it disagrees with.
            let mut differences = Vec::new();
            if head.highest_token != resource.highest_token {
                differences.push(format!(
                    "highest generation {} is stored, its audit says {}",
                    resource.highest_token, head.highest_token
                ));
            }
            if head.revision != resource.revision {
                revision_told = true;
                differences.push(format!(
                    "revision {} is stored, its audit says {}",
                    resource.revision, head.revision
                ));
            }
            if !differences.is_empty() {
                judged.breaches.push(breach(
                    Some((head.id, Some(head.seq))),
                    differences.join("; "),
                ));
            }
        }
        _ if checkpoint.is_some_and(|seq| seq >= resource.chain_seq) => {
            judged.unchecked.push(unchecked(
                "highest generation and revision",
                "the audit rows at its chain's head were pruned",
            ));
        }
        // Rows at its head are missing, and no walk saw it (an incremental run reads only the
        // rows after its positions).
        head => judged.breaches.push(breach(
            head.as_ref().map(|h| (h.id, Some(h.seq))),
            format!(
                "its chain head is at position {} but its audit's last row is at {}",
                resource.chain_seq,
                head.as_ref().map_or(0, |h| h.seq)
            ),
        )),
    }

    // The value, against the last accepted write.
    match &resource.accepted {
        // Older than the chain (any later one is a breach of its own, `unchained`): what it
        // says is not protected by a hash, and the digest may not have been recorded.
        Some(accepted) if accepted.seq.is_none() => judged.unchecked.push(unchecked(
            "value",
            "last written before the audit was chained",
        )),
        Some(accepted) => {
            let at = Some((accepted.id, accepted.seq));
            if accepted.body_sha256.as_deref() != Some(resource.value_sha256.as_slice()) {
                judged.breaches.push(breach(
                    at,
                    format!(
                        "the value's SHA-256 is {}, its last accepted write recorded {}",
                        hex::encode(&resource.value_sha256),
                        accepted
                            .body_sha256
                            .as_deref()
                            .map_or_else(|| "none".to_owned(), hex::encode)
                    ),
                ));
            }
            if accepted.revision != resource.revision && !revision_told {
                judged.breaches.push(breach(
                    at,
                    format!(
                        "revision {} is stored, its last accepted write made revision {}",
                        resource.revision, accepted.revision
                    ),
                ));
            }
        }
        None if checkpoint.is_some() => judged.unchecked.push(unchecked(
            "value",
            "the audit row of its last accepted write was pruned",
        )),
        None if known.pre_chain => judged.unchecked.push(unchecked(
            "value",
            "last written before the audit was chained",
        )),
        None => judged.breaches.push(breach(
            None,
            format!(
                "it holds a value at revision {} but its audit records no accepted write",
                resource.revision
            ),
        )),
    }
    judged
}

#[cfg(test)]
mod tests;
