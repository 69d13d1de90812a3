//! The audit read by the offline tools: filtered, streamed in id order either way, with the
//! chain fields.

use super::leases::StoredLeaseEvent;
use super::native::{on_db, NativeRow};
use super::reads::{audit_entry, digest, AUDIT_COLUMNS};
use super::{Store, StoreError};
use crate::domain::authority::ExternalLock;
use crate::domain::{AuditEntry, Outcome};
use futures_util::TryStreamExt;
use serde::Serialize;

/// An audit row with its place in the resource's hash chain.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct AuditRecord {
    #[serde(flatten)]
    pub entry: AuditEntry,
    pub seq: Option<i64>,
    pub prev_hash: Option<String>,
    pub hash: Option<String>,
}

/// Which rows: every field optional, times in microseconds.
#[derive(Debug, Clone, Default)]
pub struct AuditFilter {
    pub resource: Option<String>,
    pub owner: Option<String>,
    pub outcome: Option<Outcome>,
    pub token: Option<i64>,
    pub since_us: Option<i64>,
    pub until_us: Option<i64>,
}

impl AuditFilter {
    /// The WHERE clause and its arguments, in order.
    fn clause(&self) -> (String, Vec<Arg>) {
        let mut conditions = Vec::new();
        let mut args = Vec::new();
        let mut add = |condition: &str, arg: Arg| {
            args.push(arg);
            conditions.push(condition.replace('?', &format!("${}", args.len())));
        };
        if let Some(resource) = &self.resource {
            add("resource = ?", Arg::Text(resource.clone()));
        }
        if let Some(owner) = &self.owner {
            add("owner = ?", Arg::Text(owner.clone()));
        }
        if let Some(outcome) = self.outcome {
            // The outcome index holds only the rarer outcomes (migration 24): the condition
            // written out lets the planner use it, which a bound value alone does not.
            let condition = match outcome {
                Outcome::Accepted => "outcome = ?",
                _ => "outcome = ? AND outcome <> 'accepted'",
            };
            add(condition, Arg::Text(outcome.as_str().to_owned()));
        }
        if let Some(token) = self.token {
            add("token = ?", Arg::Int(token));
        }
        if let Some(since) = self.since_us {
            add("at_us >= ?", Arg::Int(since));
        }
        if let Some(until) = self.until_us {
            add("at_us <= ?", Arg::Int(until));
        }
        let clause = if conditions.is_empty() {
            String::new()
        } else {
            format!(" WHERE {}", conditions.join(" AND "))
        };
        (clause, args)
    }
}

/// Which end of the audit a walk starts from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AuditOrder {
    OldestFirst,
    NewestFirst,
}

/// How a walk reads the matching rows: in which order, and at most how many. The limit is part
/// of the query, so a filter with an index behind it reads only the rows it returns.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AuditWalk {
    pub order: AuditOrder,
    pub limit: Option<u64>,
}

impl AuditWalk {
    /// Every matching row, oldest first: what export, verify and the timelines read.
    pub const ALL: Self = Self {
        order: AuditOrder::OldestFirst,
        limit: None,
    };

    /// `ORDER BY id …` and, with a limit, `LIMIT $n` bound to the next argument.
    fn tail(&self, args: &mut Vec<Arg>) -> String {
        let mut sql = match self.order {
            AuditOrder::OldestFirst => " ORDER BY id".to_owned(),
            AuditOrder::NewestFirst => " ORDER BY id DESC".to_owned(),
        };
        if let Some(limit) = self.limit {
            // SQL's LIMIT is signed; no audit holds more rows than i64::MAX anyway.
            args.push(Arg::Int(i64::try_from(limit).unwrap_or(i64::MAX)));
            sql.push_str(&format!(" LIMIT ${}", args.len()));
        }
        sql
    }
}

enum Arg {
    Text(String),
    Int(i64),
}

pub(super) fn record(row: &impl NativeRow) -> Result<AuditRecord, StoreError> {
    Ok(AuditRecord {
        entry: audit_entry(row)?,
        seq: row.try_get("seq")?,
        prev_hash: digest(row, "prev_hash")?,
        hash: digest(row, "hash")?,
    })
}

impl Store {
    /// Calls `sink` with the matching rows in the walk's order, up to its limit, holding one row
    /// at a time. The first error, the database's or the sink's, ends the walk.
    pub async fn each_audit_record<E: From<StoreError>>(
        &self,
        filter: &AuditFilter,
        walk: AuditWalk,
        mut sink: impl FnMut(&AuditRecord) -> Result<(), E>,
    ) -> Result<u64, E> {
        let (clause, mut args) = filter.clause();
        let tail = walk.tail(&mut args);
        let sql = format!("SELECT {AUDIT_COLUMNS}, seq, prev_hash, hash FROM audit{clause}{tail}");
        on_db!(self.reader(), pool => {
            let mut query = sqlx::query(&sql);
            for arg in args {
                query = match arg {
                    Arg::Text(text) => query.bind(text),
                    Arg::Int(number) => query.bind(number),
                };
            }
            let mut rows = query.fetch(pool);
            let mut count = 0;
            while let Some(row) = rows.try_next().await.map_err(StoreError::from)? {
                sink(&record(&row)?)?;
                count += 1;
            }
            Ok(count)
        })
    }

    /// The history of the named leases between the times, oldest first.
    pub async fn lease_history(
        &self,
        leases: &[String],
        since_us: Option<i64>,
        until_us: Option<i64>,
    ) -> Result<Vec<StoredLeaseEvent>, StoreError> {
        let mut events = Vec::new();
        for lease in leases {
            if let Ok(name) = crate::domain::LeaseName::parse(lease) {
                // An external lock's history is its holders as writes observed them.
                let named = match ExternalLock::from_lease(&name) {
                    Some(Ok(lock)) => self.authority_events(&lock).await?,
                    Some(Err(_)) => Vec::new(),
                    None => self.lease_events(&name).await?,
                };
                events.extend(named.into_iter().filter(|e| {
                    since_us.is_none_or(|since| e.at.timestamp_micros() >= since)
                        && until_us.is_none_or(|until| e.at.timestamp_micros() <= until)
                }));
            }
        }
        events.sort_by_key(|e| (e.at, e.id));
        Ok(events)
    }

    /// Every lease name that has events.
    pub async fn lease_names(&self) -> Result<Vec<String>, StoreError> {
        Ok(on_db!(self.reader(), pool => {
            sqlx::query_scalar("SELECT DISTINCT lease FROM lease_events ORDER BY lease")
                .fetch_all(pool)
                .await?
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_walk_puts_its_order_and_limit_in_the_query() {
        let filter = AuditFilter {
            resource: Some("r".into()),
            ..AuditFilter::default()
        };
        let (clause, mut args) = filter.clause();
        let newest = AuditWalk {
            order: AuditOrder::NewestFirst,
            limit: Some(u64::MAX),
        };
        let tail = newest.tail(&mut args);
        assert_eq!(
            format!("{clause}{tail}"),
            " WHERE resource = $1 ORDER BY id DESC LIMIT $2"
        );
        assert!(matches!(args.last(), Some(Arg::Int(i64::MAX))));
        let (_, mut args) = AuditFilter::default().clause();
        assert_eq!(AuditWalk::ALL.tail(&mut args), " ORDER BY id");
        assert!(args.is_empty());
    }
}
