//! Retention, a setting of the database (`retention_settings`) rather than of each daemon: a
//! daemon that forgot operations sooner than another would forget one the other still answers
//! for, and a retry reaching it would be applied twice. Cut-offs are the database server's
//! clock on PostgreSQL, which the daemons sharing it agree on, and this process's on SQLite,
//! which has one daemon.

use super::native::on_db;
use super::native::Native;
use super::tx::clock_us;
use super::{Store, StoreError};
use crate::domain::duration::saturating_micros;
use std::time::Duration;

/// The retentions every daemon on a database keeps to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Retention {
    /// How long an accepted operation's result is kept for replay by its idempotency key.
    pub idempotency: Duration,
    /// How long audit rows, and the history beside them, are kept; `None` keeps them for ever.
    pub audit: Option<Duration>,
}

/// When a daemon's retention is stored as the database's.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StoreRetention {
    /// Only if none is stored yet: the first daemon's.
    IfNoneStored,
    /// Whatever is stored (`serve --set-retention`).
    Replacing,
}

/// What storing a daemon's retention found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RetentionClaim {
    /// None was stored: the daemon's is now the database's.
    Stored,
    /// The daemon's replaced this one, stored before.
    Replaced(Retention),
    /// This one was stored and still applies (it may be the daemon's own).
    Kept(Retention),
}

/// The stored retention's columns, in `stored_retention`'s order.
const STORED: &str = "SELECT idempotency_retention_us, audit_retention_us FROM retention_settings \
     WHERE id = 1";

fn stored_retention((idempotency, audit): (i64, Option<i64>)) -> Retention {
    Retention {
        idempotency: duration(idempotency),
        audit: audit.map(duration),
    }
}

fn duration(micros: i64) -> Duration {
    Duration::from_micros(u64::try_from(micros).unwrap_or(0))
}

impl Store {
    /// The database's retention, `None` until a daemon has stored one.
    pub async fn retention(&self) -> Result<Option<Retention>, StoreError> {
        let row: Option<(i64, Option<i64>)> =
            on_db!(self.reader(), pool => sqlx::query_as(STORED).fetch_optional(pool).await?);
        Ok(row.map(stored_retention))
    }

    /// Stores `ours` as the database's retention if none is (or, `Replacing`, whatever is), and
    /// says what was there.
    pub async fn claim_retention(
        &self,
        ours: Retention,
        when: StoreRetention,
    ) -> Result<RetentionClaim, StoreError> {
        let now = self.clock.now_us();
        let mut tx = self.writer().begin().await?;
        // A write first, so that two daemons starting at once take turns: the row's lock on
        // PostgreSQL, the file's write lock on SQLite (taken even when no row matches).
        on_db!(tx.conn(), conn => sqlx::query("UPDATE retention_settings SET updated_at_us = updated_at_us WHERE id = 1").execute(conn).await?.rows_affected());
        let inserted = on_db!(tx.conn(), conn => sqlx::query(
            "INSERT INTO retention_settings \
             (id, idempotency_retention_us, audit_retention_us, updated_at_us) \
             VALUES (1, $1, $2, $3) ON CONFLICT (id) DO NOTHING",
        )
        .bind(saturating_micros(ours.idempotency))
        .bind(ours.audit.map(saturating_micros))
        .bind(now).execute(conn).await?.rows_affected());
        if inserted == 1 {
            tx.commit().await?;
            return Ok(RetentionClaim::Stored);
        }
        let stored = stored_retention(on_db!(tx.conn(), conn => {
            sqlx::query_as(STORED).fetch_one(conn).await?
        }));
        if when == StoreRetention::IfNoneStored || stored == ours {
            tx.commit().await?;
            return Ok(RetentionClaim::Kept(stored));
        }
        on_db!(tx.conn(), conn => sqlx::query(
            "UPDATE retention_settings SET idempotency_retention_us = $1, \
             audit_retention_us = $2, updated_at_us = $3 WHERE id = 1",
        )
        .bind(saturating_micros(ours.idempotency))
        .bind(ours.audit.map(saturating_micros))
        .bind(now).execute(conn).await?.rows_affected());
        tx.commit().await?;
        Ok(RetentionClaim::Replaced(stored))
    }

    /// Forgets operation records older than `retention`, by the database's clock on
    /// PostgreSQL (which also records them, see `batch::postgres`). A repeat of a forgotten
    /// operation is decided afresh, like any new write.
    pub async fn prune_operations(&self, retention: Duration) -> Result<u64, StoreError> {
        let retention_us = saturating_micros(retention);
        let deleted = match self.writer() {
            Native::Postgres(pool) => sqlx::query(
                "DELETE FROM operations WHERE recorded_at_us < \
                     (EXTRACT(EPOCH FROM clock_timestamp()) * 1000000)::BIGINT - $1",
            )
            .bind(retention_us)
            .execute(pool)
            .await?
            .rows_affected(),
            Native::Sqlite(pool) => sqlx::query("DELETE FROM operations WHERE recorded_at_us < $1")
                .bind(self.clock.now_us().saturating_sub(retention_us))
                .execute(pool)
                .await?
                .rows_affected(),
        };
        Ok(deleted)
    }

    /// Now, in microseconds since the epoch, by the clock retention's cut-offs follow: the
    /// database server's on PostgreSQL, the daemon's on SQLite.
    pub async fn retention_clock_us(&self) -> Result<i64, StoreError> {
        let mut tx = self.reader().begin().await?;
        let now = clock_us(tx.conn(), self.clock.as_ref()).await?;
        tx.commit().await?;
        Ok(now)
    }
}
