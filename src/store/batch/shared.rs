//! What the parts of a batch share: what it observed, where its audit rows go, the chain heads
//! it links onto, and the helpers its statements are built with. A leaf: it names no other part
//! of the batch, so each of them can name it.

use crate::domain::{
    Applied, FencingToken, LeaseRecord, RecordedOperation, ResourceState, Revision,
};
use crate::store::error::corrupt;
use crate::store::StoreError;
use std::collections::HashMap;
use std::fmt::Write as _;

/// What a batch reads before deciding.
pub(crate) struct Observed<P> {
    pub resources: HashMap<String, ObservedResource>,
    pub operations: HashMap<(String, String), RecordedOperation>,
    /// The `chain_heads` rows of the batch's resources (see `chain_heads`).
    pub unwritten_heads: Vec<(String, i64, String)>,
    /// Where the batch's audit rows go, read with the rest (`Dialect::Position`).
    pub audit: P,
}

#[derive(Clone)]
pub(crate) struct ObservedResource {
    pub state: ResourceState,
    pub owner: Option<String>,
    /// The head of its audit chain: position and hash.
    pub chain: (i64, String),
}

impl ObservedResource {
    pub(crate) fn decode(
        highest_token: i64,
        revision: i64,
        owner: Option<String>,
        chain: (i64, String),
    ) -> Result<Self, StoreError> {
        let revision = Revision::new(revision).map_err(|e| corrupt(e.0))?;
        Ok(Self {
            state: ResourceState {
                highest_token,
                revision,
            },
            owner,
            chain,
        })
    }
}

/// The leases the batch names, with the authority's clock. On PostgreSQL they are share-locked
/// until the batch commits, so no new generation can be granted between check and write.
pub(crate) struct ObservedLeases {
    pub records: HashMap<String, LeaseRecord>,
    pub now_us: i64,
}

/// The last seq and hash of each resource's chain.
pub(crate) type ChainHeads = HashMap<String, (i64, String)>;

/// An audit row's place in its resource's hash chain.
pub(crate) struct Link {
    pub seq: i64,
    pub prev_hash: String,
    pub hash: String,
}

/// A row of `operations`, from its columns in table order.
pub(crate) fn recorded_operation(
    token: i64,
    body_sha256: String,
    status: i64,
    revision: i64,
    highest_token: i64,
    audit_id: i64,
) -> Result<RecordedOperation, StoreError> {
    let decode = |e: crate::domain::ParseError| corrupt(e.0);
    Ok(RecordedOperation {
        token: FencingToken::new(token).map_err(decode)?,
        body_sha256,
        applied: applied_from_status(status)?,
        revision: Revision::new(revision).map_err(decode)?,
        highest_token,
        audit_id,
    })
}

/// `operations.status`: how an accepted operation applied, kept as the HTTP status it was
/// answered with (the column predates the typed outcome, and its rows stay as written).
pub(crate) fn status_of(applied: Applied) -> i64 {
    match applied {
        Applied::Created => 201,
        Applied::Updated => 200,
    }
}

fn applied_from_status(status: i64) -> Result<Applied, StoreError> {
    match status {
        201 => Ok(Applied::Created),
        200 => Ok(Applied::Updated),
        other => Err(corrupt(format!(
            "a recorded operation has status {other}, neither 200 nor 201"
        ))),
    }
}

/// Pads a list for `IN (…)` to a power of two by repeating its last item, which changes nothing
/// a membership test answers, so that few statement texts exist and stay prepared.
pub(crate) fn padded<T: Copy>(mut items: Vec<T>) -> Vec<T> {
    if let Some(&last) = items.last() {
        items.resize(items.len().next_power_of_two(), last);
    }
    items
}

/// `$first, $first+1, …` for `count` parameters.
pub(crate) fn placeholders(first: usize, count: usize) -> String {
    let mut sql = String::with_capacity(count * 5);
    for index in 0..count {
        if index > 0 {
            sql.push_str(", ");
        }
        let _ = write!(sql, "${}", first + index);
    }
    sql
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn statements_take_few_shapes() {
        assert_eq!(padded(vec![1, 2, 3]), vec![1, 2, 3, 3]);
        assert_eq!(padded(vec![1, 2, 3, 4]), vec![1, 2, 3, 4]);
        assert!(padded(Vec::<u8>::new()).is_empty());
    }

    #[test]
    fn a_recorded_status_reads_back_as_it_was_written() {
        for applied in [Applied::Created, Applied::Updated] {
            assert_eq!(applied_from_status(status_of(applied)).unwrap(), applied);
        }
        assert!(applied_from_status(204).is_err());
    }
}
