//! The durable record of external locks (`authority_locks`): the highest holder generation seen
//! per lock, read before a lock service is asked (to catch one that went backwards) and
//! advanced in each write's transaction.

use super::batch::shared::{padded, placeholders};
use super::native::{on_db, Conn, Native, NativeRow};
use super::{Store, StoreError};
use crate::domain::authority::ExternalLock;
use crate::domain::lock_record::RecordedLock;
use std::collections::{BTreeMap, BTreeSet, HashMap};

/// A lock whose service answered below what was recorded.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RegressedLock {
    pub recorded: i64,
    pub observed: i64,
}

impl Store {
    /// The highest holder generation committed for `lock`; 0 when none.
    pub async fn authority_floor(&self, lock: &ExternalLock) -> Result<i64, StoreError> {
        let highest: Option<i64> = on_db!(self.reader(), pool => sqlx::query_scalar(
            "SELECT highest_holder_revision FROM authority_locks WHERE lock = $1",
        )
        .bind(lock.lease_name()).fetch_optional(pool).await?);
        Ok(highest.unwrap_or(0))
    }

    /// Marks `lock` as having gone backwards now (the `AuthorityRegressed` alert reads it).
    pub async fn record_regression(
        &self,
        lock: &ExternalLock,
        regressed: RegressedLock,
    ) -> Result<(), StoreError> {
        let now = self.clock.now_us();
        on_db!(self.writer(), pool => sqlx::query(
            "INSERT INTO authority_locks (lock, highest_holder_revision, holder_key, owner, \
             seen_at_us, regressed_at_us, regressed_revision) VALUES ($1, $2, '', NULL, $3, $3, $4) \
             ON CONFLICT (lock) DO UPDATE SET regressed_at_us = excluded.regressed_at_us, \
             regressed_revision = excluded.regressed_revision",
        )
        .bind(lock.lease_name())
        .bind(regressed.recorded)
        .bind(now)
        .bind(regressed.observed).execute(pool).await.map(drop))?;
        Ok(())
    }

    /// Locks caught going backwards since `since_us`, with the generation they answered.
    pub async fn authority_regressions(
        &self,
        since_us: i64,
    ) -> Result<Vec<(String, i64)>, StoreError> {
        let rows: Vec<(String, Option<i64>)> = on_db!(self.reader(), pool => sqlx::query_as(
            "SELECT lock, regressed_revision FROM authority_locks WHERE regressed_at_us >= $1",
        )
        .bind(since_us).fetch_all(pool).await?);
        Ok(rows
            .into_iter()
            .map(|(lock, revision)| (lock, revision.unwrap_or(0)))
            .collect())
    }
}

/// The batch's locks as recorded, locked on PostgreSQL until the batch commits so that
/// concurrent batches (of any daemon) advance each one in turn.
pub(super) async fn observe(
    mut conn: Conn<'_>,
    locks: &BTreeSet<String>,
) -> Result<HashMap<String, RecordedLock>, StoreError> {
    if locks.is_empty() {
        return Ok(HashMap::new());
    }
    let lock = match conn {
        Native::Postgres(_) => " ORDER BY lock FOR UPDATE",
        Native::Sqlite(_) => "",
    };
    let names = padded(locks.iter().map(String::as_str).collect());
    let sql = format!(
        "SELECT lock, highest_holder_revision, holder_key, owner FROM authority_locks \
         WHERE lock IN ({}){lock}",
        placeholders(1, names.len())
    );
    on_db!(conn.reborrow(), conn => {
        let mut query = sqlx::query(&sql);
        for name in names {
            query = query.bind(name);
        }
        query
            .fetch_all(conn)
            .await?
            .iter()
            .map(|row| Ok((row_lock_name(row)?, recorded_lock(row)?)))
            .collect()
    })
}

fn row_lock_name(row: &impl NativeRow) -> Result<String, StoreError> {
    Ok(row.try_get("lock")?)
}

fn recorded_lock(row: &impl NativeRow) -> Result<RecordedLock, StoreError> {
    Ok(RecordedLock {
        highest: row.try_get("highest_holder_revision")?,
        holder_key: row.try_get("holder_key")?,
        owner: row.try_get("owner")?,
        observed: Vec::new(),
    })
}

/// Writes back what the batch advanced, and the holders it saw, returning how many rows it
/// changed. Never lowers a record: a row inserted by a concurrent transaction since the
/// observation keeps the higher generation.
pub(super) async fn store(
    mut conn: Conn<'_>,
    changed: &HashMap<String, RecordedLock>,
    now: i64,
) -> Result<i64, StoreError> {
    let mut rows = 0;
    for (lock, record) in changed {
        let done = on_db!(conn.reborrow(), conn => sqlx::query(
            "INSERT INTO authority_locks (lock, highest_holder_revision, holder_key, owner, \
             seen_at_us) VALUES ($1, $2, $3, $4, $5) \
             ON CONFLICT (lock) DO UPDATE SET \
             holder_key = CASE WHEN excluded.highest_holder_revision >= \
                 authority_locks.highest_holder_revision THEN excluded.holder_key \
                 ELSE authority_locks.holder_key END, \
             owner = CASE WHEN excluded.highest_holder_revision >= \
                 authority_locks.highest_holder_revision THEN excluded.owner \
                 ELSE authority_locks.owner END, \
             highest_holder_revision = CASE WHEN excluded.highest_holder_revision >= \
                 authority_locks.highest_holder_revision THEN excluded.highest_holder_revision \
                 ELSE authority_locks.highest_holder_revision END, \
             seen_at_us = excluded.seen_at_us",
        )
        .bind(lock.as_str())
        .bind(record.highest)
        .bind(record.holder_key.as_str())
        .bind(record.owner.as_deref())
        .bind(now)
        .execute(conn)
        .await?
        .rows_affected());
        rows += i64::try_from(done).unwrap_or(i64::MAX);
    }
    rows += record_holders(conn, changed).await?;
    Ok(rows)
}

/// Records every holder the batch's writes saw, in one statement: a sighting widens its row's
/// first and last times, never narrows them. Returns how many rows it changed.
async fn record_holders(
    conn: Conn<'_>,
    locks: &HashMap<String, RecordedLock>,
) -> Result<i64, StoreError> {
    // One row per holder: a statement may not change one row twice (PostgreSQL refuses it).
    let mut spans: BTreeMap<(&str, i64, &str), (i64, i64)> = BTreeMap::new();
    for (lock, record) in locks {
        for seen in &record.observed {
            spans
                .entry((lock.as_str(), seen.generation, seen.holder_key.as_str()))
                .and_modify(|(first, last)| {
                    *first = (*first).min(seen.at_us);
                    *last = (*last).max(seen.at_us);
                })
                .or_insert((seen.at_us, seen.at_us));
        }
    }
    if spans.is_empty() {
        return Ok(0);
    }
    let values: Vec<String> = (0..spans.len())
        .map(|row| {
            let p = row * 5;
            format!(
                "(${}, ${}, ${}, ${}, ${})",
                p + 1,
                p + 2,
                p + 3,
                p + 4,
                p + 5
            )
        })
        .collect();
    let sql = format!(
        "INSERT INTO authority_holders (lock, generation, holder_key, first_seen_us, \
         last_seen_us) VALUES {} \
         ON CONFLICT (lock, generation, holder_key) DO UPDATE SET \
         first_seen_us = CASE WHEN excluded.first_seen_us < authority_holders.first_seen_us \
             THEN excluded.first_seen_us ELSE authority_holders.first_seen_us END, \
         last_seen_us = CASE WHEN excluded.last_seen_us > authority_holders.last_seen_us \
             THEN excluded.last_seen_us ELSE authority_holders.last_seen_us END",
        values.join(", ")
    );
    let done = on_db!(conn, conn => {
        let mut query = sqlx::query(&sql);
        for ((lock, generation, key), (first, last)) in spans {
            query = query
                .bind(lock)
                .bind(generation)
                .bind(key)
                .bind(first)
                .bind(last);
        }
        query.execute(conn).await?.rows_affected()
    });
    Ok(i64::try_from(done).unwrap_or(i64::MAX))
}
