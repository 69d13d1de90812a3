//! `bench --fill N`: the bench's database filled with N audit rows before any load, as the
//! plain fence's writers would have left them over `--fill-span`: their resources
//! (`bench/N`), bodies and stale share; each resource's generations rising to the writers' own
//! (so that a load afterwards writes as the current owner); every row chained onto its
//! resource's chain, continuing from its head; the fence state and ownership overlaps the daemon
//! would have recorded. Rows are decided and hashed on a blocking thread while the previous
//! chunk is being stored (`Store::fill_chunk`).

use super::load::{body_of, PLAIN_GENERATION, PLAIN_NAMESPACE};
use crate::domain::chain::row_hash;
use crate::domain::fence::stale_detail;
use crate::domain::write::sha256_hex;
use crate::domain::{AuditEntry, Outcome};
use crate::store::{
    FillChunk, FillHead, FillOverlap, FillResource, FillRow, FillStart, Store, StoreOptions,
};
use anyhow::Context;
use bytes::Bytes;
use chrono::DateTime;
use serde::Serialize;
use std::collections::HashMap;
use std::time::{Duration, Instant};

/// Rows per transaction: large enough that a commit's cost is spread thin, small enough that a
/// chunk in memory (and SQLite's JSON of it) stays some tens of megabytes.
const CHUNK_ROWS: usize = 50_000;
/// About this many rows of a resource per owner: a 1 M-row fill over 1,000 resources sees each
/// change hands twice.
const ROWS_PER_TERM: u64 = 500;

/// What to fill.
#[derive(Debug, Clone)]
pub struct FillSpec {
    pub rows: u64,
    pub resources: usize,
    pub span: Duration,
    pub stale_fraction: f64,
    /// The writers whose bodies the rows carry.
    pub clients: usize,
}

/// What the fill wrote.
#[derive(Debug, Clone, Serialize)]
pub struct FillReport {
    pub rows: u64,
    pub resources: usize,
    pub stale: u64,
    /// Overlap rows written (opened, continued or closed).
    pub overlaps: u64,
    pub seconds: f64,
    pub rows_per_second: f64,
}

/// Fills the database at `url`.
pub async fn fill(url: &str, spec: &FillSpec) -> anyhow::Result<FillReport> {
    let began = Instant::now();
    let store = Store::open(
        url,
        &StoreOptions {
            max_connections: 2,
            ..StoreOptions::default()
        },
    )
    .await
    .context("failed to open the database to fill")?;
    let keys: Vec<String> = (0..spec.resources.max(1))
        .map(|r| format!("{PLAIN_NAMESPACE}/{r}"))
        .collect();
    let start = store.fill_start(&keys).await?;
    let now_us = store.clock().now_us();
    let span_us = i64::try_from(spec.span.as_micros()).unwrap_or(i64::MAX);
    // After the newest row, so that ids keep rising with time: a fill on top of a recent one
    // spreads its rows over what is left of the span.
    let from_us = now_us
        .saturating_sub(span_us)
        .max(start.newest_at_us.map_or(i64::MIN, |newest| newest + 1))
        .min(now_us);
    store
        .ensure_audit_partitions_between(from_us, now_us)
        .await
        .context("failed to make the audit's partitions for the filled days")?;
    let mut generator = Generator::new(spec, keys, start, from_us, now_us);
    let (sender, mut chunks) = tokio::sync::mpsc::channel::<FillChunk>(1);
    let producing = tokio::task::spawn_blocking(move || {
        while let Some(chunk) = generator.next_chunk() {
            if sender.blocking_send(chunk).is_err() {
                break;
            }
        }
        generator
    });
    let mut stored = Ok(());
    while let Some(chunk) = chunks.recv().await {
        if let Err(error) = store.fill_chunk(&chunk).await {
            stored = Err(error);
            break;
        }
    }
    drop(chunks);
    let generator = producing.await.context("the fill's row generator failed")?;
    if stored.is_ok() {
        stored = store.fill_finish().await;
    }
    store.close().await;
    stored.context("failed to store the filled rows")?;
    let seconds = began.elapsed().as_secs_f64();
    Ok(FillReport {
        rows: generator.emitted,
        resources: generator.resources.len(),
        stale: generator.stale,
        overlaps: generator.overlaps,
        seconds,
        rows_per_second: generator.emitted as f64 / seconds.max(f64::EPSILON),
    })
}

/// `a / b` rounded up, for positive numbers.
fn ceil_div(a: i64, b: i64) -> i64 {
    (a + b - 1) / b.max(1)
}

/// A resource as the fill has it so far.
struct Resource {
    key: String,
    highest_token: i64,
    revision: i64,
    head: (i64, String),
    written: bool,
    /// Its owners' generations, one per term, rising to the writers'.
    generations: Vec<i64>,
    /// Where its terms change, shifted per resource so that owners do not all change at once.
    phase: f64,
}

/// What a chunk did to a resource.
struct Touched {
    observed: Option<(i64, String)>,
    /// The last accepted write's client and time.
    accepted: Option<(usize, i64)>,
}

struct Generator {
    rows: u64,
    emitted: u64,
    stale: u64,
    overlaps: u64,
    from_us: i64,
    now_us: i64,
    stale_fraction: f64,
    resources: Vec<Resource>,
    bodies: Vec<(Bytes, String)>,
    rng: fastrand::Rng,
    /// Open overlaps by resource and stale generation.
    open: HashMap<(usize, i64), FillOverlap>,
    quiet_us: i64,
}

impl Generator {
    fn new(
        spec: &FillSpec,
        keys: Vec<String>,
        start: FillStart,
        from_us: i64,
        now_us: i64,
    ) -> Self {
        let mut rng = fastrand::Rng::with_seed(0x0f11);
        let per_resource = spec.rows / keys.len().max(1) as u64;
        let terms = (per_resource / ROWS_PER_TERM).max(1) as i64;
        let mut heads = start.heads;
        let resources: Vec<Resource> = keys
            .into_iter()
            .map(|key| {
                let head = heads.remove(&key).unwrap_or(FillHead {
                    highest_token: 0,
                    revision: 0,
                    chain_seq: 0,
                    chain_hash: crate::domain::chain::GENESIS.to_owned(),
                    written: false,
                });
                let from = head.highest_token;
                let generations = (1..=terms)
                    .map(|term| match from >= PLAIN_GENERATION {
                        true => from,
                        false => from + ceil_div((PLAIN_GENERATION - from) * term, terms),
                    })
                    .collect();
                Resource {
                    key,
                    highest_token: head.highest_token,
                    revision: head.revision,
                    head: (head.chain_seq, head.chain_hash),
                    written: head.written,
                    generations,
                    phase: rng.f64(),
                }
            })
            .collect();
        let index_of: HashMap<String, usize> = resources
            .iter()
            .enumerate()
            .map(|(index, resource)| (resource.key.clone(), index))
            .collect();
        let open = start
            .open_overlaps
            .into_iter()
            .filter_map(|overlap| {
                let index = *index_of.get(&overlap.resource)?;
                Some(((index, overlap.stale_token), overlap))
            })
            .collect();
        let bodies = (0..spec.clients.max(1))
            .map(|client| {
                let body = body_of(client);
                let digest = sha256_hex(body.as_bytes());
                (Bytes::from(body), digest)
            })
            .collect();
        Self {
            rows: spec.rows,
            emitted: 0,
            stale: 0,
            overlaps: 0,
            from_us,
            now_us,
            stale_fraction: spec.stale_fraction,
            resources,
            bodies,
            rng,
            open,
            quiet_us: i64::try_from(crate::live::LiveConfig::default().overlap_quiet.as_micros())
                .unwrap_or(i64::MAX),
        }
    }

    /// The row `i`'s time: evenly spread after `from_us`, the last one now.
    fn at_us(&self, i: u64) -> i64 {
        let width = i128::from(self.now_us - self.from_us);
        let offset = width * i128::from(i + 1) / i128::from(self.rows.max(1));
        self.from_us + i64::try_from(offset).unwrap_or(0)
    }

    /// The next chunk's rows and what they change; `None` when every row was emitted.
    fn next_chunk(&mut self) -> Option<FillChunk> {
        if self.emitted >= self.rows {
            return None;
        }
        let mut chunk = FillChunk {
            rows: Vec::with_capacity(CHUNK_ROWS),
            ..FillChunk::default()
        };
        let mut touched: HashMap<usize, Touched> = HashMap::new();
        let mut last_at = self.from_us;
        while self.emitted < self.rows && chunk.rows.len() < CHUNK_ROWS {
            let at_us = self.at_us(self.emitted);
            last_at = at_us;
            let index = self.rng.usize(..self.resources.len());
            let client = self.rng.usize(..self.bodies.len());
            let stale_roll = self.rng.f64() < self.stale_fraction;
            let progress =
                (at_us - self.from_us) as f64 / (self.now_us - self.from_us).max(1) as f64;
            let resource = &mut self.resources[index];
            let terms = resource.generations.len();
            let term = ((progress * terms as f64 + resource.phase) as usize).min(terms - 1);
            let generation = resource.generations[term];
            let seen = touched.entry(index).or_insert_with(|| Touched {
                observed: resource.written.then(|| resource.head.clone()),
                accepted: None,
            });
            // A new owner's first write is accepted; after it, the stale share is the previous
            // owner's (one generation below), as the load's writers send.
            let stale = stale_roll
                && resource.written
                && resource.highest_token >= generation
                && resource.highest_token > 1;
            let (outcome, token, detail) = if stale {
                let token = resource.highest_token - 1;
                (
                    Outcome::Stale,
                    token,
                    Some(stale_detail(token, resource.highest_token)),
                )
            } else {
                resource.highest_token = resource.highest_token.max(generation);
                resource.revision += 1;
                resource.written = true;
                seen.accepted = Some((client, at_us));
                (Outcome::Accepted, resource.highest_token, None)
            };
            let (body, digest) = &self.bodies[client];
            let entry = AuditEntry {
                id: 0,
                at: DateTime::from_timestamp_micros(at_us).unwrap_or_default(),
                resource: resource.key.clone(),
                outcome,
                token: Some(token),
                highest_token: resource.highest_token,
                revision: resource.revision,
                idempotency_key: None,
                expected_revision: None,
                owner: None,
                lease: None,
                body_sha256: Some(digest.clone()),
                body_len: i64::try_from(body.len()).ok(),
                detail,
                caller: None,
                source: None,
            };
            let seq = resource.head.0 + 1;
            let hash = row_hash(&entry, seq, &resource.head.1);
            let prev_hash = std::mem::replace(&mut resource.head.1, hash.clone());
            resource.head.0 = seq;
            let superseding = resource.highest_token;
            chunk.rows.push(FillRow {
                entry,
                seq,
                prev_hash,
                hash,
            });
            if stale {
                self.stale += 1;
                self.sighted(index, token, superseding, at_us, &mut chunk.overlaps);
            }
            self.emitted += 1;
        }
        let finished = self.emitted >= self.rows;
        self.close_quiet(
            if finished { self.now_us } else { last_at },
            &mut chunk.overlaps,
        );
        if finished {
            // Still open at the end: the daemon closes them once quiet.
            chunk
                .overlaps
                .extend(self.open.drain().map(|(_, overlap)| overlap));
        }
        for (index, seen) in touched {
            let resource = &self.resources[index];
            chunk.resources.push(FillResource {
                key: resource.key.clone(),
                highest_token: resource.highest_token,
                revision: resource.revision,
                accepted: seen
                    .accepted
                    .map(|(client, at)| (self.bodies[client].0.clone(), at)),
                chain_seq: resource.head.0,
                chain_hash: resource.head.1.clone(),
                observed: seen.observed,
            });
        }
        // One key order in every transaction.
        chunk.resources.sort_unstable_by(|a, b| a.key.cmp(&b.key));
        self.overlaps += chunk.overlaps.len() as u64;
        Some(chunk)
    }

    /// A stale write at `at_us`: it grows the overlap of its generation if that is still open,
    /// else opens one, as the write path records it.
    fn sighted(
        &mut self,
        index: usize,
        stale_token: i64,
        superseding_token: i64,
        at_us: i64,
        closed: &mut Vec<FillOverlap>,
    ) {
        let key = (index, stale_token);
        if let Some(open) = self.open.get_mut(&key) {
            if at_us - open.last_seen_us <= self.quiet_us {
                if superseding_token > open.superseding_token {
                    open.superseding_token = superseding_token;
                    open.superseding_owner = None;
                }
                open.last_seen_us = at_us;
                open.rejected_writes += 1;
                return;
            }
            if let Some(mut quiet) = self.open.remove(&key) {
                quiet.closed_at_us = Some(quiet.last_seen_us + self.quiet_us);
                closed.push(quiet);
            }
        }
        self.open.insert(
            key,
            FillOverlap {
                id: None,
                resource: self.resources[index].key.clone(),
                stale_token,
                superseding_token,
                stale_owner: None,
                superseding_owner: None,
                first_seen_us: at_us,
                last_seen_us: at_us,
                rejected_writes: 1,
                closed_at_us: None,
            },
        );
    }

    /// Closes the overlaps quiet at `now_us`, as the daemon's sweep does.
    fn close_quiet(&mut self, now_us: i64, closed: &mut Vec<FillOverlap>) {
        let quiet_us = self.quiet_us;
        let cutoff = now_us.saturating_sub(quiet_us);
        let keys: Vec<(usize, i64)> = self
            .open
            .iter()
            .filter(|(_, overlap)| overlap.last_seen_us < cutoff)
            .map(|(key, _)| *key)
            .collect();
        for key in keys {
            if let Some(mut quiet) = self.open.remove(&key) {
                quiet.closed_at_us = Some(quiet.last_seen_us + quiet_us);
                closed.push(quiet);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::chain::GENESIS;

    fn spec(rows: u64) -> FillSpec {
        FillSpec {
            rows,
            resources: 10,
            span: Duration::from_secs(86_400),
            stale_fraction: 0.05,
            clients: 4,
        }
    }

    #[test]
    fn rows_chain_rise_and_end_at_the_writers_generation() {
        let keys: Vec<String> = (0..10).map(|r| format!("bench/{r}")).collect();
        let mut generator = Generator::new(
            &spec(20_000),
            keys,
            FillStart::default(),
            1_000_000,
            1_000_000 + 86_400_000_000,
        );
        let mut rows = Vec::new();
        while let Some(chunk) = generator.next_chunk() {
            rows.extend(chunk.rows);
        }
        assert_eq!(rows.len(), 20_000);
        let stale = rows
            .iter()
            .filter(|r| r.entry.outcome == Outcome::Stale)
            .count();
        assert!((700..1_300).contains(&stale), "{stale}");
        let mut heads: HashMap<&str, (i64, String, i64)> = HashMap::new();
        let mut last_at = 0;
        for row in &rows {
            assert!(row.entry.at.timestamp_micros() >= last_at);
            last_at = row.entry.at.timestamp_micros();
            let head = heads
                .entry(&row.entry.resource)
                .or_insert((0, GENESIS.to_owned(), 0));
            assert_eq!((row.seq, &row.prev_hash), (head.0 + 1, &head.1));
            assert_eq!(row_hash(&row.entry, row.seq, &row.prev_hash), row.hash);
            assert!(row.entry.highest_token >= head.2, "generations never fall");
            *head = (row.seq, row.hash.clone(), row.entry.highest_token);
        }
        // 2,000 rows a resource: four owners, the last the writers'.
        assert!(heads.values().all(|head| head.2 == PLAIN_GENERATION));
        assert!(rows.iter().any(|r| r.entry.highest_token == 250));
    }
}
