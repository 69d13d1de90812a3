//! One resource's chain, walked: from a known position and hash, through its rows in id order,
//! to where it ends or to its first broken link. Full, incremental and witnessed verification
//! all walk chains with it.

use super::{Breach, ChainPosition};
use crate::domain::chain::{encoding_digest, row_digest, row_hash, GENESIS};
use crate::domain::AuditEntry;
use crate::store::AuditRecord;
use std::collections::HashMap;

/// What a walk reads of a row: its place in the chain (digests as the audit stores them, their
/// bytes) and what its hash covers.
#[derive(Debug)]
pub(crate) struct ChainRow {
    pub id: i64,
    pub seq: Option<i64>,
    pub prev_hash: Option<Vec<u8>>,
    pub hash: Option<Vec<u8>>,
    pub contents: Contents,
}

/// A row's hashed contents, in one of two forms.
#[derive(Debug)]
pub(crate) enum Contents {
    /// The recorded fields, encoded here as `row_hash` encodes them: a mismatch is a change.
    Fields(Box<AuditEntry>),
    /// The encoding the database built of its columns (SQLite's `json_array`). Its escaping of
    /// a few characters might differ from serde_json's, so a mismatch is only a doubt, settled
    /// by reading the row whole (`ChainVerifier::settle`).
    Encoded(String),
}

/// A chain being walked.
#[derive(Debug)]
pub(crate) struct ChainVerifier {
    resource: String,
    /// Where the walk started: rows before it are vouched for by a checkpoint.
    start_seq: i64,
    start_hash: String,
    expected_seq: i64,
    /// The digest the next row must link to; `None` when the start's hash is not one a row can
    /// hold (not lowercase hex of a digest), so that no row links to it.
    expected_prev: Option<Vec<u8>>,
    last_id: Option<i64>,
    /// Whether a chained row has been seen (or the start was one): older databases have rows
    /// from before the chain existed, which come first and are counted, not checked.
    chained: bool,
    rows: u64,
    unchained: u64,
    /// Rows (id, seq) whose database encoding did not match their hash, in id order; the walk
    /// went on past them as if they matched.
    doubts: Vec<(i64, i64)>,
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

impl WitnessMark {
    /// The row at the witnessed position is not the one the witness saw, though the chain
    /// links up to it.
    pub fn rewritten(&self) -> String {
        format!(
            "it is not the row the witness saw at position {} (checkpoint of {}): the chain was \
             rewritten up to here and re-chained",
            self.seq, self.at
        )
    }

    /// The chain now ends at `last`, short of the witnessed position.
    pub fn cut_short(&self, resource: &str, last: i64) -> Breach {
        Breach {
            resource: resource.to_owned(),
            audit_id: None,
            seq: Some(last + 1),
            problem: format!(
                "the witness saw the chain reach position {} (checkpoint of {}); it now ends at \
                 {last}: rows {} to {} were deleted",
                self.seq,
                self.at,
                last + 1,
                self.seq
            ),
        }
    }
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
            expected_prev: stored_form(&hash),
            start_hash: hash,
            last_id: id,
            chained,
            rows: 0,
            unchained: 0,
            doubts: Vec::new(),
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
    pub fn push(&mut self, row: ChainRow) {
        self.rows += 1;
        if self.breach.is_some() {
            return;
        }
        self.last_id = Some(row.id);
        let (Some(seq), Some(prev), Some(hash)) = (row.seq, &row.prev_hash, row.hash) else {
            if self.chained {
                self.broken(
                    row.id,
                    row.seq,
                    "a row without a place in the chain was added",
                );
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
        } else if self.expected_prev.as_ref() != Some(prev) {
            "does not link to the row before it".to_owned()
        } else {
            let matches = match &row.contents {
                Contents::Fields(entry) => row_digest(entry, seq, &hex::encode(prev)) == *hash,
                Contents::Encoded(encoded) => {
                    if encoding_digest(encoded.as_bytes()) != *hash {
                        self.doubts.push((row.id, seq));
                    }
                    true
                }
            };
            let witnessed = self
                .witnessed
                .as_ref()
                .filter(|mark| mark.seq == seq && mark.hash != hex::encode(&hash));
            match (matches, witnessed) {
                (true, None) => {
                    self.expected_seq = seq + 1;
                    self.expected_prev = Some(hash);
                    return;
                }
                (true, Some(mark)) => mark.rewritten(),
                (false, _) => CHANGED.to_owned(),
            }
        };
        self.broken(row.id, Some(seq), problem);
    }

    /// The ids of the rows whose database encoding did not match their hash, to be read whole
    /// for `settle`.
    pub fn doubted(&self) -> impl Iterator<Item = i64> + '_ {
        self.doubts.iter().map(|(id, _)| *id)
    }

    /// Settles the doubts with the doubted rows read whole (by id), in the walk's snapshot: the
    /// first whose fields, encoded by `row_hash`, do not give its stored hash is the chain's
    /// first broken link, ahead of any breach the walk found after it. The walk's other checks
    /// (position, link) were made on the stored digests, which these rows carry too.
    pub fn settle(&mut self, whole: &HashMap<i64, AuditRecord>) {
        for (id, seq) in std::mem::take(&mut self.doubts) {
            let problem = match whole.get(&id) {
                Some(row) => match (&row.prev_hash, &row.hash) {
                    (Some(prev), Some(hash)) if row_hash(&row.entry, seq, prev) == *hash => {
                        continue;
                    }
                    _ => CHANGED,
                },
                None => "the row could not be read again to check its contents",
            };
            self.broken(id, Some(seq), problem);
            return;
        }
    }

    /// Records the chain's first broken link (replacing one found later in the walk).
    fn broken(&mut self, id: i64, seq: Option<i64>, problem: impl Into<String>) {
        self.breach = Some(Breach {
            resource: self.resource.clone(),
            audit_id: Some(id),
            seq,
            problem: problem.into(),
        });
    }

    /// Ends the walk, holding the chain to its head (`seq`, `hash`) when it has one: rows
    /// missing at its end leave the chain short of it.
    pub fn finish(mut self, head: Option<&(i64, String)>) -> WalkedChain {
        // Doubts left unsettled are not taken for matches (the callers settle them all).
        if let Some(&(id, seq)) = self.doubts.first() {
            self.broken(id, Some(seq), "its contents were not checked");
        }
        let last = self.expected_seq - 1;
        let last_hash = self.last_hash();
        // A chain that ends short of where the witness saw it, when nothing broke before.
        let short = self
            .witnessed
            .as_ref()
            .filter(|mark| mark.seq > last)
            .map(|mark| mark.cut_short(&self.resource, last));
        let end = match (self.breach.take().or(short), head) {
            (Some(breach), _) => ChainEnd::Broken(breach),
            // Only rows from before the chain existed: nothing to hold to a head.
            (None, _) if !self.chained && self.start_seq == 0 && self.rows > 0 => {
                ChainEnd::Verified(self.position())
            }
            (None, Some((seq, hash))) if *seq != last || *hash != last_hash => {
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
            hash: self.last_hash(),
            audit_id: self.last_id,
        }
    }

    /// The hash of the last position checked, as hex: the start's own text until a row moved
    /// the walk on.
    fn last_hash(&self) -> String {
        match &self.expected_prev {
            Some(digest) if self.expected_seq - 1 != self.start_seq => hex::encode(digest),
            _ => self.start_hash.clone(),
        }
    }
}

const CHANGED: &str = "its contents were changed";

/// A chain position's hash (lowercase hex) as the audit stores a digest; `None` for any other
/// text, which no stored digest equals as hex either.
fn stored_form(hash: &str) -> Option<Vec<u8>> {
    let bytes = hex::decode(hash).ok()?;
    (hex::encode(&bytes) == hash).then_some(bytes)
}

#[cfg(test)]
mod tests;
