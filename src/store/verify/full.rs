//! Every row of every chain, checked in parallel: one reader streams the audit in id order (the
//! table's own order, so the database reads it front to back instead of seeking through an
//! index) and hands each row to the worker that owns its resource's chain; hashing is the cost,
//! and it is spread over the available cores (docs/performance.md, "the audit tools"). On
//! SQLite the reader is the limit, so SQLite builds each row's hashed encoding itself
//! (`rows::encoded`); the rare row whose encoding does not match is read again whole at the end
//! and checked as `row_hash` encodes it (`settle`).

use super::rows::{self, ReadRow};
use super::walk::{ChainVerifier, WitnessMark};
use super::{Anchors, ChainTable, VerifyReport};
use crate::store::audit_query::{record, AuditRecord};
use crate::store::native::{on_db, row_reader, Native, ReadsRow, RowReader, Tx};
use crate::store::StoreError;
use futures_util::TryStreamExt;
use std::collections::HashMap;
use std::hash::BuildHasher;
use std::sync::Arc;
use tokio::sync::mpsc;

/// Rows handed to a worker at a time: enough to make the hand-over cheap per row.
const BATCH: usize = 512;
/// Batches queued per worker before the reader waits for it.
const QUEUED: usize = 8;

type Chains = HashMap<String, ChainVerifier>;
/// Positions a witness saw, by resource (empty without a witness).
pub(super) type Marks = HashMap<String, WitnessMark>;

pub(super) async fn verify(
    tx: &mut Tx<'_>,
    anchors: &Anchors,
    marks: Arc<Marks>,
) -> Result<VerifyReport, StoreError> {
    let workers = std::thread::available_parallelism().map_or(1, |n| n.get());
    let checkpoints = Arc::new(anchors.checkpoints.clone());
    let mut queues = Vec::with_capacity(workers);
    let mut handles = Vec::with_capacity(workers);
    for _ in 0..workers {
        let (send, receive) = mpsc::channel::<Vec<ReadRow>>(QUEUED);
        let checkpoints = checkpoints.clone();
        let marks = marks.clone();
        handles.push(tokio::task::spawn_blocking(move || {
            walk_batches(receive, &checkpoints, &marks)
        }));
        queues.push((send, Vec::with_capacity(BATCH)));
    }
    let read = read_rows(tx, &mut queues).await;
    drop(queues);
    let mut chains = Chains::new();
    for handle in handles {
        let walked = handle
            .await
            .map_err(|e| StoreError::Invariant(format!("a verify worker failed: {e}")))?;
        chains.extend(walked);
    }
    read?;
    let rechecked = settle(tx, &mut chains).await?;
    let mut report = VerifyReport {
        full: true,
        rechecked,
        ..VerifyReport::default()
    };
    for (resource, chain) in chains {
        report.add(chain.finish(anchors.heads.get(&resource)));
    }
    // Chains whose rows were all removed (or pruned): held to their heads all the same.
    for (resource, head) in &anchors.heads {
        if !report.positions.contains_key(resource)
            && !report.breaches.iter().any(|b| &b.resource == resource)
        {
            let empty =
                ChainVerifier::from_start(resource.clone(), anchors.checkpoints.get(resource))
                    .witnessed(marks.get(resource).cloned());
            let walked = empty.finish(Some(head));
            // Not read by this run: only its end counts.
            match walked.end {
                super::walk::ChainEnd::Verified(position) => {
                    report.positions.insert(walked.resource, position);
                }
                super::walk::ChainEnd::Broken(breach) => report.breaches.push(breach),
            }
        }
    }
    Ok(report)
}

/// Streams the audit in id order into the workers' queues, a resource always to the same one.
async fn read_rows(
    tx: &mut Tx<'_>,
    queues: &mut [(mpsc::Sender<Vec<ReadRow>>, Vec<ReadRow>)],
) -> Result<(), StoreError> {
    let shard = std::collections::hash_map::RandomState::new();
    let (columns, reader) = match tx {
        Native::Sqlite(_) => (
            rows::SQLITE_ENCODED_COLUMNS.to_owned(),
            RowReader {
                sqlite: rows::encoded,
                postgres: rows::with_fields,
            },
        ),
        Native::Postgres(_) => (rows::fields_columns(), row_reader!(rows::with_fields)),
    };
    let sql = format!("SELECT {columns} FROM audit ORDER BY id");
    let count = queues.len();
    on_db!(tx.conn(), conn => {
        let mut stream = sqlx::query(&sql).fetch(conn);
        while let Some(row) = stream.try_next().await? {
            let row = reader.read(&row)?;
            // `count` is at most the number of cores, so the remainder fits in a usize.
            let index = usize::try_from(shard.hash_one(&row.resource) % count as u64)
                .unwrap_or(0);
            let (send, batch) = &mut queues[index];
            batch.push(row);
            if batch.len() == BATCH {
                hand_over(send, batch).await?;
            }
        }
    });
    for (send, batch) in queues.iter_mut() {
        if !batch.is_empty() {
            hand_over(send, batch).await?;
        }
    }
    Ok(())
}

/// Reads the rows the walks doubted whole, in the run's snapshot, and settles each chain's
/// doubts with them; answers how many rows it read.
async fn settle(tx: &mut Tx<'_>, chains: &mut Chains) -> Result<u64, StoreError> {
    let doubted: Vec<i64> = chains.values().flat_map(ChainVerifier::doubted).collect();
    if doubted.is_empty() {
        return Ok(0);
    }
    let sql = format!("SELECT {} FROM audit WHERE id = $1", rows::fields_columns());
    let doubted_count = doubted.len() as u64;
    let mut whole = HashMap::with_capacity(doubted.len());
    for id in doubted {
        let found: Option<AuditRecord> = on_db!(tx.conn(), conn => sqlx::query(&sql)
            .bind(id)
            .fetch_optional(conn)
            .await?
            .map(|row| record(&row))
            .transpose()?);
        if let Some(found) = found {
            whole.insert(id, found);
        }
    }
    for chain in chains.values_mut() {
        chain.settle(&whole);
    }
    Ok(doubted_count)
}

async fn hand_over(
    send: &mpsc::Sender<Vec<ReadRow>>,
    batch: &mut Vec<ReadRow>,
) -> Result<(), StoreError> {
    let full = std::mem::replace(batch, Vec::with_capacity(BATCH));
    send.send(full)
        .await
        .map_err(|_| StoreError::Invariant("a verify worker stopped early".into()))
}

/// A worker: walks the chains of the rows it is given, each from its checkpoint if pruned.
fn walk_batches(
    mut receive: mpsc::Receiver<Vec<ReadRow>>,
    checkpoints: &ChainTable,
    marks: &Marks,
) -> Chains {
    let mut chains = Chains::new();
    while let Some(batch) = receive.blocking_recv() {
        for ReadRow { resource, row } in batch {
            match chains.get_mut(&resource) {
                Some(chain) => chain.push(row),
                None => {
                    let mut chain =
                        ChainVerifier::from_start(resource.clone(), checkpoints.get(&resource))
                            .witnessed(marks.get(&resource).cloned());
                    chain.push(row);
                    chains.insert(resource, chain);
                }
            }
        }
    }
    chains
}
