//! Reading a fence's audit back, and sealing SQLite's: the hashes SQLite cannot compute in SQL
//! are filled in here, in seq order per scope, with the same `domain::fence_audit::row_hash`
//! PostgreSQL's `row_hash()` matches.

use super::{OwnDbError, PgFence, SealReport, SqliteFence};
use crate::domain::fence_audit::{genesis, seal_scope, FenceAuditRow, ScopeHead};
use crate::domain::Xids;
use chrono::{DateTime, Utc};
use sqlx::Connection;

/// The columns both backends read, `at` as each stores it.
type RawRow = (
    i64,
    Option<String>,
    String,
    String,
    Option<i64>,
    i64,
    Option<String>,
    Option<String>,
    Option<String>,
    Option<String>,
    Option<String>,
    i64,
    Option<String>,
    Option<String>,
);

/// How a row's texts are read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fields {
    /// As stored: what the audit tools and the seal read.
    Whole,
    /// Each text cut to [`LIVE_CHARS`] characters (and `…`) by the database, before it is
    /// sent: what a watcher publishes. A writer of a watched table chooses what its rows hold
    /// (an owner of 20 MB, say), and the live side keeps rows in memory; the audit stays as
    /// it is.
    Clipped,
}

/// The most characters of a text a watcher takes in.
pub const LIVE_CHARS: usize = 512;

/// The columns after `id, at`, as `fields` says; PostgreSQL keeps the hashes as 32 bytes,
/// read as the hex the chain encodes.
fn columns_after_at(postgres: bool, fields: Fields) -> String {
    let text = |column: &str| match fields {
        Fields::Whole => column.to_owned(),
        Fields::Clipped => format!(
            "CASE WHEN length({column}) > {LIVE_CHARS} \
                  THEN substr({column}, 1, {LIVE_CHARS}) || '…' ELSE {column} END"
        ),
    };
    let hash = |column: &str| match postgres {
        true => format!("encode({column}, 'hex')"),
        false => column.to_owned(),
    };
    format!(
        "{}, outcome, token, highest_token, {}, {}, {}, {}, {}, seq, {}, {}",
        text("resource"),
        text("idempotency_key"),
        text("owner"),
        text("lease"),
        text("detail"),
        text("table_name"),
        hash("prev_hash"),
        hash("hash"),
    )
}

/// Builds a row; `at` is microseconds since the epoch (PostgreSQL) or RFC 3339 text (SQLite).
fn to_row(raw: RawRow, at: DateTime<Utc>) -> FenceAuditRow {
    let (
        id,
        _,
        resource,
        outcome,
        token,
        highest_token,
        idempotency_key,
        owner,
        lease,
        detail,
        table_name,
        seq,
        prev_hash,
        hash,
    ) = raw;
    FenceAuditRow {
        id,
        at,
        resource,
        outcome,
        token,
        highest_token,
        idempotency_key,
        owner,
        lease,
        detail,
        table_name,
        seq,
        prev_hash,
        hash,
    }
}

fn parse_at(id: i64, text: Option<&str>) -> Result<DateTime<Utc>, OwnDbError> {
    text.and_then(|text| DateTime::parse_from_rfc3339(text).ok())
        .map(|at| at.with_timezone(&Utc))
        .ok_or_else(|| {
            OwnDbError::Invalid(format!(
                "audit row {id} has a time that is not RFC 3339: {text:?}"
            ))
        })
}

/// Which page of the audit: the rows after an id, in id order, or those before one, newest
/// first.
#[derive(Debug, Clone, Copy)]
pub(super) enum Page {
    After(i64),
    Before(i64),
}

impl Page {
    /// The WHERE and ORDER BY of the page, with its id as `$1`: both served by the primary key.
    fn sql(self) -> &'static str {
        match self {
            Page::After(_) => "id > $1 ORDER BY id",
            Page::Before(_) => "id < $1 ORDER BY id DESC",
        }
    }

    fn id(self) -> i64 {
        match self {
            Page::After(id) | Page::Before(id) => id,
        }
    }
}

pub(super) async fn postgres_page<'e>(
    executor: impl sqlx::PgExecutor<'e>,
    schema: &str,
    page: Page,
    limit: u32,
    fields: Fields,
) -> Result<Vec<FenceAuditRow>, OwnDbError> {
    let sql = format!(
        "SELECT id, ((extract(epoch FROM at) * 1000000)::bigint)::text, {} \
           FROM {}.audit WHERE {} LIMIT $2",
        columns_after_at(true, fields),
        super::quote::ident(schema),
        page.sql()
    );
    let raw: Vec<RawRow> = sqlx::query_as(&sql)
        .bind(page.id())
        .bind(i64::from(limit))
        .fetch_all(executor)
        .await?;
    raw.into_iter().map(postgres_row).collect()
}

/// A row as PostgreSQL gives it, `at` in microseconds since the epoch.
fn postgres_row(raw: RawRow) -> Result<FenceAuditRow, OwnDbError> {
    let micros = raw.1.as_deref().and_then(|us| us.parse::<i64>().ok());
    let at = micros
        .and_then(DateTime::from_timestamp_micros)
        .ok_or_else(|| OwnDbError::Invalid(format!("audit row {} has no time", raw.0)))?;
    Ok(to_row(raw, at))
}

/// The rows among `ids`, in id order, their texts as `fields` says.
pub(super) async fn postgres_rows(
    pg: &PgFence,
    ids: &[i64],
    fields: Fields,
) -> Result<Vec<FenceAuditRow>, OwnDbError> {
    let sql = format!(
        "SELECT id, ((extract(epoch FROM at) * 1000000)::bigint)::text, {} \
           FROM {}.audit WHERE id = ANY($1) ORDER BY id",
        columns_after_at(true, fields),
        super::quote::ident(pg.schema())
    );
    let raw: Vec<RawRow> = sqlx::query_as(&sql).bind(ids).fetch_all(pg.pool()).await?;
    raw.into_iter().map(postgres_row).collect()
}

/// The ids among the `window` ids up to `through` that no row has.
pub(super) async fn postgres_missing_ids(
    pg: &PgFence,
    through: i64,
    window: usize,
) -> Result<Vec<i64>, OwnDbError> {
    let window = i64::try_from(window).unwrap_or(i64::MAX);
    let sql = format!(
        "SELECT s.id FROM generate_series(greatest($1 - $2 + 1, 1), $1) AS s(id) \
          WHERE NOT EXISTS (SELECT 1 FROM {}.audit a WHERE a.id = s.id) ORDER BY s.id",
        super::quote::ident(pg.schema())
    );
    Ok(sqlx::query_scalar(&sql)
        .bind(through)
        .bind(window)
        .fetch_all(pg.pool())
        .await?)
}

/// The current snapshot's bounds (see `OwnDb::snapshot`).
pub(super) async fn postgres_snapshot(pg: &PgFence) -> Result<Xids, OwnDbError> {
    let (xmin, xmax): (i64, i64) = sqlx::query_as(
        "SELECT pg_snapshot_xmin(s)::text::bigint, pg_snapshot_xmax(s)::text::bigint \
           FROM pg_current_snapshot() AS s",
    )
    .fetch_one(pg.pool())
    .await?;
    Ok(Xids { xmin, xmax })
}

pub(super) async fn sqlite_page<'e>(
    executor: impl sqlx::SqliteExecutor<'e>,
    page: Page,
    limit: u32,
    fields: Fields,
) -> Result<Vec<FenceAuditRow>, OwnDbError> {
    let raw: Vec<RawRow> = sqlx::query_as(&format!(
        "SELECT id, at, {} FROM fencewatch_audit WHERE {} LIMIT $2",
        columns_after_at(false, fields),
        page.sql()
    ))
    .bind(page.id())
    .bind(i64::from(limit))
    .fetch_all(executor)
    .await?;
    raw.into_iter()
        .map(|raw| {
            let at = parse_at(raw.0, raw.1.as_deref())?;
            Ok(to_row(raw, at))
        })
        .collect()
}

/// Every audit row, in id order, and every scope's row, read in one snapshot (a decision
/// committed between the two reads would otherwise look like a head its chain does not have).
pub(super) async fn postgres_snapshot_of_chains(
    pg: &PgFence,
) -> Result<(Vec<FenceAuditRow>, Vec<ScopeHead>), OwnDbError> {
    let mut conn = pg.pool().acquire().await?;
    let mut tx = conn
        .begin_with("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY")
        .await?;
    let heads: Vec<(String, i64, i64, String)> = sqlx::query_as(&format!(
        "SELECT scope, highest_token, head_seq, encode(head_hash, 'hex') FROM {}.scopes",
        super::quote::ident(pg.schema())
    ))
    .fetch_all(&mut *tx)
    .await?;
    let mut rows = Vec::new();
    loop {
        let after = rows.last().map_or(0, |row: &FenceAuditRow| row.id);
        let page = postgres_page(
            &mut *tx,
            pg.schema(),
            Page::After(after),
            5_000,
            Fields::Whole,
        )
        .await?;
        if page.is_empty() {
            break;
        }
        rows.extend(page);
    }
    tx.commit().await?;
    let heads = heads
        .into_iter()
        .map(|(scope, highest_token, head_seq, hash)| ScopeHead {
            scope,
            highest_token,
            head_seq,
            head_hash: Some(hash),
            sealed: None,
        })
        .collect();
    Ok((rows, heads))
}

/// SQLite: the same, in one read transaction.
pub(super) async fn sqlite_snapshot_of_chains(
    sqlite: &SqliteFence,
) -> Result<(Vec<FenceAuditRow>, Vec<ScopeHead>), OwnDbError> {
    let mut conn = sqlite.pool().acquire().await?;
    let mut tx = conn.begin().await?;
    type Head = (String, i64, i64, i64, Option<String>);
    let heads: Vec<Head> = sqlx::query_as(
        "SELECT scope, highest_token, head_seq, sealed_seq, sealed_hash FROM fencewatch_scopes",
    )
    .fetch_all(&mut *tx)
    .await?;
    let mut rows = Vec::new();
    loop {
        let after = rows.last().map_or(0, |row: &FenceAuditRow| row.id);
        let page = sqlite_page(&mut *tx, Page::After(after), 5_000, Fields::Whole).await?;
        if page.is_empty() {
            break;
        }
        rows.extend(page);
    }
    tx.commit().await?;
    let heads = heads
        .into_iter()
        .map(
            |(scope, highest_token, head_seq, sealed_seq, sealed_hash)| ScopeHead {
                scope,
                highest_token,
                head_seq,
                head_hash: None,
                sealed: Some((sealed_seq, sealed_hash)),
            },
        )
        .collect();
    Ok((rows, heads))
}

/// Unsealed rows read at a time by the seal.
const SEAL_PAGE: u32 = 16;

/// Seals `chain`, unsealed rows of one scope in seq order, going on from the scope's sealed
/// head (kept in its row).
async fn seal_chain(
    tx: &mut sqlx::SqliteConnection,
    chain: &[FenceAuditRow],
) -> Result<(), OwnDbError> {
    let first = &chain[0];
    let (sealed_seq, sealed_hash): (i64, Option<String>) =
        sqlx::query_as("SELECT sealed_seq, sealed_hash FROM fencewatch_scopes WHERE scope = $1")
            .bind(&first.resource)
            .fetch_optional(&mut *tx)
            .await?
            .unwrap_or((0, None));
    let head = match (sealed_seq, sealed_hash) {
        (0, _) if first.seq == 1 => genesis().to_owned(),
        (seq, Some(hash)) if seq + 1 == first.seq => hash,
        (seq, _) => {
            return Err(OwnDbError::Unsealable {
                scope: first.resource.clone(),
                reason: format!(
                    "row {} at seq {} follows seq {seq}, the last sealed",
                    first.id, first.seq
                ),
            })
        }
    };
    for window in chain.windows(2) {
        if window[1].seq != window[0].seq + 1 {
            return Err(OwnDbError::Unsealable {
                scope: first.resource.clone(),
                reason: format!(
                    "row {} at seq {} follows seq {}",
                    window[1].id, window[1].seq, window[0].seq
                ),
            });
        }
    }
    let mut last = None;
    for (id, prev_hash, hash) in seal_scope(&head, chain) {
        sqlx::query(
            "UPDATE fencewatch_audit SET prev_hash = $1, hash = $2 WHERE id = $3 AND hash IS NULL",
        )
        .bind(prev_hash)
        .bind(&hash)
        .bind(id)
        .execute(&mut *tx)
        .await?;
        last = Some(hash);
    }
    sqlx::query("UPDATE fencewatch_scopes SET sealed_seq = $1, sealed_hash = $2 WHERE scope = $3")
        .bind(chain.last().map_or(first.seq, |row| row.seq))
        .bind(last)
        .bind(&first.resource)
        .execute(&mut *tx)
        .await?;
    Ok(())
}

/// Seals every unsealed row in one write transaction: SQLite's single writer means no row is
/// appended meanwhile, and a reader sees either none or all of a seal.
pub(super) async fn seal(sqlite: &SqliteFence) -> Result<SealReport, OwnDbError> {
    let mut conn = sqlite.pool().acquire().await?;
    let mut tx = conn.begin_with("BEGIN IMMEDIATE").await?;
    if super::migrate::sqlite_applied(&mut tx).await?.is_empty() {
        return Err(OwnDbError::Invalid(format!(
            "no fence in {}: nothing to seal",
            sqlite.shown_url()
        )));
    }
    let mut report = SealReport::default();
    let mut scopes = std::collections::HashSet::new();
    // A few rows at a time: a row holds whatever its writer put in it (an owner of megabytes).
    loop {
        let raw: Vec<RawRow> = sqlx::query_as(&format!(
            "SELECT id, at, {} FROM fencewatch_audit WHERE hash IS NULL \
              ORDER BY resource, seq LIMIT {SEAL_PAGE}",
            columns_after_at(false, Fields::Whole)
        ))
        .fetch_all(&mut *tx)
        .await?;
        if raw.is_empty() {
            break;
        }
        let mut rows = Vec::with_capacity(raw.len());
        for raw in raw {
            let at = parse_at(raw.0, raw.1.as_deref())?;
            rows.push(to_row(raw, at));
        }
        for chain in rows.chunk_by(|a, b| a.resource == b.resource) {
            seal_chain(&mut tx, chain).await?;
            report.sealed += chain.len();
            scopes.insert(chain[0].resource.clone());
        }
    }
    report.scopes = scopes.len();
    tx.commit().await?;
    Ok(report)
}
