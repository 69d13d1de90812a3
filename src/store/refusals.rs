//! Refusals decided before the fence, aggregated: one row per interval, source and reason
//! (`domain::refusal`), written in one transaction per flush. Nothing here reads or locks a
//! resource's row or its chain head.
//!
//! The bound on rows naming a source (`MAX_NAMED_REFUSAL_ROWS` per interval) is kept in the
//! table itself, not only in one flush: several flushes of one interval, or several daemons,
//! each name sources of their own. After adding its counts, a flush folds the smallest rows of
//! each interval it wrote beyond the bound into that interval's `other` rows, deleting them
//! with `RETURNING`, so that a row two daemons both fold is counted once.

use super::batch::rows::to_json;
use super::error::corrupt;
use super::native::{on_db, Conn, Native, NativeRow};
use super::{Store, StoreError};
use crate::domain::refusal::{
    keep_largest, RefusalCount, RefusalReason, RefusalSample, RefusalSource, MAX_NAMED_REFUSAL_ROWS,
};
use serde::Serialize;

/// A row of `refusals`, by column name.
#[derive(Serialize)]
struct RefusalRow<'a> {
    interval_start_us: i64,
    source_kind: &'static str,
    source: String,
    reason: &'static str,
    count: i64,
    first_at_us: i64,
    last_at_us: i64,
    sample_resource: Option<&'a str>,
    sample_request: &'a str,
    detail: &'a str,
}

/// Counts from several flushes (or daemons) of one interval add up in its row.
macro_rules! merge {
    ($least:literal, $greatest:literal) => {
        concat!(
            " ON CONFLICT (interval_start_us, source_kind, source, reason) DO UPDATE SET \
             count = refusals.count + excluded.count, \
             first_at_us = ",
            $least,
            "(refusals.first_at_us, excluded.first_at_us), last_at_us = ",
            $greatest,
            "(refusals.last_at_us, excluded.last_at_us)"
        )
    };
}

const SQLITE_RECORD: &str = concat!(
    "INSERT INTO refusals (interval_start_us, source_kind, source, reason, count, first_at_us, \
     last_at_us, sample_resource, sample_request, detail) \
     SELECT j.value ->> 'interval_start_us', j.value ->> 'source_kind', j.value ->> 'source', \
       j.value ->> 'reason', j.value ->> 'count', j.value ->> 'first_at_us', \
       j.value ->> 'last_at_us', j.value ->> 'sample_resource', j.value ->> 'sample_request', \
       j.value ->> 'detail' \
     FROM json_each($1) AS j WHERE true",
    merge!("MIN", "MAX")
);
const POSTGRES_RECORD: &str = concat!(
    "INSERT INTO refusals (interval_start_us, source_kind, source, reason, count, first_at_us, \
     last_at_us, sample_resource, sample_request, detail) \
     SELECT v.interval_start_us, v.source_kind, v.source, v.reason, v.count, v.first_at_us, \
       v.last_at_us, v.sample_resource, v.sample_request, v.detail \
     FROM jsonb_populate_recordset(NULL::refusals, $1::jsonb) AS v",
    merge!("LEAST", "GREATEST")
);

const COLUMNS: &str = "interval_start_us, source_kind, source, reason, count, first_at_us, \
     last_at_us, sample_resource, sample_request, detail";

/// Deletes the rows of interval `$1` naming a source beyond the `$2` with the largest counts,
/// answering them. Both backends take `LIMIT` with `OFFSET` (SQLite has no `LIMIT ALL`).
const FOLD_BEYOND: &str = "DELETE FROM refusals WHERE id IN (\
     SELECT id FROM refusals WHERE interval_start_us = $1 AND source_kind <> 'other' \
     ORDER BY count DESC, source_kind, source, reason LIMIT 9223372036854775807 OFFSET $2) \
     RETURNING interval_start_us, source_kind, source, reason, count, first_at_us, last_at_us, \
     sample_resource, sample_request, detail";

impl Store {
    /// Adds counts to their rows, creating those not there yet, then folds each interval's
    /// rows beyond `MAX_NAMED_REFUSAL_ROWS` into its `other` rows: in one transaction.
    pub async fn record_refusals(&self, counts: &[RefusalCount]) -> Result<(), StoreError> {
        if counts.is_empty() {
            return Ok(());
        }
        let mut tx = self.writer().begin().await?;
        add_refusals(tx.conn(), counts).await?;
        let mut intervals: Vec<i64> = counts.iter().map(|c| c.interval_start_us).collect();
        intervals.sort_unstable();
        intervals.dedup();
        let bound = i64::try_from(MAX_NAMED_REFUSAL_ROWS).unwrap_or(i64::MAX);
        for interval in intervals {
            let folded = on_db!(tx.conn(), conn => sqlx::query(FOLD_BEYOND)
                .bind(interval)
                .bind(bound)
                .fetch_all(conn)
                .await?
                .iter()
                .map(refusal_count)
                .collect::<Result<Vec<_>, _>>()?);
            if folded.is_empty() {
                continue;
            }
            // Named rows beyond a bound of none: all of them go to `other`, by reason.
            let others = keep_largest(folded, 0);
            add_refusals(tx.conn(), &others).await?;
        }
        tx.commit().await?;
        Ok(())
    }
}

/// Adds counts to their rows, creating those not there yet, in one statement.
async fn add_refusals(conn: Conn<'_>, counts: &[RefusalCount]) -> Result<(), StoreError> {
    let rows: Vec<RefusalRow<'_>> = counts
        .iter()
        .map(|count| RefusalRow {
            interval_start_us: count.interval_start_us,
            source_kind: count.source.kind(),
            source: count.source.name(),
            reason: count.reason.as_str(),
            count: count.count,
            first_at_us: count.first_at_us,
            last_at_us: count.last_at_us,
            sample_resource: count.sample.resource.as_deref(),
            sample_request: &count.sample.request,
            detail: &count.sample.detail,
        })
        .collect();
    let rows = to_json(&rows)?;
    match conn {
        Native::Sqlite(conn) => sqlx::query(SQLITE_RECORD)
            .bind(rows)
            .execute(conn)
            .await?
            .rows_affected(),
        Native::Postgres(conn) => sqlx::query(POSTGRES_RECORD)
            .bind(rows)
            .execute(conn)
            .await?
            .rows_affected(),
    };
    Ok(())
}

impl Store {
    /// Deletes the rows whose last refusal is older than `before_us` (`REFUSAL_RETENTION`);
    /// answers how many.
    pub async fn prune_refusals(&self, before_us: i64) -> Result<u64, StoreError> {
        let done = on_db!(self.writer(), pool => sqlx::query("DELETE FROM refusals WHERE last_at_us < $1")
            .bind(before_us).execute(pool).await?.rows_affected());
        Ok(done)
    }

    /// The rows whose refusals fall (at least partly) between `since_us` and `until_us`,
    /// oldest interval first.
    pub async fn refusals(
        &self,
        since_us: Option<i64>,
        until_us: Option<i64>,
    ) -> Result<Vec<RefusalCount>, StoreError> {
        let sql = format!(
            "SELECT {COLUMNS} FROM refusals WHERE last_at_us >= $1 AND first_at_us <= $2 \
             ORDER BY interval_start_us, source_kind, source, reason"
        );
        on_db!(self.reader(), pool => sqlx::query(&sql)
            .bind(since_us.unwrap_or(i64::MIN))
            .bind(until_us.unwrap_or(i64::MAX)).fetch_all(pool).await?.iter().map(refusal_count).collect())
    }
}

fn refusal_count<R: NativeRow>(row: &R) -> Result<RefusalCount, StoreError> {
    let kind: String = row.try_get("source_kind")?;
    let name: String = row.try_get("source")?;
    let source = match kind.as_str() {
        "caller" => RefusalSource::Caller(name),
        "address" => RefusalSource::Address(
            RefusalSource::parse_address(&name)
                .ok_or_else(|| corrupt(format!("refusals: {name:?} is not an address")))?,
        ),
        "unknown" => RefusalSource::Unknown,
        "other" => RefusalSource::Other,
        other => return Err(corrupt(format!("refusals: unknown source kind {other:?}"))),
    };
    let reason: String = row.try_get("reason")?;
    let reason = RefusalReason::parse(&reason)
        .ok_or_else(|| corrupt(format!("refusals: unknown reason {reason:?}")))?;
    Ok(RefusalCount {
        interval_start_us: row.try_get("interval_start_us")?,
        source,
        reason,
        count: row.try_get("count")?,
        first_at_us: row.try_get("first_at_us")?,
        last_at_us: row.try_get("last_at_us")?,
        sample: RefusalSample {
            resource: row.try_get("sample_resource")?,
            request: row.try_get("sample_request")?,
            detail: row.try_get("detail")?,
        },
    })
}
