//! What this daemon keeps of the databases it watches (`serve --watch`): how far each one's
//! fence audit has been taken in, the overlaps its refusals show and its rows counted for the
//! alert rules, all moved in one transaction so that a restart neither replays nor loses a row.

use super::batch::rows::join_open_overlap;
use super::native::on_db;
use super::{Store, StoreError};
use crate::domain::fence_overlaps::{OverlapSighting, WatchedCount};

/// What became of recording a page of a watched audit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WatchAdvance {
    /// Recorded; the source's position is now the one asked for.
    Recorded,
    /// Nothing recorded: another daemon watching the same database moved its position first.
    /// It stands at `position` now.
    Moved { position: i64 },
}

const RECORD_SIGHTING: &str = concat!(
    "INSERT INTO ownership_overlaps AS o (resource, source, stale_token, superseding_token, \
        stale_owner, superseding_owner, first_seen_us, last_seen_us, rejected_writes, state, \
        updated_at_us) \
      VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, 'open', $10) ",
    join_open_overlap!()
);

const COUNT_ROWS: &str = "INSERT INTO watched_counts (source, resource, outcome, second_us, n) \
      VALUES ($1, $2, $3, $4, $5) \
      ON CONFLICT (source, resource, outcome, second_us) DO UPDATE \
      SET n = watched_counts.n + excluded.n";

impl Store {
    /// Where the watcher of `source` resumes: the id after which nothing was taken in yet;
    /// `None` if it was never watched.
    pub async fn watch_position(&self, source: &str) -> Result<Option<i64>, StoreError> {
        let position: Option<i64> = on_db!(self.writer(), pool => sqlx::query_scalar("SELECT after_id FROM watch_positions WHERE source = $1")
                .bind(source).fetch_optional(pool).await?);
        Ok(position)
    }

    /// Moves `source` from `from` (`None`: never watched) to `to` and records, in the same
    /// transaction, the overlaps `sightings` show and the `counts` of its rows. The position is
    /// moved first and only from where this watcher left it, so that of two daemons watching
    /// one database the second waits for the first and then records nothing twice.
    /// `now_us` is when the overlaps changed, by this daemon's clock (the live side publishes
    /// changes by it); their times seen are the rows' own.
    pub async fn record_watched(
        &self,
        source: &str,
        from: Option<i64>,
        to: i64,
        sightings: &[OverlapSighting],
        counts: &[WatchedCount],
        now_us: i64,
    ) -> Result<WatchAdvance, StoreError> {
        let mut tx = self.writer().begin().await?;
        let moved = match from {
            None => on_db!(tx.conn(), conn => sqlx::query(
                "INSERT INTO watch_positions (source, after_id, updated_at_us) \
                 VALUES ($1, $2, $3) ON CONFLICT (source) DO NOTHING",
            )
            .bind(source)
            .bind(to)
            .bind(now_us).execute(conn).await?.rows_affected()),
            Some(from) => on_db!(tx.conn(), conn => sqlx::query(
                "UPDATE watch_positions SET after_id = $2, updated_at_us = $3 \
                 WHERE source = $1 AND after_id = $4",
            )
            .bind(source)
            .bind(to)
            .bind(now_us)
            .bind(from).execute(conn).await?.rows_affected()),
        };
        if moved != 1 {
            let position: Option<i64> = on_db!(tx.conn(), conn => {
                sqlx::query_scalar("SELECT after_id FROM watch_positions WHERE source = $1")
                    .bind(source)
                    .fetch_optional(conn)
                    .await?
            });
            tx.rollback().await?;
            return Ok(WatchAdvance::Moved {
                position: position.unwrap_or(0),
            });
        }
        for sighting in sightings {
            on_db!(tx.conn(), conn => sqlx::query(RECORD_SIGHTING)
                .bind(&sighting.resource)
                .bind(source)
                .bind(sighting.stale_token)
                .bind(sighting.superseding_token)
                .bind(&sighting.stale_owner)
                .bind(&sighting.superseding_owner)
                .bind(sighting.first_seen_us)
                .bind(sighting.last_seen_us)
                .bind(sighting.rejected_writes)
                .bind(now_us).execute(conn).await?.rows_affected());
        }
        for count in counts {
            on_db!(tx.conn(), conn => sqlx::query(COUNT_ROWS)
                .bind(source)
                .bind(&count.resource)
                .bind(count.outcome.as_str())
                .bind(count.second_us)
                .bind(count.count).execute(conn).await?.rows_affected());
        }
        tx.commit().await?;
        Ok(WatchAdvance::Recorded)
    }

    /// Forgets the counts of watched rows older than `before_us` (the alert rules' windows
    /// look back far less).
    pub async fn prune_watched_counts(&self, before_us: i64) -> Result<u64, StoreError> {
        let done = on_db!(self.writer(), pool => sqlx::query("DELETE FROM watched_counts WHERE second_us < $1")
            .bind(before_us).execute(pool).await?.rows_affected());
        Ok(done)
    }

    /// Every watched source's position, for `/v1/stats` after a restart.
    pub async fn watch_positions(&self) -> Result<Vec<(String, i64)>, StoreError> {
        Ok(on_db!(self.reader(), pool => {
            sqlx::query_as("SELECT source, after_id FROM watch_positions ORDER BY source")
                .fetch_all(pool)
                .await?
        }))
    }
}
