//! Only what changed since an earlier run: each chain whose head moved past its verified
//! position is walked from there (`WHERE resource = $1 AND id > $2`, the `(resource, id)`
//! index), and every verified position is checked to be still there, so a tail deleted behind
//! it or an erased resource is still found. Rows before a verified position changed later are
//! not read: that is what a full run is for. The positions are an earlier run's record or the
//! heads a witness signed (`marks`, which also word the breaches after the checkpoint that saw
//! them).

use super::full::Marks;
use super::rows::{fields_columns, with_fields};
use super::walk::{ChainVerifier, WitnessMark};
use super::{Anchors, Breach, ChainPosition, VerifiedPositions, VerifyReport};
use crate::store::native::{on_db, Tx};
use crate::store::StoreError;
use futures_util::TryStreamExt;
use std::collections::HashMap;

/// Verified rows looked up per statement (well under SQLite's limit on parameters).
const LOOKUP: usize = 500;

pub(super) async fn verify(
    tx: &mut Tx<'_>,
    anchors: &Anchors,
    verified: &VerifiedPositions,
    marks: &Marks,
) -> Result<VerifyReport, StoreError> {
    let mut report = VerifyReport::default();
    let stored = verified_rows(tx, verified).await?;
    let mut walks = Vec::new();
    for (resource, head) in &anchors.heads {
        let pruned = anchors.checkpoints.get(resource);
        let Some(position) = verified.get(resource) else {
            // A chain the earlier run did not see: all of it.
            walks.push(ChainVerifier::from_start(resource.clone(), pruned));
            continue;
        };
        let mark = marks.get(resource);
        match start_after(resource, position, pruned, head, &stored, mark) {
            Err(breach) => report.breaches.push(breach),
            Ok(start) if head.0 == start.seq => {
                report.covered_chains += 1;
                report.covered_rows += covered(position, pruned);
                report.positions.insert(resource.clone(), start);
            }
            Ok(start) => {
                report.covered_chains += 1;
                report.covered_rows += covered(position, pruned);
                walks.push(ChainVerifier::after(resource.clone(), &start));
            }
        }
    }
    // A chain verified before whose head is gone: the resource was erased (a witnessed one is
    // named by the witness's check, after the checkpoint that saw it).
    for (resource, position) in verified {
        if position.seq > 0
            && !anchors.heads.contains_key(resource)
            && !marks.contains_key(resource)
        {
            report.breaches.push(Breach {
                resource: resource.clone(),
                audit_id: position.audit_id,
                seq: Some(position.seq),
                problem: format!(
                    "its chain head is gone, though {} position(s) were verified",
                    position.seq
                ),
            });
        }
    }
    let newest: Option<i64> = on_db!(tx.conn(), conn => sqlx::query_scalar("SELECT max(id) FROM audit")
            .fetch_one(conn).await?);
    let (alone, together) = split_walks(walks, newest.unwrap_or(0));
    let columns = fields_columns();
    let sql = format!("SELECT {columns} FROM audit WHERE resource = $1 AND id > $2 ORDER BY id");
    for mut chain in alone {
        let after = chain.last_id().unwrap_or(0);
        let resource = chain.resource().to_owned();
        on_db!(tx.conn(), conn => {
            let mut rows = sqlx::query(&sql).bind(&resource).bind(after).fetch(conn);
            while let Some(row) = rows.try_next().await? {
                chain.push(with_fields(&row)?.row);
            }
        });
        let head = anchors.heads.get(chain.resource());
        report.add(chain.finish(head));
    }
    if let Some(floor) = together.iter().filter_map(|c| c.last_id()).min() {
        let mut chains: HashMap<String, ChainVerifier> = together
            .into_iter()
            .map(|chain| (chain.resource().to_owned(), chain))
            .collect();
        let sql = format!("SELECT {columns} FROM audit WHERE id > $1 ORDER BY id");
        on_db!(tx.conn(), conn => {
            let mut rows = sqlx::query(&sql).bind(floor).fetch(conn);
            while let Some(row) = rows.try_next().await? {
                let read = with_fields(&row)?;
                if let Some(chain) = chains.get_mut(&read.resource) {
                    if chain.last_id().is_some_and(|last| read.row.id > last) {
                        chain.push(read.row);
                    }
                }
            }
        });
        for (resource, chain) in chains {
            let head = anchors.heads.get(&resource);
            report.add(chain.finish(head));
        }
    }
    report.full = false;
    Ok(report)
}

/// Reading one chain's new rows is a query of its own: on SQLite an index seek, on a
/// partitioned PostgreSQL audit a probe of every partition's index, which costs about as much
/// as reading this many rows in one pass ([performance](../../../docs/performance.md)).
const QUERY_IN_ROWS: i64 = 2_000;

/// Which chains read their new rows alone (`WHERE resource = … AND id > …`) and which share
/// one pass over every row after the oldest of their positions (`WHERE id > …`): the split that
/// reads least, counting the rows after a position as `newest - position` (ids are drawn in
/// order) and a query of its own as `QUERY_IN_ROWS`. The oldest positions go alone: one idle
/// chain that moved again must not make the pass read months of rows.
fn split_walks(
    mut walks: Vec<ChainVerifier>,
    newest: i64,
) -> (Vec<ChainVerifier>, Vec<ChainVerifier>) {
    let after = |chain: &ChainVerifier| chain.last_id().unwrap_or(0);
    walks.sort_by_key(after);
    // Chains never verified have no position: they are read alone, from their start.
    let unplaced = walks.iter().take_while(|c| c.last_id().is_none()).count();
    let mut best = (
        i64::try_from(walks.len())
            .unwrap_or(i64::MAX)
            .saturating_mul(QUERY_IN_ROWS),
        walks.len(),
    );
    for (alone, first_together) in walks.iter().enumerate().skip(unplaced) {
        let cost = i64::try_from(alone)
            .unwrap_or(i64::MAX)
            .saturating_mul(QUERY_IN_ROWS)
            .saturating_add(newest.saturating_sub(after(first_together)));
        if cost < best.0 {
            best = (cost, alone);
        }
    }
    let together = walks.split_off(best.1);
    (walks, together)
}

/// Where a chain verified up to `position` resumes: there, if its row is still there with the
/// same position and hash and the head has neither fallen behind it nor been replaced there; at
/// the prune's checkpoint if a prune has since removed it. With the witness's `mark` there, a
/// breach says which checkpoint saw the position.
fn start_after(
    resource: &str,
    position: &ChainPosition,
    pruned: Option<&(i64, String)>,
    head: &(i64, String),
    stored: &HashMap<i64, (String, Option<i64>, Option<String>)>,
    mark: Option<&WitnessMark>,
) -> Result<ChainPosition, Breach> {
    let breach = |audit_id: Option<i64>, problem: String| Breach {
        resource: resource.to_owned(),
        audit_id,
        seq: Some(position.seq),
        problem,
    };
    if head.0 < position.seq {
        return Err(match mark {
            Some(mark) => mark.cut_short(resource, head.0),
            None => breach(None, head_moved(head.0, position.seq)),
        });
    }
    let start = resume(resource, position, pruned, stored, mark)
        .map_err(|(id, problem)| breach(id, problem))?;
    // Checked after the row, so that a row rewritten there is named rather than its head.
    if head.0 == position.seq && head.1 != position.hash {
        return Err(breach(None, head_moved(head.0, position.seq)));
    }
    Ok(start)
}

fn head_moved(head: i64, verified: i64) -> String {
    format!(
        "its head is at position {head} but position {verified} was verified: rows at its end \
         were removed or replaced"
    )
}

/// The position a chain resumes from, or the row and problem that keep it from resuming.
fn resume(
    resource: &str,
    position: &ChainPosition,
    pruned: Option<&(i64, String)>,
    stored: &HashMap<i64, (String, Option<i64>, Option<String>)>,
    mark: Option<&WitnessMark>,
) -> Result<ChainPosition, (Option<i64>, String)> {
    match pruned {
        Some((seq, hash)) if *seq > position.seq => {
            return Ok(ChainPosition {
                seq: *seq,
                hash: hash.clone(),
                // Rows after the verified one, up to the checkpoint, were pruned.
                audit_id: position.audit_id,
            });
        }
        Some((seq, hash)) if *seq == position.seq => {
            return if *hash == position.hash {
                Ok(position.clone())
            } else {
                Err((
                    None,
                    "the prune's checkpoint at the verified position has another hash".into(),
                ))
            };
        }
        _ => {}
    }
    let Some(id) = position.audit_id else {
        // Verified when no row of the chain remained: nothing to look up.
        return Ok(position.clone());
    };
    match stored.get(&id) {
        Some((row_resource, seq, hash))
            if row_resource == resource
                && *seq == Some(position.seq)
                && hash.as_deref() == Some(position.hash.as_str()) =>
        {
            Ok(position.clone())
        }
        Some(_) if position.seq == 0 => Ok(position.clone()),
        Some(_) => Err((
            Some(id),
            mark.map_or_else(
                || "the row verified at this position was changed".into(),
                WitnessMark::rewritten,
            ),
        )),
        None => Err((
            Some(id),
            match mark {
                Some(mark) => format!(
                    "the row the witness saw at this position (checkpoint of {}) is missing",
                    mark.at
                ),
                None => "the row verified at this position is missing".into(),
            },
        )),
    }
}

/// Positions up to the verified one still in the audit: what this run did not read again.
fn covered(position: &ChainPosition, pruned: Option<&(i64, String)>) -> u64 {
    let from = pruned.map_or(0, |(seq, _)| *seq);
    u64::try_from(position.seq - from).unwrap_or(0)
}

/// A row at a verified position as stored: its id, resource, position and hash (bytes).
type StoredPosition = (i64, String, Option<i64>, Option<Vec<u8>>);

/// The rows at the verified positions, by id: their resource, position and hash.
async fn verified_rows(
    tx: &mut Tx<'_>,
    verified: &VerifiedPositions,
) -> Result<HashMap<i64, (String, Option<i64>, Option<String>)>, StoreError> {
    let ids: Vec<i64> = verified.values().filter_map(|p| p.audit_id).collect();
    let mut stored = HashMap::with_capacity(ids.len());
    for chunk in ids.chunks(LOOKUP) {
        let placeholders: Vec<String> = (1..=chunk.len()).map(|n| format!("${n}")).collect();
        let sql = format!(
            "SELECT id, resource, seq, hash FROM audit WHERE id IN ({})",
            placeholders.join(", ")
        );
        // Digests are stored as bytes (migration 24); positions are compared in hex.
        let rows: Vec<StoredPosition> = on_db!(tx.conn(), conn => {
            let mut query = sqlx::query_as(&sql);
            for id in chunk {
                query = query.bind(*id);
            }
            query.fetch_all(conn).await?
        });
        stored.extend(
            rows.into_iter()
                .map(|(id, resource, seq, hash)| (id, (resource, seq, hash.map(hex::encode)))),
        );
    }
    Ok(stored)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn verified_at(resource: &str, id: i64) -> ChainVerifier {
        ChainVerifier::after(
            resource.to_owned(),
            &ChainPosition {
                seq: 1,
                hash: "00".into(),
                audit_id: Some(id),
            },
        )
    }

    fn names(chains: &[ChainVerifier]) -> Vec<&str> {
        chains.iter().map(|c| c.resource()).collect()
    }

    #[test]
    fn an_idle_chain_is_read_alone_and_the_recent_ones_in_one_pass() {
        let walks = vec![
            verified_at("recent", 1_000_000),
            verified_at("idle", 10),
            ChainVerifier::from_start("new".into(), None),
            verified_at("latest", 1_000_100),
        ];
        let (alone, together) = split_walks(walks, 1_000_200);
        assert_eq!(names(&alone), ["new", "idle"]);
        assert_eq!(names(&together), ["recent", "latest"]);
    }

    #[test]
    fn positions_far_behind_are_all_read_alone() {
        let walks = vec![verified_at("a", 10), verified_at("b", 20)];
        let (alone, together) = split_walks(walks, 10_000_000);
        assert_eq!(names(&alone), ["a", "b"]);
        assert!(together.is_empty());
    }
}
