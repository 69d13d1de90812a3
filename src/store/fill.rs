//! `bench --fill`: audit rows already decided and chained (`commands::bench::fill`) stored in
//! large transactions, with the fence state and the overlaps they imply, so that the audit's
//! costs can be measured at millions of rows. The audit rows go through the write path's own
//! encoding and statement (`batch::rows::AuditRow`, `INSERT_AUDIT_ALONE`,
//! `insert_audit_alone`): a change to how a row is stored changes the fill with it.

use super::batch::pg_application::{bind_audit_alone, insert_audit_alone};
use super::batch::rows::{to_json, AuditRow};
use super::batch::shared::Link;
use super::batch::sqlite::INSERT_AUDIT_ALONE;
use super::error::corrupt;
use super::native::{on_db, Conn, Native};
use super::tx::begin_audited_on;
use super::{Store, StoreError};
use crate::domain::AuditEntry;
use serde::Serialize;
use sqlx::{Connection, Executor, Row};
use std::collections::HashMap;

/// A resource's fence state and chain head when the fill starts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FillHead {
    pub highest_token: i64,
    pub revision: i64,
    pub chain_seq: i64,
    pub chain_hash: String,
    /// Whether it has a row in `resources` (else its head, if any, is in `chain_heads`).
    pub written: bool,
}

/// What the fill continues from.
#[derive(Debug, Clone, Default)]
pub struct FillStart {
    /// The named resources that have a chain already.
    pub heads: HashMap<String, FillHead>,
    /// This daemon's open overlaps on the named resources.
    pub open_overlaps: Vec<FillOverlap>,
    /// The newest audit row's time, if the audit has rows.
    pub newest_at_us: Option<i64>,
}

/// An audit row with its place in its resource's chain.
#[derive(Debug, Clone)]
pub struct FillRow {
    pub entry: AuditEntry,
    pub seq: i64,
    pub prev_hash: String,
    pub hash: String,
}

/// A row of `ownership_overlaps` as the daemon would have left it: `id` when it exists already
/// (an open overlap the fill continued or closed), `closed_at_us` when closed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FillOverlap {
    pub id: Option<i64>,
    pub resource: String,
    pub stale_token: i64,
    pub superseding_token: i64,
    pub stale_owner: Option<String>,
    pub superseding_owner: Option<String>,
    pub first_seen_us: i64,
    pub last_seen_us: i64,
    pub rejected_writes: i64,
    pub closed_at_us: Option<i64>,
}

/// A resource as a chunk leaves it.
#[derive(Debug, Clone)]
pub struct FillResource {
    pub key: String,
    pub highest_token: i64,
    pub revision: i64,
    /// The value of the chunk's last accepted write here and its time; `None` if the chunk
    /// accepted none (only the chain's head moves).
    pub accepted: Option<(bytes::Bytes, i64)>,
    pub chain_seq: i64,
    pub chain_hash: String,
    /// Its chain head when the chunk started, checked before it moves; `None` when the chunk
    /// creates its row.
    pub observed: Option<(i64, String)>,
}

/// One transaction of the fill.
#[derive(Debug, Clone, Default)]
pub struct FillChunk {
    pub rows: Vec<FillRow>,
    pub resources: Vec<FillResource>,
    pub overlaps: Vec<FillOverlap>,
}

/// A new overlap row, for SQLite's `json_each`.
#[derive(Serialize)]
struct OverlapInsert<'a> {
    resource: &'a str,
    stale_token: i64,
    superseding_token: i64,
    stale_owner: Option<&'a str>,
    superseding_owner: Option<&'a str>,
    first_seen_us: i64,
    last_seen_us: i64,
    rejected_writes: i64,
    state: &'static str,
    closed_at_us: Option<i64>,
    updated_at_us: i64,
}

impl<'a> OverlapInsert<'a> {
    fn of(overlap: &'a FillOverlap) -> Self {
        let (state, updated_at_us) = match overlap.closed_at_us {
            Some(closed) => ("closed", closed),
            None => ("open", overlap.last_seen_us),
        };
        Self {
            resource: &overlap.resource,
            stale_token: overlap.stale_token,
            superseding_token: overlap.superseding_token,
            stale_owner: overlap.stale_owner.as_deref(),
            superseding_owner: overlap.superseding_owner.as_deref(),
            first_seen_us: overlap.first_seen_us,
            last_seen_us: overlap.last_seen_us,
            rejected_writes: overlap.rejected_writes,
            state,
            closed_at_us: overlap.closed_at_us,
            updated_at_us,
        }
    }
}

/// The columns of a new overlap row, in `OverlapInsert`'s order.
macro_rules! overlap_columns {
    () => {
        "resource, stale_token, superseding_token, stale_owner, superseding_owner, \
         first_seen_us, last_seen_us, rejected_writes, state, closed_at_us, updated_at_us"
    };
}

const SQLITE_INSERT_OVERLAPS: &str = concat!(
    "INSERT INTO ownership_overlaps (",
    overlap_columns!(),
    ") SELECT value ->> 'resource', value ->> 'stale_token', value ->> 'superseding_token', \
       value ->> 'stale_owner', value ->> 'superseding_owner', value ->> 'first_seen_us', \
       value ->> 'last_seen_us', value ->> 'rejected_writes', value ->> 'state', \
       value ->> 'closed_at_us', value ->> 'updated_at_us' \
     FROM json_each($1)"
);

const PG_INSERT_OVERLAPS: &str = concat!(
    "INSERT INTO ownership_overlaps (",
    overlap_columns!(),
    ") SELECT * FROM UNNEST($1::text[], $2::bigint[], $3::bigint[], $4::text[], $5::text[], \
       $6::bigint[], $7::bigint[], $8::bigint[], $9::text[], $10::bigint[], $11::bigint[])"
);

const UPDATE_OVERLAP: &str = "UPDATE ownership_overlaps SET superseding_token = $2, \
     stale_owner = $3, superseding_owner = $4, last_seen_us = $5, rejected_writes = $6, \
     state = $7, closed_at_us = $8, updated_at_us = $9 WHERE id = $1 AND state = 'open'";

/// A resource's row moved on from the head the chunk started from; the value's columns only
/// where the chunk accepted a write ($4 not null).
const UPDATE_RESOURCE: &str = "UPDATE resources SET highest_token = $2, revision = $3, \
     value = COALESCE($4, value), \
     content_type = CASE WHEN $4 IS NULL THEN content_type ELSE NULL END, \
     updated_at_us = COALESCE($5, updated_at_us), \
     highest_owner = CASE WHEN $4 IS NULL THEN highest_owner ELSE NULL END, \
     chain_seq = $6, chain_hash = $7 \
     WHERE key = $1 AND chain_seq = $8 AND chain_hash = $9";

const INSERT_RESOURCE: &str = "INSERT INTO resources (key, highest_token, revision, value, \
     content_type, updated_at_us, highest_owner, chain_seq, chain_hash) \
     VALUES ($1, $2, $3, $4, NULL, $5, NULL, $6, $7) ON CONFLICT (key) DO NOTHING";

/// A created resource's head moves into its row, as the write path marks it (see the
/// migration `chain_heads_in_resources`).
const MARK_HEAD_MOVED: &str =
    "UPDATE chain_heads SET seq = -1, hash = '' WHERE resource = $1 AND seq >= 0";

impl Store {
    /// The fence state, chain heads and open overlaps of `keys`, and the newest row's time.
    pub async fn fill_start(&self, keys: &[String]) -> Result<FillStart, StoreError> {
        let wanted: std::collections::HashSet<&str> = keys.iter().map(String::as_str).collect();
        let mut start = FillStart::default();
        // Every resource and head, filtered here: the bench's resources are most of them.
        let resources: Vec<(String, i64, i64, i64, String)> = on_db!(self.reader(), pool =>
            sqlx::query_as("SELECT key, highest_token, revision, chain_seq, chain_hash \
                            FROM resources")
            .fetch_all(pool).await?);
        for (key, highest_token, revision, chain_seq, chain_hash) in resources {
            if wanted.contains(key.as_str()) {
                let head = FillHead {
                    highest_token,
                    revision,
                    chain_seq,
                    chain_hash,
                    written: true,
                };
                start.heads.insert(key, head);
            }
        }
        let unwritten: Vec<(String, i64, String)> = on_db!(self.reader(), pool =>
            sqlx::query_as("SELECT resource, seq, hash FROM chain_heads WHERE seq >= 0")
            .fetch_all(pool).await?);
        for (key, chain_seq, chain_hash) in unwritten {
            if wanted.contains(key.as_str()) && !start.heads.contains_key(&key) {
                let head = FillHead {
                    highest_token: 0,
                    revision: 0,
                    chain_seq,
                    chain_hash,
                    written: false,
                };
                start.heads.insert(key, head);
            }
        }
        start.open_overlaps = on_db!(self.reader(), pool => sqlx::query(
            "SELECT id, resource, stale_token, superseding_token, stale_owner, \
             superseding_owner, first_seen_us, last_seen_us, rejected_writes \
             FROM ownership_overlaps WHERE state = 'open' AND source = ''")
            .fetch_all(pool).await?.iter().map(|row| Ok::<_, sqlx::Error>(FillOverlap {
                id: Some(row.try_get("id")?),
                resource: row.try_get("resource")?,
                stale_token: row.try_get("stale_token")?,
                superseding_token: row.try_get("superseding_token")?,
                stale_owner: row.try_get("stale_owner")?,
                superseding_owner: row.try_get("superseding_owner")?,
                first_seen_us: row.try_get("first_seen_us")?,
                last_seen_us: row.try_get("last_seen_us")?,
                rejected_writes: row.try_get("rejected_writes")?,
                closed_at_us: None,
            })).collect::<Result<Vec<_>, _>>()?);
        start
            .open_overlaps
            .retain(|overlap| wanted.contains(overlap.resource.as_str()));
        start.newest_at_us = on_db!(self.reader(), pool =>
            sqlx::query_scalar("SELECT max(at_us) FROM audit").fetch_one(pool).await?);
        Ok(start)
    }

    /// Leaves the filled database as a daemon that had written those rows over time would: on
    /// SQLite the WAL checkpointed into the file (a daemon checkpoints as it goes; a fill's
    /// gigabytes of WAL would otherwise be copied back under the first load that follows), on
    /// PostgreSQL the planner's statistics taken (`ANALYZE`), as autovacuum would have.
    pub async fn fill_finish(&self) -> Result<(), StoreError> {
        match self.writer() {
            Native::Sqlite(pool) => {
                sqlx::query("PRAGMA wal_checkpoint(TRUNCATE)")
                    .execute(pool)
                    .await?;
            }
            Native::Postgres(pool) => {
                sqlx::query("ANALYZE audit, resources, ownership_overlaps")
                    .execute(pool)
                    .await?;
            }
        }
        Ok(())
    }

    /// Stores one chunk in one transaction: its audit rows, its resources' new state (each
    /// checked against the head the chunk started from, so a write that came between fails the
    /// fill rather than fork a chain) and its overlaps.
    pub async fn fill_chunk(&self, chunk: &FillChunk) -> Result<(), StoreError> {
        let links: Vec<Link> = chunk
            .rows
            .iter()
            .map(|row| Link {
                seq: row.seq,
                prev_hash: row.prev_hash.clone(),
                hash: row.hash.clone(),
            })
            .collect();
        let audit: Vec<AuditRow<'_>> = chunk
            .rows
            .iter()
            .zip(&links)
            .map(|(row, link)| AuditRow::new(&row.entry, link, None))
            .collect();
        match self.writer() {
            Native::Sqlite(pool) => {
                let mut conn = pool.acquire().await?;
                // NORMAL, not FULL: in WAL mode a crash still leaves a consistent database,
                // only the last commits may be lost, and a fill is redone rather than trusted.
                // The writer's release puts FULL back (`connect::SQLITE_WRITER_RELEASE`).
                conn.execute("PRAGMA synchronous = NORMAL").await?;
                let mut tx = conn.begin().await?;
                if !audit.is_empty() {
                    sqlx::query(INSERT_AUDIT_ALONE)
                        .bind(to_json(&audit)?)
                        .execute(&mut *tx)
                        .await?;
                }
                let new: Vec<OverlapInsert<'_>> = chunk
                    .overlaps
                    .iter()
                    .filter(|overlap| overlap.id.is_none())
                    .map(OverlapInsert::of)
                    .collect();
                if !new.is_empty() {
                    sqlx::query(SQLITE_INSERT_OVERLAPS)
                        .bind(to_json(&new)?)
                        .execute(&mut *tx)
                        .await?;
                }
                store_state(Native::Sqlite(&mut *tx), chunk).await?;
                tx.commit().await?;
            }
            Native::Postgres(pool) => {
                let mut conn = pool.acquire().await?;
                let mut tx = begin_audited_on(&mut conn).await?;
                if !audit.is_empty() {
                    bind_audit_alone(&audit, sqlx::query(&insert_audit_alone()))
                        .execute(&mut *tx)
                        .await?;
                }
                let new: Vec<OverlapInsert<'_>> = chunk
                    .overlaps
                    .iter()
                    .filter(|overlap| overlap.id.is_none())
                    .map(OverlapInsert::of)
                    .collect();
                if !new.is_empty() {
                    let column = |f: fn(&OverlapInsert<'_>) -> i64| -> Vec<i64> {
                        new.iter().map(f).collect()
                    };
                    sqlx::query(PG_INSERT_OVERLAPS)
                        .bind(new.iter().map(|o| o.resource).collect::<Vec<_>>())
                        .bind(column(|o| o.stale_token))
                        .bind(column(|o| o.superseding_token))
                        .bind(new.iter().map(|o| o.stale_owner).collect::<Vec<_>>())
                        .bind(new.iter().map(|o| o.superseding_owner).collect::<Vec<_>>())
                        .bind(column(|o| o.first_seen_us))
                        .bind(column(|o| o.last_seen_us))
                        .bind(column(|o| o.rejected_writes))
                        .bind(new.iter().map(|o| o.state).collect::<Vec<_>>())
                        .bind(new.iter().map(|o| o.closed_at_us).collect::<Vec<_>>())
                        .bind(column(|o| o.updated_at_us))
                        .execute(&mut *tx)
                        .await?;
                }
                store_state(Native::Postgres(&mut *tx), chunk).await?;
                tx.commit().await?;
            }
        }
        Ok(())
    }
}

/// The chunk's resources and the overlaps it changed that exist already, a statement each:
/// at most one per resource.
async fn store_state(mut conn: Conn<'_>, chunk: &FillChunk) -> Result<(), StoreError> {
    for resource in &chunk.resources {
        let value = resource.accepted.as_ref().map(|(value, _)| value.to_vec());
        let at_us = resource.accepted.as_ref().map(|(_, at)| *at);
        let changed = match &resource.observed {
            Some((seq, hash)) => on_db!(conn.reborrow(), c => sqlx::query(UPDATE_RESOURCE)
                .bind(&resource.key)
                .bind(resource.highest_token)
                .bind(resource.revision)
                .bind(value)
                .bind(at_us)
                .bind(resource.chain_seq)
                .bind(&resource.chain_hash)
                .bind(*seq)
                .bind(hash)
                .execute(c).await?.rows_affected()),
            None => {
                let value =
                    value.ok_or_else(|| corrupt("a fill created a resource without a value"))?;
                let inserted = on_db!(conn.reborrow(), c => sqlx::query(INSERT_RESOURCE)
                    .bind(&resource.key)
                    .bind(resource.highest_token)
                    .bind(resource.revision)
                    .bind(value)
                    .bind(at_us)
                    .bind(resource.chain_seq)
                    .bind(&resource.chain_hash)
                    .execute(c).await?.rows_affected());
                on_db!(conn.reborrow(), c => sqlx::query(MARK_HEAD_MOVED)
                    .bind(&resource.key).execute(c).await.map(drop)?);
                inserted
            }
        };
        if changed != 1 {
            return Err(corrupt(format!(
                "resource {} changed while it was being filled: fill a database no daemon is \
                 writing to",
                resource.key
            )));
        }
    }
    for overlap in chunk.overlaps.iter().filter(|o| o.id.is_some()) {
        let row = OverlapInsert::of(overlap);
        on_db!(conn.reborrow(), c => sqlx::query(UPDATE_OVERLAP)
            .bind(overlap.id)
            .bind(row.superseding_token)
            .bind(row.stale_owner)
            .bind(row.superseding_owner)
            .bind(row.last_seen_us)
            .bind(row.rejected_writes)
            .bind(row.state)
            .bind(row.closed_at_us)
            .bind(row.updated_at_us)
            .execute(c).await.map(drop)?);
    }
    Ok(())
}
