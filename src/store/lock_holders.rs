//! Who held an external lock when, as writes observed it (`authority_holders`, recorded in the
//! writes' transactions by `authority::store`): read back as the lock's history (`observed`
//! events) by `GET /v1/lease-history/etcd:PREFIX` and the timelines.

use super::error::time_from_us;
use super::leases::{history_page, LeaseHistoryQuery, StoredLeaseEvent};
use super::native::{on_db, row_reader, NativeRow};
use super::{Store, StoreError};
use crate::domain::authority::ExternalLock;
use crate::domain::lease_history::{LeaseChange, LeaseEvent};

const COLUMNS: &str = "id, lock, generation, holder_key, first_seen_us, last_seen_us";

impl Store {
    /// A page of the lock's observed holders, newest first, paged as `lease_history_page`:
    /// by row id, and `until` keeps holders first seen at or before it.
    pub async fn authority_history_page(
        &self,
        lock: &ExternalLock,
        query: &LeaseHistoryQuery,
    ) -> Result<Vec<LeaseEvent>, StoreError> {
        let select = format!("SELECT {COLUMNS} FROM authority_holders WHERE lock = $1");
        let events = history_page(
            self.reader(),
            &select,
            &lock.lease_name(),
            "first_seen_us",
            query,
            row_reader!(observed_event),
        )
        .await?;
        let events = events
            .into_iter()
            .map(|event| {
                Ok(LeaseEvent {
                    id: event.id,
                    at: event.at,
                    event: LeaseChange::Observed,
                    holder: event.holder,
                    token: event.token,
                    expires_at: event.expires_at,
                })
            })
            .collect::<Result<Vec<_>, StoreError>>()?;
        Ok(events)
    }

    /// Whether any holder of the lock was ever recorded.
    pub async fn authority_observed(&self, lock: &ExternalLock) -> Result<bool, StoreError> {
        let found: Option<i64> = on_db!(self.reader(), pool => sqlx::query_scalar("SELECT id FROM authority_holders WHERE lock = $1 LIMIT 1")
                .bind(lock.lease_name())
                .fetch_optional(pool)
                .await?);
        Ok(found.is_some())
    }

    /// The lock's observed holders as lease events (`observed`), oldest first.
    pub async fn authority_events(
        &self,
        lock: &ExternalLock,
    ) -> Result<Vec<StoredLeaseEvent>, StoreError> {
        let sql = format!("SELECT {COLUMNS} FROM authority_holders WHERE lock = $1 ORDER BY id");
        on_db!(self.reader(), pool => sqlx::query(&sql)
            .bind(lock.lease_name())
            .fetch_all(pool)
            .await?
            .iter()
            .map(observed_event)
            .collect())
    }
}

/// A row as a lease event: first seen as its time, last seen as its end.
pub(super) fn observed_event<R: NativeRow>(row: &R) -> Result<StoredLeaseEvent, StoreError> {
    Ok(StoredLeaseEvent {
        id: row.try_get("id")?,
        at: time_from_us(row.try_get("first_seen_us")?)?,
        lease: row.try_get("lock")?,
        event: LeaseChange::Observed.as_str().to_owned(),
        holder: row.try_get("holder_key")?,
        token: row.try_get("generation")?,
        expires_at: time_from_us(row.try_get("last_seen_us")?)?,
    })
}
