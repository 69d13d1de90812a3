//! One resource's chain, walked: from a known position and hash, through its rows in id order,
//! to where it ends or to its first broken link. Full, incremental and (later) witnessed
//! verification all walk chains with it.

use super::{Breach, ChainPosition};
use crate::domain::chain::{row_hash, GENESIS};
use crate::store::AuditRecord;

/// A chain being walked.
#[derive(Debug)]
pub(crate) struct ChainVerifier {
    resource: String,
    /// Where the walk started: rows before it are vouched for by a checkpoint.
    start_seq: i64,
    expected_seq: i64,
    expected_prev: String,
    last_id: Option<i64>,
    /// Whether a chained row has been seen (or the start was one): older databases have rows
    /// from before the chain existed, which come first and are counted, not checked.
    chained: bool,
    rows: u64,
    unchained: u64,
    breach: Option<Breach>,
    /// A position a signed checkpoint saw, and its hash there: the chain must still pass it.
    witnessed: Option<WitnessMark>,
}

/// A chain position a witness vouches for.
#[derive(Debug, Clone)]
pub(crate) struct WitnessMark {
    pub seq: i64,
    pub hash: String,
    /// When the checkpoint that saw it was signed (RFC 3339), for the report.
    pub at: String,
}

/// How a walked chain ended.
#[derive(Debug)]
pub(crate) enum ChainEnd {
    Verified(ChainPosition),
    Broken(Breach),
}

/// A finished walk: how it ended and what it read.
#[derive(Debug)]
pub(crate) struct WalkedChain {
    pub resource: String,
    pub end: ChainEnd,
    pub rows: u64,
    pub unchained: u64,
}

impl ChainVerifier {
    /// A walk from the chain's beginning, or from the checkpoint a prune left (`seq`, `hash`).
    pub fn from_start(resource: String, checkpoint: Option<&(i64, String)>) -> Self {
        let (seq, hash) = checkpoint.map_or((0, GENESIS), |(seq, hash)| (*seq, hash.as_str()));
        Self::new(resource, seq, hash.to_owned(), None, false)
    }

    /// A walk from a position an earlier run verified, with the id of the row there.
    pub fn after(resource: String, position: &ChainPosition) -> Self {
        Self::new(
            resource,
            position.seq,
            position.hash.clone(),
            position.audit_id,
            position.seq > 0,
        )
    }

    fn new(resource: String, seq: i64, hash: String, id: Option<i64>, chained: bool) -> Self {
        Self {
            resource,
            start_seq: seq,
            expected_seq: seq + 1,
            expected_prev: hash,
            last_id: id,
            chained,
            rows: 0,
            unchained: 0,
            breach: None,
            witnessed: None,
        }
    }

    /// Holds the walk to a position a witness saw as well as to the chain's head.
    pub fn witnessed(mut self, mark: Option<WitnessMark>) -> Self {
        self.witnessed = mark;
        self
    }

    pub fn resource(&self) -> &str {
        &self.resource
    }

    /// The id of the last row walked (or of the row at the start position).
    pub fn last_id(&self) -> Option<i64> {
        self.last_id
    }

    /// Checks the chain's next row (rows come in id order); after a breach, rows are only
    /// counted.
    pub fn push(&mut self, row: &AuditRecord) {
        self.rows += 1;
        if self.breach.is_some() {
            return;
        }
        self.last_id = Some(row.entry.id);
        let (Some(seq), Some(prev), Some(hash)) = (row.seq, &row.prev_hash, &row.hash) else {
            if self.chained {
                self.broken(row, "a row without a place in the chain was added".into());
            } else {
                self.unchained += 1;
            }
            return;
        };
        self.chained = true;
        let expected = self.expected_seq;
        let problem = if seq > expected {
            format!("position {seq} where {expected} was due: rows before it are missing or out of order")
        } else if seq < expected {
            format!("position {seq} where {expected} was due: a row was added or the rows are out of order")
        } else if *prev != self.expected_prev {
            "does not link to the row before it".to_owned()
        } else if row_hash(&row.entry, seq, prev) != *hash {
            "its contents were changed".to_owned()
        } else if let Some(mark) = self
            .witnessed
            .as_ref()
            .filter(|m| m.seq == seq && m.hash != *hash)
        {
            format!(
                "it is not the row the witness saw at position {seq} (checkpoint of {}): \
                 the chain was rewritten up to here and re-chained",
                mark.at
            )
        } else {
            self.expected_seq = seq + 1;
            self.expected_prev.clone_from(hash);
            return;
        };
        self.broken(row, problem);
    }

    fn broken(&mut self, row: &AuditRecord, problem: String) {
        self.breach = Some(Breach {
            resource: self.resource.clone(),
            audit_id: Some(row.entry.id),
            seq: row.seq,
            problem,
        });
    }

    /// Ends the walk, holding the chain to its head (`seq`, `hash`) when it has one: rows
    /// missing at its end leave the chain short of it.
    pub fn finish(mut self, head: Option<&(i64, String)>) -> WalkedChain {
        let last = self.expected_seq - 1;
        let end = match (self.breach.take(), head) {
            (Some(breach), _) => ChainEnd::Broken(breach),
            (None, _) if self.witnessed.as_ref().is_some_and(|m| m.seq > last) => {
                let mark = self.witnessed.as_ref().map_or(0, |m| m.seq);
                let at = self.witnessed.as_ref().map_or("", |m| m.at.as_str());
                ChainEnd::Broken(Breach {
                    resource: self.resource.clone(),
                    audit_id: None,
                    seq: Some(last + 1),
                    problem: format!(
                        "the witness saw the chain reach position {mark} (checkpoint of {at}); \
                         it now ends at {last}: rows {} to {mark} were deleted",
                        last + 1
                    ),
                })
            }
            // Only rows from before the chain existed: nothing to hold to a head.
            (None, _) if !self.chained && self.start_seq == 0 && self.rows > 0 => {
                ChainEnd::Verified(self.position())
            }
            (None, Some((seq, hash))) if *seq != last || *hash != self.expected_prev => {
                let problem = if self.rows == self.unchained && *seq > last {
                    format!(
                        "all {} row(s) after position {last} are missing",
                        seq - last
                    )
                } else {
                    format!(
                        "the chain ends at position {last} but its head is at {seq}: rows at \
                         its end are missing"
                    )
                };
                ChainEnd::Broken(Breach {
                    resource: self.resource.clone(),
                    audit_id: None,
                    seq: Some(last + 1),
                    problem,
                })
            }
            (None, _) => ChainEnd::Verified(self.position()),
        };
        WalkedChain {
            resource: self.resource,
            end,
            rows: self.rows,
            unchained: self.unchained,
        }
    }

    fn position(&self) -> ChainPosition {
        ChainPosition {
            seq: self.expected_seq - 1,
            hash: self.expected_prev.clone(),
            audit_id: self.last_id,
        }
    }
}
