//! Ownership overlaps: opened or grown in the transaction of the stale write that shows them,
//! closed after a quiet period. Those of watched databases (`serve --watch`) are in the same
//! table with their `source`; this daemon's own have the source `''`.

use super::error::{corrupt, time_from_us};
use super::native::{on_db, Native, NativeRow};
use super::{Store, StoreError};
use crate::domain::{Overlap, OverlapState};

const COLUMNS: &str =
    "id, resource, source, stale_token, superseding_token, stale_owner, superseding_owner, \
     first_seen_us, last_seen_us, rejected_writes, state, closed_at_us, updated_at_us";

/// Which overlaps to list.
#[derive(Debug, Clone, Default)]
pub struct OverlapQuery {
    pub state: Option<OverlapState>,
    pub resource: Option<String>,
    pub limit: u32,
}

impl Store {
    /// Overlaps, most recently seen first.
    pub async fn overlaps(&self, query: &OverlapQuery) -> Result<Vec<Overlap>, StoreError> {
        let sql = format!(
            "SELECT {COLUMNS} FROM ownership_overlaps WHERE ($1 = '' OR state = $1) \
             AND ($2 = '' OR resource = $2) ORDER BY last_seen_us DESC, id DESC LIMIT $3"
        );
        on_db!(self.reader(), pool => sqlx::query(&sql)
            .bind(query.state.map(OverlapState::as_str).unwrap_or(""))
            .bind(query.resource.as_deref().unwrap_or(""))
            .bind(i64::from(query.limit.max(1))).fetch_all(pool).await?.iter().map(overlap).collect())
    }

    /// Overlap incidents seen between the times (either bound optional), oldest first: all of
    /// them, or with `newest` only that many of the latest to begin (read newest first from
    /// `overlaps_by_first_seen`, so a long history is not sorted to show its end).
    pub async fn incidents(
        &self,
        since_us: Option<i64>,
        until_us: Option<i64>,
        resource: Option<&str>,
        newest: Option<u64>,
    ) -> Result<Vec<Overlap>, StoreError> {
        let sql = format!(
            "SELECT {COLUMNS} FROM ownership_overlaps WHERE last_seen_us >= $1 AND first_seen_us <= $2 \
             AND ($3 = '' OR resource = $3) ORDER BY first_seen_us DESC, id DESC LIMIT $4"
        );
        let limit = newest.map_or(i64::MAX, |n| i64::try_from(n).unwrap_or(i64::MAX));
        let mut incidents: Vec<Overlap> = on_db!(self.reader(), pool => sqlx::query(&sql)
            .bind(since_us.unwrap_or(i64::MIN))
            .bind(until_us.unwrap_or(i64::MAX))
            .bind(resource.unwrap_or(""))
            .bind(limit).fetch_all(pool).await?.iter().map(overlap).collect::<Result<_, _>>()?);
        incidents.reverse();
        Ok(incidents)
    }

    pub async fn overlap(&self, id: i64) -> Result<Option<Overlap>, StoreError> {
        let sql = format!("SELECT {COLUMNS} FROM ownership_overlaps WHERE id = $1");
        on_db!(self.reader(), pool => sqlx::query(&sql)
            .bind(id).fetch_optional(pool).await?.as_ref().map(overlap).transpose())
    }

    /// Overlaps changed at or after `since_us`, with the time of their change: open ones among
    /// the open (their `updated_at_us` is not indexed, so that sightings rewrite rows in place),
    /// closed ones by when they closed. Two parts, each read from its partial index: as one
    /// `OR`, SQLite scans every overlap ever closed, on every tick of the live watcher.
    /// SQLite keeps no statistics here, so it is told which index holds the open ones.
    pub async fn overlaps_changed_since(
        &self,
        since_us: i64,
    ) -> Result<Vec<(Overlap, i64)>, StoreError> {
        let open_index = match self.reader() {
            Native::Sqlite(_) => " INDEXED BY overlaps_one_open",
            Native::Postgres(_) => "",
        };
        let sql = format!(
            "SELECT {COLUMNS} FROM ( \
               SELECT {COLUMNS} FROM ownership_overlaps{open_index} \
                WHERE state = 'open' AND updated_at_us >= $1 \
               UNION ALL \
               SELECT {COLUMNS} FROM ownership_overlaps \
                WHERE state = 'closed' AND closed_at_us >= $1 \
             ) AS changed ORDER BY updated_at_us, id"
        );
        on_db!(self.reader(), pool => sqlx::query(&sql)
            .bind(since_us).fetch_all(pool).await?.iter()
            .map(|row| Ok((overlap(row)?, row.try_get("updated_at_us")?))).collect())
    }

    /// This daemon's own open overlaps.
    pub async fn open_overlap_count(&self) -> Result<u64, StoreError> {
        let counts = self.open_overlap_counts().await?;
        Ok(counts.get(&None).copied().unwrap_or(0))
    }

    /// Open overlaps per source (`None`: this daemon's own), only the sources that have one.
    pub async fn open_overlap_counts(
        &self,
    ) -> Result<std::collections::BTreeMap<Option<String>, u64>, StoreError> {
        let rows: Vec<(String, i64)> = on_db!(self.reader(), pool => sqlx::query_as(
            "SELECT source, COUNT(*) AS n FROM ownership_overlaps WHERE state = 'open' \
             GROUP BY source",
        ).fetch_all(pool).await?);
        Ok(rows
            .into_iter()
            .map(|(source, count)| (source_of(source), u64::try_from(count).unwrap_or(0)))
            .collect())
    }

    /// Closes the open overlaps last seen before `cutoff_us`, and says which this call closed.
    /// Idempotent, so every daemon may run it; each overlap is closed by exactly one call.
    pub async fn close_quiet_overlaps(
        &self,
        cutoff_us: i64,
        now_us: i64,
    ) -> Result<Vec<Overlap>, StoreError> {
        let sql = format!(
            "UPDATE ownership_overlaps SET state = 'closed', closed_at_us = $2, updated_at_us = $2 \
             WHERE state = 'open' AND last_seen_us < $1 RETURNING {COLUMNS}"
        );
        on_db!(self.writer(), pool => sqlx::query(&sql)
            .bind(cutoff_us)
            .bind(now_us).fetch_all(pool).await?.iter().map(overlap).collect())
    }
}

fn overlap<R: NativeRow>(row: &R) -> Result<Overlap, StoreError> {
    let state: String = row.try_get("state")?;
    let closed_at: Option<i64> = row.try_get("closed_at_us")?;
    Ok(Overlap {
        id: row.try_get("id")?,
        resource: row.try_get("resource")?,
        source: source_of(row.try_get("source")?),
        stale_token: row.try_get("stale_token")?,
        superseding_token: row.try_get("superseding_token")?,
        stale_owner: row.try_get("stale_owner")?,
        superseding_owner: row.try_get("superseding_owner")?,
        first_seen: time_from_us(row.try_get("first_seen_us")?)?,
        last_seen: time_from_us(row.try_get("last_seen_us")?)?,
        rejected_writes: row.try_get("rejected_writes")?,
        state: OverlapState::parse(&state)
            .ok_or_else(|| corrupt(format!("unknown overlap state {state:?}")))?,
        closed_at: closed_at.map(time_from_us).transpose()?,
    })
}

/// A stored source: `''` is this daemon's own.
pub(crate) fn source_of(stored: String) -> Option<String> {
    Some(stored).filter(|source| !source.is_empty())
}
