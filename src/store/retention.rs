//! Retention, a setting of the database (`retention_settings`) rather than of each daemon: a
//! daemon that forgot operations sooner than another would forget one the other still answers
//! for, and a retry reaching it would be applied twice. Cut-offs are the database server's
//! clock on PostgreSQL, which the daemons sharing it agree on, and this process's on SQLite,
//! which has one daemon.

use super::tx::clock_us;
use super::{Backend, Store, StoreError};
use sqlx::Row;
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

fn micros(duration: Duration) -> i64 {
    i64::try_from(duration.as_micros()).unwrap_or(i64::MAX)
}

fn duration(micros: i64) -> Duration {
    Duration::from_micros(u64::try_from(micros).unwrap_or(0))
}

impl Store {
    /// The database's retention, `None` until a daemon has stored one.
    pub async fn retention(&self) -> Result<Option<Retention>, StoreError> {
        let row = sqlx::query(
            "SELECT idempotency_retention_us, audit_retention_us FROM retention_settings \
             WHERE id = 1",
        )
        .fetch_optional(&self.reader)
        .await?;
        row.map(|row| {
            Ok(Retention {
                idempotency: duration(row.try_get("idempotency_retention_us")?),
                audit: row
                    .try_get::<Option<i64>, _>("audit_retention_us")?
                    .map(duration),
            })
        })
        .transpose()
    }

    /// Stores `ours` as the database's retention if none is (or, `Replacing`, whatever is), and
    /// says what was there.
    pub async fn claim_retention(
        &self,
        ours: Retention,
        when: StoreRetention,
    ) -> Result<RetentionClaim, StoreError> {
        let now = self.clock.now_us();
        let mut tx = self.writer.begin().await?;
        // A write first, so that two daemons starting at once take turns: the row's lock on
        // PostgreSQL, the file's write lock on SQLite (taken even when no row matches).
        sqlx::query("UPDATE retention_settings SET updated_at_us = updated_at_us WHERE id = 1")
            .execute(&mut *tx)
            .await?;
        let inserted = sqlx::query(
            "INSERT INTO retention_settings \
             (id, idempotency_retention_us, audit_retention_us, updated_at_us) \
             VALUES (1, $1, $2, $3) ON CONFLICT (id) DO NOTHING",
        )
        .bind(micros(ours.idempotency))
        .bind(ours.audit.map(micros))
        .bind(now)
        .execute(&mut *tx)
        .await?;
        if inserted.rows_affected() == 1 {
            tx.commit().await?;
            return Ok(RetentionClaim::Stored);
        }
        let row = sqlx::query(
            "SELECT idempotency_retention_us, audit_retention_us FROM retention_settings \
             WHERE id = 1",
        )
        .fetch_one(&mut *tx)
        .await?;
        let stored = Retention {
            idempotency: duration(row.try_get("idempotency_retention_us")?),
            audit: row
                .try_get::<Option<i64>, _>("audit_retention_us")?
                .map(duration),
        };
        if when == StoreRetention::IfNoneStored || stored == ours {
            tx.commit().await?;
            return Ok(RetentionClaim::Kept(stored));
        }
        sqlx::query(
            "UPDATE retention_settings SET idempotency_retention_us = $1, \
             audit_retention_us = $2, updated_at_us = $3 WHERE id = 1",
        )
        .bind(micros(ours.idempotency))
        .bind(ours.audit.map(micros))
        .bind(now)
        .execute(&mut *tx)
        .await?;
        tx.commit().await?;
        Ok(RetentionClaim::Replaced(stored))
    }

    /// Forgets operation records older than `retention`, by the database's clock on
    /// PostgreSQL (which also records them, see `batch::postgres`). A repeat of a forgotten
    /// operation is decided afresh, like any new write.
    pub async fn prune_operations(&self, retention: Duration) -> Result<u64, StoreError> {
        let retention_us = micros(retention);
        let result = match self.backend {
            Backend::Postgres => {
                sqlx::query(
                    "DELETE FROM operations WHERE recorded_at_us < \
                     (EXTRACT(EPOCH FROM clock_timestamp()) * 1000000)::BIGINT - $1",
                )
                .bind(retention_us)
                .execute(&self.writer)
                .await?
            }
            Backend::Sqlite => {
                sqlx::query("DELETE FROM operations WHERE recorded_at_us < $1")
                    .bind(self.clock.now_us().saturating_sub(retention_us))
                    .execute(&self.writer)
                    .await?
            }
        };
        Ok(result.rows_affected())
    }

    /// Now, in microseconds since the epoch, by the clock retention's cut-offs follow: the
    /// database server's on PostgreSQL, the daemon's on SQLite.
    pub async fn retention_clock_us(&self) -> Result<i64, StoreError> {
        let mut conn = self.reader.acquire().await?;
        Ok(clock_us(&mut conn, self.backend, self.clock.as_ref()).await?)
    }
}
