//! Who held an external lock when, as writes observed it (`authority_holders`): recorded in
//! the writes' transactions, read back as the lock's history (`observed` events) by
//! `GET /v1/lease-history/etcd:PREFIX` and the timelines.

use super::authority::RecordedLock;
use super::error::time_from_us;
use super::leases::{LeaseEvent, LeaseHistoryQuery};
use super::{Store, StoreError};
use crate::domain::authority::ExternalLock;
use crate::domain::lease_history::{LeaseChange, LeaseEvent as HistoryEvent};
use sqlx::any::AnyRow;
use sqlx::{AnyConnection, Row};
use std::collections::{BTreeMap, HashMap};

const COLUMNS: &str = "id, lock, generation, holder_key, first_seen_us, last_seen_us";

/// Records every holder the batch's writes saw, in one statement: a sighting widens its row's
/// first and last times, never narrows them. Returns how many rows it changed.
pub(super) async fn record(
    conn: &mut AnyConnection,
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
    let mut query = sqlx::query(&sql);
    for ((lock, generation, key), (first, last)) in spans {
        query = query
            .bind(lock)
            .bind(generation)
            .bind(key)
            .bind(first)
            .bind(last);
    }
    let done = query.execute(&mut *conn).await?;
    Ok(i64::try_from(done.rows_affected()).unwrap_or(i64::MAX))
}

impl Store {
    /// A page of the lock's observed holders, newest first, paged as `lease_history_page`:
    /// by row id, and `until` keeps holders first seen at or before it.
    pub async fn authority_history_page(
        &self,
        lock: &ExternalLock,
        query: &LeaseHistoryQuery,
    ) -> Result<Vec<HistoryEvent>, StoreError> {
        let mut sql = format!("SELECT {COLUMNS} FROM authority_holders WHERE lock = $1");
        let mut next_param = 2;
        for (set, condition) in [
            (query.before.is_some(), "id <"),
            (query.after.is_some(), "id >"),
            (query.until_us.is_some(), "first_seen_us <="),
        ] {
            if set {
                sql.push_str(&format!(" AND {condition} ${next_param}"));
                next_param += 1;
            }
        }
        let order = if query.after.is_some() { "ASC" } else { "DESC" };
        sql.push_str(&format!(" ORDER BY id {order} LIMIT ${next_param}"));
        let mut statement = sqlx::query(&sql).bind(lock.lease_name());
        for bound in [query.before, query.after, query.until_us]
            .into_iter()
            .flatten()
        {
            statement = statement.bind(bound);
        }
        let rows = statement
            .bind(i64::from(query.limit))
            .fetch_all(&self.reader)
            .await?;
        let mut events = rows
            .iter()
            .map(|row| {
                let event = observed_event(row)?;
                Ok(HistoryEvent {
                    id: event.id,
                    at: event.at,
                    event: LeaseChange::Observed,
                    holder: event.holder,
                    token: event.token,
                    expires_at: event.expires_at,
                })
            })
            .collect::<Result<Vec<_>, StoreError>>()?;
        if query.after.is_some() {
            events.reverse();
        }
        Ok(events)
    }

    /// Whether any holder of the lock was ever recorded.
    pub async fn authority_observed(&self, lock: &ExternalLock) -> Result<bool, StoreError> {
        let found: Option<i64> =
            sqlx::query_scalar("SELECT id FROM authority_holders WHERE lock = $1 LIMIT 1")
                .bind(lock.lease_name())
                .fetch_optional(&self.reader)
                .await?;
        Ok(found.is_some())
    }

    /// The lock's observed holders as lease events (`observed`), oldest first.
    pub async fn authority_events(
        &self,
        lock: &ExternalLock,
    ) -> Result<Vec<LeaseEvent>, StoreError> {
        let sql = format!("SELECT {COLUMNS} FROM authority_holders WHERE lock = $1 ORDER BY id");
        let rows = sqlx::query(&sql)
            .bind(lock.lease_name())
            .fetch_all(&self.reader)
            .await?;
        rows.iter().map(observed_event).collect()
    }
}

/// A row as a lease event: first seen as its time, last seen as its end.
fn observed_event(row: &AnyRow) -> Result<LeaseEvent, StoreError> {
    Ok(LeaseEvent {
        id: row.try_get("id")?,
        at: time_from_us(row.try_get("first_seen_us")?)?,
        lease: row.try_get("lock")?,
        event: LeaseChange::Observed.as_str().to_owned(),
        holder: row.try_get("holder_key")?,
        token: row.try_get("generation")?,
        expires_at: time_from_us(row.try_get("last_seen_us")?)?,
    })
}
