//! PostgreSQL's audit is partitioned by day of `at_us`, UTC (migration 20261203000023): the
//! daemon creates the coming days' partitions, and a prune drops whole days instead of deleting
//! their rows (with autovacuum off, deleted rows stay as dead space). SQLite's audit is one
//! table; everything here leaves it alone.
//!
//! A row for a day without a partition lands in `audit_default`: a daemon's clock far from the
//! others', or a day whose partition could not be made in time. Nothing fails for it.

use super::native::Native;
use super::{Store, StoreError};
use sqlx::postgres::{PgConnection, PgPool};
use sqlx::Connection;
use std::collections::HashSet;
use std::time::Duration;

/// A partition's span.
const DAY_US: i64 = 86_400_000_000;
/// Partitions made ahead of the store's clock, besides today's: the retention task makes them
/// again at least hourly, so a day's partition exists days before its first row.
const DAYS_AHEAD: i64 = 3;
/// How long partition maintenance waits for a table lock before leaving the work to its next
/// pass. Creating or detaching a partition locks the whole audit, and writes queue behind a
/// lock that is waited for: a long reader (`audit verify`, `export`) must not stall them.
const LOCK_WAIT: Duration = Duration::from_millis(500);

/// One day's partition of the audit: rows with `from_us <= at_us < to_us`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct DayPartition {
    /// Qualified and quoted, as a statement names it.
    name: String,
    pub(crate) from_us: i64,
    pub(crate) to_us: i64,
}

/// What became of one day's partition when it was asked for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PartitionMade {
    Created,
    Existed,
    /// `audit_default` already holds rows of that day, so a partition for it cannot be made
    /// (PostgreSQL would refuse it); the day's rows keep going there and are pruned row by row.
    /// Moving them out would leave as many dead rows in `audit_default`, which is never dropped.
    HeldByDefault,
    /// Another session held the audit's lock: made on a later pass.
    Busy,
}

/// The partitions asked for at one pass, by what became of them.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct PartitionsAhead {
    pub created: u32,
    pub existed: u32,
    pub held_by_default: u32,
    pub busy: u32,
}

/// What a prune of whole partitions did.
#[derive(Debug, Default)]
pub(crate) struct PartitionPrune {
    /// Rows gone with the dropped partitions, and rows of their chains found in later ones.
    pub(crate) rows: u64,
    /// Resources whose chains lost rows.
    pub(crate) resources: HashSet<String>,
    /// Rows older than this are left to the row-by-row prune: where a partition could not be
    /// dropped this pass, its rows wait for the next instead of being deleted one by one.
    pub(crate) rows_before_us: i64,
}

/// What became of one partition at a prune.
enum Dropped {
    Dropped { rows: u64, resources: Vec<String> },
    Busy,
}

impl Store {
    /// Makes the audit's partitions for today and the next days by the store's clock (the
    /// audit's times are the writing daemon's), on PostgreSQL. Safe with several daemons at
    /// once: each day is made under a lock of its own, and a day another daemon made is found.
    pub async fn ensure_audit_partitions(&self) -> Result<PartitionsAhead, StoreError> {
        let today = self.clock.now_us().div_euclid(DAY_US);
        self.ensure_audit_partitions_of_days(today, today.saturating_add(DAYS_AHEAD))
            .await
    }

    /// Makes the audit's partitions for the days holding `from_us ..= to_us`, on PostgreSQL:
    /// for rows written into the past in bulk (`bench --fill`), which would otherwise all land
    /// in `audit_default`.
    pub async fn ensure_audit_partitions_between(
        &self,
        from_us: i64,
        to_us: i64,
    ) -> Result<PartitionsAhead, StoreError> {
        self.ensure_audit_partitions_of_days(from_us.div_euclid(DAY_US), to_us.div_euclid(DAY_US))
            .await
    }

    async fn ensure_audit_partitions_of_days(
        &self,
        first_day: i64,
        last_day: i64,
    ) -> Result<PartitionsAhead, StoreError> {
        let Native::Postgres(pool) = self.writer() else {
            return Ok(PartitionsAhead::default());
        };
        let mut made = PartitionsAhead::default();
        // One connection for every day: a daemon starting does not open more than it needs.
        let mut conn = pool.acquire().await?;
        for day in first_day..=last_day {
            let Some(partition) = DayPartition::of_day(day) else {
                continue;
            };
            match create(&mut conn, &partition).await? {
                PartitionMade::Created => made.created += 1,
                PartitionMade::Existed => made.existed += 1,
                PartitionMade::HeldByDefault => made.held_by_default += 1,
                PartitionMade::Busy => made.busy += 1,
            }
        }
        Ok(made)
    }

    /// Drops, oldest first, each audit partition wholly older than `before_us`, behind
    /// checkpoints (see `drop_partition`); stops at the first it cannot lock in time. On SQLite,
    /// nothing: every row is left to the row-by-row prune.
    pub(crate) async fn prune_audit_partitions(
        &self,
        before_us: i64,
    ) -> Result<PartitionPrune, StoreError> {
        let mut pruned = PartitionPrune {
            rows_before_us: before_us,
            ..PartitionPrune::default()
        };
        let Native::Postgres(pool) = self.writer() else {
            return Ok(pruned);
        };
        let mut partitions: Vec<DayPartition> = list(pool)
            .await?
            .into_iter()
            .filter(|p| p.to_us <= before_us)
            .collect();
        partitions.sort_by_key(|p| p.from_us);
        let mut conn = pool.acquire().await?;
        for partition in partitions {
            match drop_partition(
                &mut conn,
                &partition,
                self.clock.now_us(),
                |resource, seq, hash| self.sign_start(resource, seq, hash),
            )
            .await?
            {
                Dropped::Dropped { rows, resources } => {
                    pruned.rows += rows;
                    pruned.resources.extend(resources);
                }
                Dropped::Busy => {
                    pruned.rows_before_us = partition.from_us;
                    break;
                }
            }
        }
        Ok(pruned)
    }
}

impl DayPartition {
    /// Day `day` since the epoch, named `audit_YYYYMMDD` as the migration names them; none
    /// outside years 1970 to 9999 (their rows stay in `audit_default`).
    fn of_day(day: i64) -> Option<DayPartition> {
        let from_us = day.checked_mul(DAY_US)?;
        let date = chrono::DateTime::from_timestamp(day.checked_mul(86_400)?, 0)?;
        let year = chrono::Datelike::year(&date);
        if !(1970..=9999).contains(&year) {
            return None;
        }
        Some(DayPartition {
            name: quote(&format!("audit_{}", date.format("%Y%m%d"))),
            from_us,
            to_us: from_us.checked_add(DAY_US)?,
        })
    }
}

/// `name` as a quoted identifier.
fn quote(name: &str) -> String {
    format!("\"{}\"", name.replace('"', "\"\""))
}

/// The bounds of a range partition on one bigint column, from PostgreSQL's text of them
/// (`FOR VALUES FROM ('1764720000000000') TO ('1764806400000000')`); none for the default or
/// an unbounded side (MINVALUE, MAXVALUE), which a prune never drops.
fn bounds(text: &str) -> Option<(i64, i64)> {
    let mut numbers = text
        .split(|c: char| !(c.is_ascii_digit() || c == '-'))
        .filter(|part| !part.is_empty())
        .map(str::parse::<i64>);
    match (numbers.next(), numbers.next(), numbers.next()) {
        (Some(Ok(from)), Some(Ok(to)), None) => Some((from, to)),
        _ => None,
    }
}

fn sql_state(error: &sqlx::Error) -> Option<String> {
    match error {
        sqlx::Error::Database(db) => db.code().map(|code| code.into_owned()),
        _ => None,
    }
}

/// lock_not_available: `LOCK_WAIT` passed.
fn is_lock_wait(error: &sqlx::Error) -> bool {
    sql_state(error).as_deref() == Some("55P03")
}

/// The audit's partitions with both bounds, the default left out.
async fn list(pool: &PgPool) -> Result<Vec<DayPartition>, StoreError> {
    let rows: Vec<(String, String, String)> = sqlx::query_as(
        "SELECT n.nspname::text, c.relname::text, pg_get_expr(c.relpartbound, c.oid) \
         FROM pg_inherits AS i JOIN pg_class AS c ON c.oid = i.inhrelid \
         JOIN pg_namespace AS n ON n.oid = c.relnamespace \
         WHERE i.inhparent = 'audit'::regclass",
    )
    .fetch_all(pool)
    .await?;
    Ok(rows
        .into_iter()
        .filter_map(|(schema, table, bound)| {
            let (from_us, to_us) = bounds(&bound)?;
            Some(DayPartition {
                name: format!("{}.{}", quote(&schema), quote(&table)),
                from_us,
                to_us,
            })
        })
        .collect())
}

/// Makes one day's partition unless it exists or `audit_default` holds rows of that day.
async fn create(
    conn: &mut PgConnection,
    partition: &DayPartition,
) -> Result<PartitionMade, StoreError> {
    let mut tx = conn.begin().await?;
    let made = create_in(&mut tx, partition).await;
    match made {
        Ok(PartitionMade::Created) => {
            tx.commit().await?;
            Ok(PartitionMade::Created)
        }
        Ok(other) => {
            tx.rollback().await?;
            Ok(other)
        }
        Err(error) => {
            tx.rollback().await?;
            match sql_state(&error).as_deref() {
                Some("55P03") => Ok(PartitionMade::Busy),
                // check_violation: a row of that day reached `audit_default` after it was looked
                // at, before the partition took its lock.
                Some("23514") => Ok(PartitionMade::HeldByDefault),
                _ => Err(error.into()),
            }
        }
    }
}

async fn create_in(
    conn: &mut PgConnection,
    partition: &DayPartition,
) -> Result<PartitionMade, sqlx::Error> {
    // Daemons making the same day take turns (the key is per schema: one database may hold
    // several daemons' schemas); the later one then finds it made.
    sqlx::query("SELECT pg_advisory_xact_lock(hashtext(current_schema() || '.audit partitions'))")
        .execute(&mut *conn)
        .await?;
    let existing: bool = sqlx::query_scalar(
        "SELECT EXISTS (SELECT 1 FROM pg_inherits AS i JOIN pg_class AS c ON c.oid = i.inhrelid \
         WHERE i.inhparent = 'audit'::regclass AND c.relispartition \
         AND pg_get_expr(c.relpartbound, c.oid) = format('FOR VALUES FROM (%L) TO (%L)', $1::bigint, $2::bigint))",
    )
    .bind(partition.from_us)
    .bind(partition.to_us)
    .fetch_one(&mut *conn)
    .await?;
    if existing {
        return Ok(PartitionMade::Existed);
    }
    let held: bool = sqlx::query_scalar(
        "SELECT EXISTS (SELECT 1 FROM audit_default WHERE at_us >= $1 AND at_us < $2)",
    )
    .bind(partition.from_us)
    .bind(partition.to_us)
    .fetch_one(&mut *conn)
    .await?;
    if held {
        return Ok(PartitionMade::HeldByDefault);
    }
    set_lock_wait(conn).await?;
    sqlx::query(&format!(
        "CREATE TABLE IF NOT EXISTS {} PARTITION OF audit FOR VALUES FROM ({}) TO ({})",
        partition.name, partition.from_us, partition.to_us
    ))
    .execute(&mut *conn)
    .await?;
    Ok(PartitionMade::Created)
}

async fn set_lock_wait(conn: &mut PgConnection) -> Result<(), sqlx::Error> {
    sqlx::query(&format!(
        "SET LOCAL lock_timeout = {}",
        LOCK_WAIT.as_millis()
    ))
    .execute(&mut *conn)
    .await?;
    Ok(())
}

/// Drops one partition wholly older than the cut-off, in one transaction that first takes the
/// prune lock (`audit_prune_lock`, as `Store::prune_chain` does), so that it moves checkpoints
/// on what other prunes left:
/// - the partition is locked against writes (reads go on): a daemon whose clock is behind by
///   more than the retention could still be adding rows to it;
/// - each of its chains gets a checkpoint at its last row there (highest position and its hash),
///   only ever forward;
/// - rows of those chains at or before their checkpoint in a later partition (written by a
///   daemon whose clock was ahead) are deleted: a chain must start right after its checkpoint.
///   They come before the checkpoint's row in id order (a chain's ids grow with its positions),
///   so only ids up to the partition's highest are looked at, which the id index finds at once;
/// - then it is detached and dropped: no row is deleted, and no dead row is left.
async fn drop_partition(
    conn: &mut PgConnection,
    partition: &DayPartition,
    now_us: i64,
    sign: impl Fn(&str, i64, &str) -> Option<String>,
) -> Result<Dropped, StoreError> {
    let mut tx = conn.begin().await?;
    match drop_in(&mut tx, partition, now_us, sign).await {
        Ok(dropped) => {
            tx.commit().await?;
            Ok(dropped)
        }
        Err(error) if is_lock_wait(&error) => {
            tx.rollback().await?;
            tracing::info!(
                partition = %partition.name,
                "the audit was busy: its partition is dropped on a later prune"
            );
            Ok(Dropped::Busy)
        }
        Err(error) => Err(error.into()),
    }
}

async fn drop_in(
    conn: &mut PgConnection,
    partition: &DayPartition,
    now_us: i64,
    sign: impl Fn(&str, i64, &str) -> Option<String>,
) -> Result<Dropped, sqlx::Error> {
    let name = &partition.name;
    sqlx::query(
        "INSERT INTO audit_prune_lock (id, taken_at_us) VALUES (1, $1) \
         ON CONFLICT (id) DO UPDATE SET taken_at_us = excluded.taken_at_us",
    )
    .bind(now_us)
    .execute(&mut *conn)
    .await?;
    set_lock_wait(conn).await?;
    sqlx::query(&format!("LOCK TABLE {name} IN EXCLUSIVE MODE"))
        .execute(&mut *conn)
        .await?;
    // Each chain's last row here becomes its checkpoint (hex, as every chain head), signed when
    // the prune holds the witness's key; the checkpoints move by one statement, only forward.
    let last: Vec<(String, i64, String)> = sqlx::query_as(&format!(
        "SELECT DISTINCT ON (resource) resource, seq, encode(hash, 'hex') FROM {name} \
         WHERE seq IS NOT NULL ORDER BY resource, seq DESC"
    ))
    .fetch_all(&mut *conn)
    .await?;
    let signatures: Vec<Option<String>> = last
        .iter()
        .map(|(resource, seq, hash)| sign(resource, *seq, hash))
        .collect();
    let (resources, (seqs, hashes)): (Vec<String>, (Vec<i64>, Vec<String>)) = last
        .into_iter()
        .map(|(resource, seq, hash)| (resource, (seq, hash)))
        .unzip();
    sqlx::query(
        "INSERT INTO audit_checkpoints (resource, seq, hash, pruned_at_us, signature) \
         SELECT resource, seq, hash, $4, signature \
         FROM unnest($1::text[], $2::bigint[], $3::text[], $5::text[]) \
           AS t(resource, seq, hash, signature) \
         ON CONFLICT (resource) DO UPDATE SET seq = excluded.seq, hash = excluded.hash, \
         pruned_at_us = excluded.pruned_at_us, signature = excluded.signature \
         WHERE audit_checkpoints.seq < excluded.seq",
    )
    .bind(&resources)
    .bind(&seqs)
    .bind(&hashes)
    .bind(now_us)
    .bind(&signatures)
    .execute(&mut *conn)
    .await?;
    let (rows, highest_id): (i64, Option<i64>) =
        sqlx::query_as(&format!("SELECT count(*), max(id) FROM {name}"))
            .fetch_one(&mut *conn)
            .await?;
    let ahead = match highest_id {
        Some(highest_id) => sqlx::query(
            "DELETE FROM audit AS a USING audit_checkpoints AS c \
             WHERE a.id <= $1 AND (a.at_us < $2 OR a.at_us >= $3) \
             AND c.resource = a.resource AND a.seq <= c.seq",
        )
        .bind(highest_id)
        .bind(partition.from_us)
        .bind(partition.to_us)
        .execute(&mut *conn)
        .await?
        .rows_affected(),
        None => 0,
    };
    sqlx::query(&format!("ALTER TABLE audit DETACH PARTITION {name}"))
        .execute(&mut *conn)
        .await?;
    sqlx::query(&format!("DROP TABLE {name}"))
        .execute(&mut *conn)
        .await?;
    Ok(Dropped::Dropped {
        rows: u64::try_from(rows).unwrap_or(0) + ahead,
        resources,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn days_are_named_and_bounded_as_the_migration_makes_them() {
        let day = DayPartition::of_day(20_791).unwrap();
        assert_eq!(day.name, "\"audit_20261204\"");
        assert_eq!(
            (day.from_us, day.to_us),
            (1_796_342_400_000_000, 1_796_428_800_000_000)
        );
        assert_eq!(DayPartition::of_day(0).unwrap().name, "\"audit_19700101\"");
        assert_eq!(DayPartition::of_day(-1), None);
        assert_eq!(DayPartition::of_day(3_000_000), None, "past 9999");
        assert_eq!(DayPartition::of_day(i64::MAX), None);
    }

    #[test]
    fn bounds_are_read_from_postgres_text() {
        assert_eq!(
            bounds("FOR VALUES FROM ('1796342400000000') TO ('1796428800000000')"),
            Some((1_796_342_400_000_000, 1_796_428_800_000_000))
        );
        assert_eq!(bounds("DEFAULT"), None);
        assert_eq!(bounds("FOR VALUES FROM (MINVALUE) TO ('5')"), None);
    }
}
