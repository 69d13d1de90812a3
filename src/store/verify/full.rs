//! Every row of every chain, checked in parallel: one reader reads the audit in id order (the
//! table's own order, so the database reads it front to back instead of seeking through an
//! index) and hands each row to the worker that owns its resource's chain; hashing is the cost,
//! and it is spread over the available cores (docs/performance.md, "the audit tools"). On
//! SQLite the reader is the limit, so SQLite builds each row's hashed encoding itself and the
//! rows come a page at a time (`pages`), every worker given each page and walking the rows of
//! its own chains; the rare row whose encoding does not match is read again whole at the end
//! and checked as `row_hash` encodes it (`settle`).

use super::pages::{self, Page, Records};
use super::rows::{self, ReadRow};
use super::walk::{ChainRow, ChainVerifier, WitnessMark};
use super::{Anchors, ChainTable, VerifyReport};
use crate::store::audit_query::{record, AuditRecord};
use crate::store::native::{on_db, row_reader, Native, ReadsRow, Tx};
use crate::store::StoreError;
use futures_util::TryStreamExt;
use std::collections::hash_map::RandomState;
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

/// What a worker is handed: rows of its chains (PostgreSQL), or a page of everyone's (SQLite).
enum Batch {
    Rows(Vec<ReadRow>),
    Page(Arc<Page>),
}

/// Which worker owns a resource's chain: the same for every row of it.
#[derive(Clone)]
struct Shards {
    hasher: RandomState,
    count: usize,
}

impl Shards {
    fn of(&self, resource: &str) -> usize {
        // `count` is at most the number of cores, so the remainder fits in a usize.
        usize::try_from(self.hasher.hash_one(resource) % self.count as u64).unwrap_or(0)
    }
}

pub(super) async fn verify(
    tx: &mut Tx<'_>,
    anchors: &Anchors,
    marks: Arc<Marks>,
) -> Result<VerifyReport, StoreError> {
    let workers = std::thread::available_parallelism().map_or(1, |n| n.get());
    let checkpoints = Arc::new(anchors.checkpoints.clone());
    let shards = Shards {
        hasher: RandomState::new(),
        count: workers,
    };
    let mut queues = Vec::with_capacity(workers);
    let mut handles = Vec::with_capacity(workers);
    for index in 0..workers {
        let (send, receive) = mpsc::channel::<Batch>(QUEUED);
        let checkpoints = checkpoints.clone();
        let marks = marks.clone();
        let shards = shards.clone();
        handles.push(tokio::task::spawn_blocking(move || {
            Worker {
                index,
                shards,
                checkpoints: &checkpoints,
                marks: &marks,
                chains: Chains::new(),
            }
            .walk(receive)
        }));
        queues.push((send, Vec::with_capacity(BATCH)));
    }
    let read = match tx {
        Native::Sqlite(tx) => read_pages(tx, &queues).await,
        Native::Postgres(_) => read_rows(tx, &shards, &mut queues).await,
    };
    drop(queues);
    let mut chains = Chains::new();
    let mut walked_all = Ok(());
    for handle in handles {
        let walked = handle
            .await
            .map_err(|e| StoreError::Invariant(format!("a verify worker failed: {e}")))?;
        match walked {
            Ok(walked) => chains.extend(walked),
            Err(e) => walked_all = Err(e),
        }
    }
    // A worker that stopped on a malformed page makes the reader fail too: its error says why.
    walked_all?;
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
    shards: &Shards,
    queues: &mut [(mpsc::Sender<Batch>, Vec<ReadRow>)],
) -> Result<(), StoreError> {
    let reader = row_reader!(rows::with_fields);
    let sql = format!("SELECT {} FROM audit ORDER BY id", rows::fields_columns());
    on_db!(tx.conn(), conn => {
        let mut stream = sqlx::query(&sql).fetch(conn);
        while let Some(row) = stream.try_next().await? {
            let row = reader.read(&row)?;
            let (send, batch) = &mut queues[shards.of(&row.resource)];
            batch.push(row);
            if batch.len() == BATCH {
                let full = std::mem::replace(batch, Vec::with_capacity(BATCH));
                hand_over(send, Batch::Rows(full)).await?;
            }
        }
    });
    for (send, batch) in queues.iter_mut() {
        if !batch.is_empty() {
            hand_over(send, Batch::Rows(std::mem::take(batch))).await?;
        }
    }
    Ok(())
}

/// Reads the audit a page at a time (SQLite), every page to every worker.
async fn read_pages(
    tx: &mut sqlx::Transaction<'_, sqlx::Sqlite>,
    queues: &[(mpsc::Sender<Batch>, Vec<ReadRow>)],
) -> Result<(), StoreError> {
    let mut after = i64::MIN;
    while let Some(page) = pages::read(tx, after, pages::PAGE_ROWS).await? {
        after = page.last_id;
        let last = page.rows < usize::try_from(pages::PAGE_ROWS).unwrap_or(usize::MAX);
        let page = Arc::new(page);
        for (send, _) in queues {
            hand_over(send, Batch::Page(page.clone())).await?;
        }
        if last {
            break;
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

async fn hand_over(send: &mpsc::Sender<Batch>, batch: Batch) -> Result<(), StoreError> {
    send.send(batch)
        .await
        .map_err(|_| StoreError::Invariant("a verify worker stopped early".into()))
}

/// A worker: walks the chains of the rows it is given, each from its checkpoint if pruned.
struct Worker<'a> {
    index: usize,
    shards: Shards,
    checkpoints: &'a ChainTable,
    marks: &'a Marks,
    chains: Chains,
}

impl Worker<'_> {
    fn walk(mut self, mut receive: mpsc::Receiver<Batch>) -> Result<Chains, StoreError> {
        // The last id of the pages before, which the next must follow.
        let mut last_id = None;
        while let Some(batch) = receive.blocking_recv() {
            match batch {
                Batch::Rows(rows) => {
                    for ReadRow { resource, row } in rows {
                        self.push(&resource, row);
                    }
                }
                Batch::Page(page) => {
                    let mut records = 0;
                    for record in Records::new(&page.text, last_id) {
                        let record = record?;
                        records += 1;
                        if self.shards.of(record.resource) == self.index {
                            self.push(record.resource, record.chain_row()?);
                        }
                    }
                    // A record SQLite could not build (a NULL) would be left out of the page.
                    if records != page.rows {
                        return Err(StoreError::Invariant(format!(
                            "a page of the audit read for verifying holds {records} records \
                             for {} rows",
                            page.rows
                        )));
                    }
                    last_id = Some(page.last_id);
                }
            }
        }
        Ok(self.chains)
    }

    fn push(&mut self, resource: &str, row: ChainRow) {
        match self.chains.get_mut(resource) {
            Some(chain) => chain.push(row),
            None => {
                let mut chain =
                    ChainVerifier::from_start(resource.to_owned(), self.checkpoints.get(resource))
                        .witnessed(self.marks.get(resource).cloned());
                chain.push(row);
                self.chains.insert(resource.to_owned(), chain);
            }
        }
    }
}
