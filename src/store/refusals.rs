//! Refusals decided before the fence, aggregated: one row per interval, source and reason
//! (`domain::refusal`), written once per interval in one statement. Nothing here reads or
//! locks a resource's row or its chain head.

use super::batch::rows::to_json;
use super::error::corrupt;
use super::{Backend, Store, StoreError};
use crate::domain::refusal::{RefusalCount, RefusalReason, RefusalSample, RefusalSource};
use serde::Serialize;
use sqlx::any::AnyRow;
use sqlx::Row;

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

impl Store {
    /// Adds counts to their rows, creating those not there yet, in one statement.
    pub async fn record_refusals(&self, counts: &[RefusalCount]) -> Result<(), StoreError> {
        if counts.is_empty() {
            return Ok(());
        }
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
        let statement = match self.backend {
            Backend::Sqlite => SQLITE_RECORD,
            Backend::Postgres => POSTGRES_RECORD,
        };
        sqlx::query(statement)
            .bind(to_json(&rows)?)
            .execute(&self.writer)
            .await?;
        Ok(())
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
        let rows = sqlx::query(&sql)
            .bind(since_us.unwrap_or(i64::MIN))
            .bind(until_us.unwrap_or(i64::MAX))
            .fetch_all(&self.reader)
            .await?;
        rows.iter().map(refusal_count).collect()
    }
}

fn refusal_count(row: &AnyRow) -> Result<RefusalCount, StoreError> {
    let kind: String = row.try_get("source_kind")?;
    let name: String = row.try_get("source")?;
    let source = match kind.as_str() {
        "caller" => RefusalSource::Caller(name),
        "address" => RefusalSource::Address(
            name.parse()
                .map_err(|_| corrupt(format!("refusals: {name:?} is not an address")))?,
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
