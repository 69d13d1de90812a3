//! Group commit's PostgreSQL statements: a batch is one statement that applies it and commits,
//! when the daemon knows the state of its resources from its own earlier commits (`known`);
//! otherwise a transaction of three round trips (BEGIN, observe, apply) and its COMMIT.
//!
//! Observation takes no locks: a batch decides on what it read, or on what it knew, and its
//! application is a compare-and-set on all of that it changes. A resource is updated only at
//! the revision and chain head (position and hash) decided on, a `chain_heads` row advanced
//! only from the position observed, a resource or head observed missing inserted only if still
//! missing (see `chain_heads`), and, for a batch decided on known state, no operation it names
//! may have been recorded. The statement counts what it changed and hands the counts to
//! `fencewatch_batch_checked` (a migration's), which fails the statement on any shortfall:
//! a concurrent commit came between, nothing of the batch is applied, and it is decided again
//! on a fresh observation. The updates lock rows as they go, resources first and then chain
//! heads, each in key order (see `application`), so concurrent batches wait for each other
//! instead of deadlocking.
//!
//! The audit ids are drawn by the statement itself, after it has taken its transaction id (see
//! `tx::begin_audited`), and returned in order.
//!
//! Rows travel as one typed array per column (`pg_columns`), turned back into rows by `UNNEST`:
//! one statement text per shape, so it stays prepared, where a parameter per value took one
//! statement per power-of-two chunk of rows, with more round trips and executor start-ups
//! (docs/performance.md).

use super::dialect::{Application, Closing, Dialect, Opening};
use super::known::KnownResources;
use super::pg_application::{application, count_of};
use super::pg_columns::named_operations;
use super::plan::{Change, Plan};
use super::rows::encode;
use super::shared::{recorded_operation, Observed, ObservedResource};
use crate::domain::FencedWrite;
use crate::store::error::corrupt;
use crate::store::native::{Conn, Native};
use crate::store::StoreError;
use sqlx::PgConnection;
use std::collections::{BTreeSet, HashMap};

/// The batch's resources (`$1` their keys), their `chain_heads` rows and the operations its
/// idempotency keys name (`$2` resources, `$3` keys), as rows of one shape told apart by
/// `kind`: resource 0, chain head 1, operation 2.
const OBSERVE: &str = "\
    SELECT 0 AS kind, key AS resource, NULL::text AS idempotency_key, highest_token, \
        revision, highest_owner AS owner, chain_seq AS seq, chain_hash AS hash, \
        NULL::bigint AS token, NULL::text AS body_sha256, NULL::bigint AS status, \
        NULL::bigint AS audit_id \
      FROM resources WHERE key = ANY($1::text[]) \
    UNION ALL \
    SELECT 1, resource, NULL, NULL, NULL, NULL, seq, hash, NULL, NULL, NULL, NULL \
      FROM chain_heads WHERE resource = ANY($1::text[]) \
    UNION ALL \
    SELECT 2, o.resource, o.idempotency_key, o.highest_token, o.revision, NULL, NULL, NULL, \
        o.token, o.body_sha256, o.status, o.audit_id \
      FROM UNNEST($2::text[], $3::text[]) AS named (resource, key) JOIN operations AS o \
        ON o.resource = named.resource AND o.idempotency_key = named.key";

/// A row of `OBSERVE`: which columns it has depends on its `kind`.
#[derive(sqlx::FromRow)]
struct ObservedRow {
    kind: i32,
    resource: String,
    idempotency_key: Option<String>,
    highest_token: Option<i64>,
    revision: Option<i64>,
    owner: Option<String>,
    seq: Option<i64>,
    hash: Option<String>,
    token: Option<i64>,
    body_sha256: Option<String>,
    status: Option<i64>,
    audit_id: Option<i64>,
}

/// PostgreSQL's dialect of the batch engine, for batches it observes in a transaction; a batch
/// decided on known state is applied by `apply` alone.
pub(super) struct Postgres<'k> {
    /// The engine's knowledge, which every segment applied updates.
    pub known: &'k KnownResources,
}

impl Dialect for Postgres<'_> {
    type Connection = PgConnection;
    /// The statement that applies a batch draws its ids.
    type Position = ();

    async fn observe(
        &self,
        conn: &mut PgConnection,
        _opening: Opening,
        keys: &BTreeSet<&str>,
        writes: &[FencedWrite],
    ) -> Result<Observed<()>, StoreError> {
        observe(conn, keys, writes).await
    }

    fn native(conn: &mut PgConnection) -> Conn<'_> {
        Native::Postgres(conn)
    }

    /// The compare-and-set counts only what it changes itself.
    fn expect_changes(_position: &mut (), _rows: i64) {}

    async fn apply(
        &self,
        conn: &mut PgConnection,
        _position: (),
        plan: &Plan<'_>,
        _closing: Closing<'_>,
    ) -> Result<Application, StoreError> {
        apply(conn, plan, DecidedOn::Observed).await
    }

    /// Before the commit: should it fail, the batch forgets them again.
    fn applied(&self, changes: &[Change<'_>]) {
        self.known.remember(changes);
    }
}

async fn observe(
    conn: &mut PgConnection,
    keys: &BTreeSet<&str>,
    writes: &[FencedWrite],
) -> Result<Observed<()>, StoreError> {
    let named: Vec<(&str, &str)> = writes.iter().filter_map(FencedWrite::operation).collect();
    let (named_resources, named_keys) = named_operations(&named);
    let rows: Vec<ObservedRow> = sqlx::query_as(OBSERVE)
        .bind(keys.iter().copied().collect::<Vec<&str>>())
        .bind(named_resources)
        .bind(named_keys)
        .fetch_all(&mut *conn)
        .await?;
    let mut observed = Observed {
        resources: HashMap::new(),
        operations: HashMap::new(),
        unwritten_heads: Vec::new(),
        audit: (),
    };
    for row in rows {
        let missing = || corrupt("an observed row lacks a column its kind has");
        match row.kind {
            0 => {
                let chain = (row.seq.ok_or_else(missing)?, row.hash.ok_or_else(missing)?);
                let state = ObservedResource::decode(
                    row.highest_token.ok_or_else(missing)?,
                    row.revision.ok_or_else(missing)?,
                    row.owner,
                    chain,
                )?;
                observed.resources.insert(row.resource, state);
            }
            1 => observed.unwritten_heads.push((
                row.resource,
                row.seq.ok_or_else(missing)?,
                row.hash.ok_or_else(missing)?,
            )),
            2 => {
                let recorded = recorded_operation(
                    row.token.ok_or_else(missing)?,
                    row.body_sha256.ok_or_else(missing)?,
                    row.status.ok_or_else(missing)?,
                    row.revision.ok_or_else(missing)?,
                    row.highest_token.ok_or_else(missing)?,
                    row.audit_id.ok_or_else(missing)?,
                )?;
                let key = row.idempotency_key.ok_or_else(missing)?;
                observed.operations.insert((row.resource, key), recorded);
            }
            other => return Err(corrupt(format!("an observed row of kind {other}"))),
        }
    }
    Ok(observed)
}

/// What a batch was decided on.
pub(super) enum DecidedOn<'a> {
    /// An observation in the same transaction.
    Observed,
    /// The resources' state as this daemon's own commits left it, with no observation; the
    /// operations the batch names are assumed never recorded, which the statement checks.
    Known { writes: &'a [FencedWrite] },
}

/// Applies the batch as a compare-and-set on what it was decided on. Outside a transaction the
/// statement commits itself; either way nothing is applied if something was no longer as
/// decided on (`Application::Changed`), and in a transaction it must then be rolled back.
pub(super) async fn apply(
    conn: &mut PgConnection,
    plan: &Plan<'_>,
    decided_on: DecidedOn<'_>,
) -> Result<Application, StoreError> {
    // Encoded with the rows' places in the batch for ids: the statement swaps in those it draws.
    let places: Vec<i64> = (1..).take(plan.entries.len()).collect();
    let rows = encode(plan, &places);
    let planned = [
        rows.audit.len(),
        rows.updates.len(),
        rows.inserts.len(),
        rows.head_advances.len(),
        rows.head_starts.len(),
    ];
    let must_be_unrecorded: Vec<(&str, &str)> = match decided_on {
        DecidedOn::Known { writes } => writes.iter().filter_map(FencedWrite::operation).collect(),
        DecidedOn::Observed => Vec::new(),
    };
    let (sql, parts) = application(&rows, !must_be_unrecorded.is_empty());
    let mut query = sqlx::query(&sql);
    for count in planned {
        query = query.bind(count_of(count));
    }
    for part in parts {
        query = part.bind(&rows, query);
    }
    if !must_be_unrecorded.is_empty() {
        let (resources, keys) = named_operations(&must_be_unrecorded);
        query = query.bind(resources).bind(keys);
    }
    match query.fetch_one(&mut *conn).await {
        Ok(row) => Ok(Application::Applied {
            ids: sqlx::Row::try_get(&row, "ids")?,
            ticket: None,
        }),
        Err(sqlx::Error::Database(error)) if error.code().as_deref() == Some(NOT_AS_OBSERVED) => {
            // The ids it drew, from the error's detail; should they be unreadable, the live
            // tail proves them final from snapshots instead.
            let drawn_ids = error
                .try_downcast_ref::<sqlx::postgres::PgDatabaseError>()
                .and_then(|error| error.detail())
                .map(drawn_ids)
                .unwrap_or_default();
            Ok(Application::Changed { drawn_ids })
        }
        Err(error) => Err(error.into()),
    }
}

/// The ids in `fencewatch_batch_checked`'s detail: numbers separated by commas.
fn drawn_ids(detail: &str) -> Vec<i64> {
    detail
        .split(',')
        .map_while(|id| id.trim().parse().ok())
        .collect()
}

/// The SQLSTATE of `fencewatch_batch_checked`'s error.
const NOT_AS_OBSERVED: &str = "FW409";

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_ids_a_failed_check_drew_are_read_from_its_detail() {
        assert_eq!(drawn_ids("17,18,20"), [17, 18, 20]);
        assert_eq!(drawn_ids(""), Vec::<i64>::new());
        assert_eq!(
            drawn_ids("17,x"),
            [17],
            "what follows an unreadable id is dropped"
        );
    }
}
