//! The lease authority's persistence: grants from a durable counter, renewals, releases, and the
//! history of who held which generation when.

use super::error::{corrupt, time_from_us};
use super::native::{on_db, row_reader, Conn, NativeRow, Pool, ReadsRow, RowReader};
use super::tx::{clock_us, retrying};
use super::{Store, StoreError};
use crate::domain::lease::{
    decide_acquire, decide_release, holds, AcquireDecision, ReleaseDecision,
};
use crate::domain::lease_history::{LeaseChange, LeaseEvent};
use crate::domain::{FencingToken, Holder, LeaseName, LeaseRecord, Ttl};
use chrono::{DateTime, Utc};
use serde::Serialize;
use sqlx::{Database, Encode, Type};

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AcquireResult {
    Granted(LeaseRecord),
    Held(LeaseRecord),
}

/// What a renewal found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RenewResult {
    Renewed(LeaseRecord),
    /// The holder and token were not the current, unexpired grant: the lease as it stands, if
    /// it exists.
    Lost(Option<LeaseState>),
}

/// What a release found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ReleaseResult {
    Released,
    /// The holder and token were not the current grant: the lease as it stands, if it exists.
    Lost(Option<LeaseState>),
}

/// A lease with the authority's clock reading, so callers can tell whether it has lapsed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LeaseState {
    pub record: LeaseRecord,
    pub now_us: i64,
}

/// One entry of a lease's history as stored: with the lease it belongs to, its kind as the
/// text recorded. The API's typed form, of one lease, is `lease_history::LeaseEvent`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct StoredLeaseEvent {
    pub id: i64,
    #[serde(serialize_with = "crate::domain::audit::serialize_rfc3339_micros")]
    pub at: DateTime<Utc>,
    pub lease: String,
    /// `acquired`, `renewed`, `released`, or `expired` (observed when the next grant was made).
    pub event: String,
    pub holder: String,
    pub token: i64,
    #[serde(serialize_with = "crate::domain::audit::serialize_rfc3339_micros")]
    pub expires_at: DateTime<Utc>,
}

/// Which page of a lease's history: ids exclusive, the time inclusive, in microseconds.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LeaseHistoryQuery {
    pub before: Option<i64>,
    pub after: Option<i64>,
    pub until_us: Option<i64>,
    pub limit: u32,
}

pub(crate) const LEASE_COLUMNS: &str = "name, holder, token, ttl_ms, expires_at_us, released_at_us";

impl Store {
    /// Grants `name` to `holder` with the next generation, unless someone else holds it.
    pub async fn acquire_lease(
        &self,
        name: &LeaseName,
        holder: &Holder,
        ttl: Ttl,
    ) -> Result<AcquireResult, StoreError> {
        retrying(|| async move {
            let mut tx = self.writer().begin().await?;
            for _ in 0..MAX_DECISIONS {
                let now = clock_us(tx.conn(), &*self.clock).await?;
                let current = read_lease(tx.conn(), name, "").await?;
                let decision = decide_acquire(current.as_ref(), holder, now)
                    .map_err(|e| StoreError::Invariant(e.0))?;
                let (token, lapsed) = match decision {
                    AcquireDecision::Held { current } => {
                        tx.commit().await?;
                        return Ok(AcquireResult::Held(current));
                    }
                    AcquireDecision::Grant { token, lapsed } => (token, lapsed),
                };
                let expires_at_us = now + ttl.micros();
                let granted = match &current {
                    None => on_db!(tx.conn(), conn => sqlx::query(
                        "INSERT INTO leases (name, holder, token, ttl_ms, acquired_at_us, expires_at_us) \
                         VALUES ($1, $2, $3, $4, $5, $6) ON CONFLICT (name) DO NOTHING",
                    )
                    .bind(name.as_str())
                    .bind(holder.as_str())
                    .bind(token.get())
                    .bind(ttl.millis())
                    .bind(now)
                    .bind(expires_at_us)
                    .execute(conn)
                    .await?
                    .rows_affected()),
                    Some(observed) => {
                        let sql = update_if_unchanged(
                            "holder = $4, token = $5, ttl_ms = $6, acquired_at_us = $7, \
                             expires_at_us = $8, released_at_us = NULL",
                            observed,
                        );
                        on_db!(tx.conn(), conn => bind_observed(sqlx::query(&sql), observed)
                            .bind(holder.as_str())
                            .bind(token.get())
                            .bind(ttl.millis())
                            .bind(now)
                            .bind(expires_at_us)
                            .execute(conn)
                            .await?
                            .rows_affected())
                    }
                };
                if granted != 1 {
                    continue;
                }
                if let Some(lapsed) = lapsed {
                    insert_event(tx.conn(), now, &lapsed, "expired", lapsed.expires_at_us).await?;
                }
                let record = LeaseRecord {
                    name: name.clone(),
                    holder: holder.clone(),
                    token,
                    ttl,
                    expires_at_us,
                    released: false,
                };
                insert_event(tx.conn(), now, &record, "acquired", expires_at_us).await?;
                tx.commit().await?;
                return Ok(AcquireResult::Granted(record));
            }
            Err(StoreError::Contention {
                attempts: MAX_DECISIONS,
            })
        })
        .await
    }

    /// Extends the current grant by its TTL (or `ttl`), unless `holder` and `token` are not the
    /// current, unexpired grant.
    pub async fn renew_lease(
        &self,
        name: &LeaseName,
        holder: &Holder,
        token: FencingToken,
        ttl: Option<Ttl>,
    ) -> Result<RenewResult, StoreError> {
        retrying(|| async move {
            let mut tx = self.writer().begin().await?;
            for _ in 0..MAX_DECISIONS {
                let now = clock_us(tx.conn(), &*self.clock).await?;
                let current = read_lease(tx.conn(), name, "").await?;
                let observed = match current {
                    Some(observed) if holds(Some(&observed), holder, token, now, false) => observed,
                    other => {
                        tx.commit().await?;
                        return Ok(RenewResult::Lost(other.map(|record| LeaseState {
                            record,
                            now_us: now,
                        })));
                    }
                };
                let mut record = observed.clone();
                record.ttl = ttl.unwrap_or(record.ttl);
                record.expires_at_us = now + record.ttl.micros();
                let sql = update_if_unchanged("ttl_ms = $4, expires_at_us = $5", &observed);
                let renewed = on_db!(tx.conn(), conn => bind_observed(sqlx::query(&sql), &observed)
                    .bind(record.ttl.millis())
                    .bind(record.expires_at_us)
                    .execute(conn)
                    .await?
                    .rows_affected());
                if renewed != 1 {
                    continue;
                }
                insert_event(tx.conn(), now, &record, "renewed", record.expires_at_us).await?;
                tx.commit().await?;
                return Ok(RenewResult::Renewed(record));
            }
            Err(StoreError::Contention {
                attempts: MAX_DECISIONS,
            })
        })
        .await
    }

    /// Ends the current grant early, unless `holder` and `token` are not the current grant
    /// (superseded meanwhile included). Releasing a grant that has already expired, or
    /// releasing twice, is fine.
    pub async fn release_lease(
        &self,
        name: &LeaseName,
        holder: &Holder,
        token: FencingToken,
    ) -> Result<ReleaseResult, StoreError> {
        retrying(|| async move {
            let mut tx = self.writer().begin().await?;
            for _ in 0..MAX_DECISIONS {
                let now = clock_us(tx.conn(), &*self.clock).await?;
                let current = read_lease(tx.conn(), name, "").await?;
                let observed = match (decide_release(current.as_ref(), holder, token), current) {
                    (ReleaseDecision::Release, Some(observed)) => observed,
                    (ReleaseDecision::AlreadyReleased, _) => {
                        tx.commit().await?;
                        return Ok(ReleaseResult::Released);
                    }
                    (_, current) => {
                        tx.commit().await?;
                        return Ok(ReleaseResult::Lost(current.map(|record| LeaseState {
                            record,
                            now_us: now,
                        })));
                    }
                };
                let ends_at_us = now.min(observed.expires_at_us);
                let sql = update_if_unchanged("released_at_us = $4, expires_at_us = $5", &observed);
                let released = on_db!(tx.conn(), conn => bind_observed(sqlx::query(&sql), &observed)
                    .bind(now)
                    .bind(ends_at_us)
                    .execute(conn)
                    .await?
                    .rows_affected());
                if released != 1 {
                    continue;
                }
                insert_event(tx.conn(), now, &observed, "released", ends_at_us).await?;
                tx.commit().await?;
                return Ok(ReleaseResult::Released);
            }
            Err(StoreError::Contention {
                attempts: MAX_DECISIONS,
            })
        })
        .await
    }

    /// The lease as it stands, with the authority's clock.
    pub async fn lease(&self, name: &LeaseName) -> Result<Option<LeaseState>, StoreError> {
        let mut tx = self.reader().begin().await?;
        let now = clock_us(tx.conn(), &*self.clock).await?;
        let record = read_lease(tx.conn(), name, "").await?;
        tx.commit().await?;
        Ok(record.map(|record| LeaseState {
            record,
            now_us: now,
        }))
    }

    /// A page of a lease's history, newest first: the newest `limit` events below `before`
    /// and at or before `until`, or with `after`, the oldest `limit` above it.
    pub async fn lease_history_page(
        &self,
        name: &LeaseName,
        query: &LeaseHistoryQuery,
    ) -> Result<Vec<LeaseEvent>, StoreError> {
        let events = history_page(
            self.reader(),
            "SELECT id, at_us, lease, event, holder, token, expires_at_us FROM lease_events \
             WHERE lease = $1",
            name.as_str(),
            "at_us",
            query,
            row_reader!(lease_event),
        )
        .await?;
        events.into_iter().map(history_event).collect()
    }

    /// The history of a lease, oldest first.
    pub async fn lease_events(
        &self,
        name: &LeaseName,
    ) -> Result<Vec<StoredLeaseEvent>, StoreError> {
        on_db!(self.reader(), pool => sqlx::query(
            "SELECT id, at_us, lease, event, holder, token, expires_at_us FROM lease_events \
             WHERE lease = $1 ORDER BY id",
        )
        .bind(name.as_str())
        .fetch_all(pool)
        .await?
        .iter()
        .map(lease_event)
        .collect())
    }
}

/// Decisions one operation makes on a lease before giving up: each one that could not be
/// committed lost to a change another committed meanwhile.
const MAX_DECISIONS: u32 = 64;

/// The one compare-and-set every lease decision commits through: the `UPDATE` (`set` uses `$4`
/// on) changes the row only while it is still the grant the decision was made on, the same
/// generation, expiry and released state.
///
/// Why all three: on PostgreSQL (READ COMMITTED) a decision reads the row without locking it.
/// An `UPDATE` that reaches a row another transaction is changing waits for that one's row lock
/// and then evaluates its `WHERE` against the newest committed version of the row, not the one
/// read. Comparing the generation alone let an acquire that had read an expired grant overwrite
/// the renewal of that same generation committed meanwhile: two holders, each told it held the
/// lease. Naming everything the decision depended on makes the `UPDATE` either apply to the very
/// grant decided on, or change nothing; then the operation reads again (a new statement sees the
/// newest commit) and decides afresh. Expiry needs no lock of its own: a grant lapses by the
/// clock, and the first decision that acts on the lapse goes through this same comparison. On
/// SQLite a write transaction whose snapshot went stale fails with `SQLITE_BUSY_SNAPSHOT` and is
/// run again from its start (`retrying`), so the comparison holds there by construction.
fn update_if_unchanged(set: &str, observed: &LeaseRecord) -> String {
    let released = if observed.released {
        "IS NOT NULL"
    } else {
        "IS NULL"
    };
    format!(
        "UPDATE leases SET {set} \
         WHERE name = $1 AND token = $2 AND expires_at_us = $3 AND released_at_us {released}"
    )
}

/// Binds `update_if_unchanged`'s `$1` to `$3`.
fn bind_observed<'q, DB: Database>(
    query: sqlx::query::Query<'q, DB, DB::Arguments<'q>>,
    observed: &'q LeaseRecord,
) -> sqlx::query::Query<'q, DB, DB::Arguments<'q>>
where
    &'q str: Encode<'q, DB> + Type<DB>,
    i64: Encode<'q, DB> + Type<DB>,
{
    query
        .bind(observed.name.as_str())
        .bind(observed.token.get())
        .bind(observed.expires_at_us)
}

/// Reads a lease inside `tx`; `lock` is appended to the query (a row lock where the dialect
/// has one).
pub(crate) async fn read_lease(
    conn: Conn<'_>,
    name: &LeaseName,
    lock: &str,
) -> Result<Option<LeaseRecord>, StoreError> {
    let sql = format!("SELECT {LEASE_COLUMNS} FROM leases WHERE name = $1{lock}");
    on_db!(conn, conn => sqlx::query(&sql)
        .bind(name.as_str())
        .fetch_optional(conn)
        .await?
        .map(|row| lease_record(&row))
        .transpose())
}

pub(crate) fn lease_record(row: &impl NativeRow) -> Result<LeaseRecord, StoreError> {
    let name: String = row.try_get("name")?;
    let holder: String = row.try_get("holder")?;
    let released_at: Option<i64> = row.try_get("released_at_us")?;
    Ok(LeaseRecord {
        name: LeaseName::parse(&name).map_err(|e| corrupt(e.0))?,
        holder: Holder::parse(&holder).map_err(|e| corrupt(e.0))?,
        token: FencingToken::new(row.try_get("token")?).map_err(|e| corrupt(e.0))?,
        ttl: Ttl::from_millis(row.try_get("ttl_ms")?).map_err(|e| corrupt(e.0))?,
        expires_at_us: row.try_get("expires_at_us")?,
        released: released_at.is_some(),
    })
}

pub(super) fn lease_event<R: NativeRow>(row: &R) -> Result<StoredLeaseEvent, StoreError> {
    let time =
        |column: &str| -> Result<DateTime<Utc>, StoreError> { time_from_us(row.try_get(column)?) };
    Ok(StoredLeaseEvent {
        id: row.try_get("id")?,
        at: time("at_us")?,
        lease: row.try_get("lease")?,
        event: row.try_get("event")?,
        holder: row.try_get("holder")?,
        token: row.try_get("token")?,
        expires_at: time("expires_at_us")?,
    })
}

/// The typed form of a stored event, as the API sends it.
pub(super) fn history_event(event: StoredLeaseEvent) -> Result<LeaseEvent, StoreError> {
    let change = LeaseChange::parse(&event.event)
        .ok_or_else(|| corrupt(format!("unknown lease event {:?}", event.event)))?;
    Ok(LeaseEvent {
        id: event.id,
        at: event.at,
        event: change,
        holder: event.holder,
        token: event.token,
        expires_at: event.expires_at,
    })
}

async fn insert_event(
    conn: Conn<'_>,
    now: i64,
    record: &LeaseRecord,
    event: &str,
    expires_at_us: i64,
) -> Result<(), sqlx::Error> {
    on_db!(conn, conn => sqlx::query(
        "INSERT INTO lease_events (at_us, lease, event, holder, token, expires_at_us) \
         VALUES ($1, $2, $3, $4, $5, $6)",
    )
    .bind(now)
    .bind(record.name.as_str())
    .bind(event)
    .bind(record.holder.as_str())
    .bind(record.token.get())
    .bind(expires_at_us)
    .execute(conn)
    .await
    .map(drop))
}

/// One page of a history table, newest first: `select` ends in `WHERE … = $1` (`key`); the
/// newest `limit` rows by id below `before` and with `time_column` at or before `until`, or
/// with `after`, the oldest `limit` above it.
pub(super) async fn history_page<T>(
    reader: Pool<'_>,
    select: &str,
    key: &str,
    time_column: &str,
    query: &LeaseHistoryQuery,
    read: RowReader<T>,
) -> Result<Vec<T>, StoreError> {
    let mut sql = select.to_owned();
    let mut next_param = 2;
    let until = format!("{time_column} <=");
    for (set, condition) in [
        (query.before.is_some(), "id <"),
        (query.after.is_some(), "id >"),
        (query.until_us.is_some(), until.as_str()),
    ] {
        if set {
            sql.push_str(&format!(" AND {condition} ${next_param}"));
            next_param += 1;
        }
    }
    let order = if query.after.is_some() { "ASC" } else { "DESC" };
    sql.push_str(&format!(" ORDER BY id {order} LIMIT ${next_param}"));
    let bounds = [query.before, query.after, query.until_us];
    let limit = i64::from(query.limit);
    let mut rows = on_db!(reader, pool => {
        let mut statement = sqlx::query(&sql).bind(key);
        for bound in bounds.into_iter().flatten() {
            statement = statement.bind(bound);
        }
        let rows = statement.bind(limit).fetch_all(pool).await?;
        rows.iter().map(|row| read.read(row)).collect::<Result<Vec<_>, _>>()?
    });
    if query.after.is_some() {
        rows.reverse();
    }
    Ok(rows)
}
