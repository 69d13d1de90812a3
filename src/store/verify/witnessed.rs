//! Holding the audit to a witness: what the signed checkpoints vouch for (`WitnessedAudit`)
//! that the rows alone cannot show. A full walk checks that each chain still passes the furthest
//! head a checkpoint saw, with the hash it saw (`walk::WitnessMark`), an incremental one starts
//! from those heads (`heads`) and checks their rows are still there; here, after the walk:
//! chains a checkpoint saw that are gone altogether, and chain starts that moved past where a
//! checkpoint saw them without a prune's signature. Also what a signer reads to sign the next
//! checkpoint (`WitnessSnapshot`).

use super::full::Marks;
use super::walk::WitnessMark;
use super::{Anchors, Breach, ChainPosition, VerifiedPositions, VerifyReport};
use crate::domain::audit::rfc3339_of_micros;
use crate::domain::witness::{start_message, ChainMark, Link, PublicKey, WitnessedAudit};
use serde::Serialize;

/// What the witness held, for the report.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct WitnessSummary {
    /// Checkpoints read (witness file and database).
    pub checkpoints: u64,
    pub chains: u64,
    /// The latest checkpoint's time (RFC 3339) and its row count.
    pub latest_at: Option<String>,
    pub latest_rows: Option<u64>,
}

/// A chain's start as the audit holds it, with a prune's signature if it has one.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StartRow {
    pub seq: i64,
    pub hash: String,
    pub signature: Option<String>,
}

/// One snapshot of the audit, for a signer: the chains verified up to their heads and where
/// each starts.
#[derive(Debug)]
pub struct WitnessSnapshot {
    pub report: VerifyReport,
    starts: std::collections::HashMap<String, StartRow>,
}

impl WitnessSnapshot {
    pub(super) fn new(report: VerifyReport, anchors: Anchors) -> Self {
        let Anchors {
            checkpoints,
            mut signatures,
            ..
        } = anchors;
        let starts = checkpoints
            .into_iter()
            .map(|(resource, (seq, hash))| {
                let signature = signatures.remove(&resource);
                (
                    resource,
                    StartRow {
                        seq,
                        hash,
                        signature,
                    },
                )
            })
            .collect();
        Self { report, starts }
    }

    /// Chain starts that moved past where `previous` saw them without a prune's signature by
    /// `key`: rows deleted outside a prune, which a signer must not vouch for.
    pub fn unsigned_starts(
        &self,
        previous: &VerifiedPositions,
        previous_starts: &std::collections::HashMap<String, i64>,
        key: &PublicKey,
    ) -> Vec<Breach> {
        self.starts
            .iter()
            .filter(|(resource, _)| previous.contains_key(*resource))
            .filter_map(|(resource, start)| {
                let seen = previous_starts.get(resource).copied().unwrap_or(0);
                start_breach(resource, start, seen, "the last checkpoint", key)
            })
            .collect()
    }

    /// The checkpoint's chains: each verified chain's head (with its row's id) and start.
    pub fn chains(&self) -> Vec<ChainMark> {
        self.report
            .positions
            .iter()
            .map(|(resource, head)| ChainMark {
                resource: resource.clone(),
                start: self.starts.get(resource).map(|start| Link {
                    seq: start.seq,
                    hash: start.hash.clone(),
                    id: None,
                }),
                head: Link {
                    seq: head.seq,
                    hash: head.hash.clone(),
                    id: head.audit_id,
                },
            })
            .collect()
    }
}

/// The furthest head each witnessed chain reached, as positions an incremental run starts
/// from.
pub(super) fn heads(witnessed: &WitnessedAudit) -> VerifiedPositions {
    witnessed
        .chains
        .iter()
        .map(|(resource, chain)| {
            (
                resource.clone(),
                ChainPosition {
                    seq: chain.head.seq,
                    hash: chain.head.hash.clone(),
                    audit_id: chain.head.id,
                },
            )
        })
        .collect()
}

/// The furthest head each witnessed chain reached, for the walk.
pub(super) fn marks(witnessed: &WitnessedAudit) -> Marks {
    witnessed
        .chains
        .iter()
        .map(|(resource, chain)| {
            (
                resource.clone(),
                WitnessMark {
                    seq: chain.head.seq,
                    hash: chain.head.hash.clone(),
                    at: format_rfc3339_micros_us(chain.at_us),
                },
            )
        })
        .collect()
}

/// After the walk: what only the witness shows.
pub(super) fn check(
    report: &mut VerifyReport,
    anchors: &Anchors,
    witnessed: &WitnessedAudit,
    key: &PublicKey,
) {
    for (resource, seq) in &witnessed.conflicts {
        report.breaches.push(Breach {
            resource: resource.clone(),
            audit_id: None,
            seq: Some(*seq),
            problem: format!(
                "two signed checkpoints give position {seq} different hashes: one history \
                 was rewritten between them"
            ),
        });
    }
    for (resource, chain) in &witnessed.chains {
        let at = format_rfc3339_micros_us(chain.at_us);
        let walked = report.positions.contains_key(resource)
            || report.breaches.iter().any(|b| &b.resource == resource);
        if !walked && !anchors.heads.contains_key(resource) {
            // A full run read every row, so knows none is left; an incremental one read none
            // of this chain's.
            let gone = if report.full {
                "neither its rows nor its head"
            } else {
                "no longer its head"
            };
            report.breaches.push(Breach {
                resource: resource.clone(),
                audit_id: chain.head.id,
                seq: Some(chain.head.seq),
                problem: format!(
                    "the witness saw its chain up to position {} (checkpoint of {at}); the \
                     database holds {gone}: the resource was erased",
                    chain.head.seq
                ),
            });
            continue;
        }
        let Some((seq, hash)) = anchors.checkpoints.get(resource) else {
            continue;
        };
        let start = StartRow {
            seq: *seq,
            hash: hash.clone(),
            signature: anchors.signatures.get(resource).cloned(),
        };
        let seen = chain.start.as_ref().map_or(0, |start| start.seq);
        if let Some(breach) = start_breach(
            resource,
            &start,
            seen,
            &format!("the checkpoint of {at}"),
            key,
        ) {
            report.breaches.push(breach);
        } else if start.seq == chain.head.seq && start.hash != chain.head.hash {
            report.breaches.push(Breach {
                resource: resource.clone(),
                audit_id: None,
                seq: Some(start.seq),
                problem: format!(
                    "its checkpoint at position {} does not hold the hash the witness saw there \
                     (checkpoint of {at})",
                    start.seq
                ),
            });
        }
    }
    report.witness = Some(WitnessSummary {
        checkpoints: witnessed.checkpoints,
        chains: witnessed.chains.len() as u64,
        latest_at: witnessed
            .latest
            .map(|(at_us, _)| format_rfc3339_micros_us(at_us)),
        latest_rows: witnessed.latest.map(|(_, rows)| rows),
    });
}

/// A start past position `seen` (where a checkpoint saw the chain start) must carry a prune's
/// signature of it by `key`.
fn start_breach(
    resource: &str,
    start: &StartRow,
    seen: i64,
    checkpoint: &str,
    key: &PublicKey,
) -> Option<Breach> {
    if start.seq <= seen {
        return None;
    }
    let signed = start.signature.as_deref().is_some_and(|signature| {
        key.verifies(&start_message(resource, start.seq, &start.hash), signature)
    });
    (!signed).then(|| Breach {
        resource: resource.to_owned(),
        audit_id: None,
        seq: Some(start.seq),
        problem: format!(
            "the chain now starts after position {}, where {checkpoint} saw it start after {seen}: \
             rows {} to {} were removed with no prune's signature (a forged checkpoint, or a \
             prune without the witness's key)",
            start.seq,
            seen + 1,
            start.seq
        ),
    })
}

fn format_rfc3339_micros_us(at_us: i64) -> String {
    rfc3339_of_micros(at_us).unwrap_or_else(|| at_us.to_string())
}
