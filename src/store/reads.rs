use super::error::{corrupt, time_from_us};
use super::native::{on_db, NativeRow};
use super::{Store, StoreError};
use crate::domain::{AuditEntry, Outcome, ResourceKey};

/// A resource's current value with its fence.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoredValue {
    pub value: Vec<u8>,
    pub content_type: Option<String>,
    pub revision: i64,
    pub highest_token: i64,
}

/// A page of the audit, newest first.
#[derive(Debug, Clone, Default)]
pub struct AuditQuery {
    pub resource: Option<ResourceKey>,
    /// Only rows with an id below this one (exclusive).
    pub before: Option<i64>,
    /// Only rows with an id above this one (exclusive): the page is then the `limit` oldest
    /// such rows (still returned newest first).
    pub after: Option<i64>,
    pub limit: u32,
}

pub(crate) const AUDIT_COLUMNS: &str =
    "id, at_us, resource, outcome, token, highest_token, revision, \
     idempotency_key, expected_revision, owner, lease, body_sha256, body_len, detail, caller";

impl Store {
    /// Whether the operation `(resource, idempotency key)` is recorded with this token and body
    /// digest: whether a repeat of it would be replayed.
    pub async fn would_replay(
        &self,
        resource: &str,
        idempotency_key: &str,
        token: i64,
        body_sha256: &str,
    ) -> Result<bool, StoreError> {
        let found: Option<i64> = on_db!(self.reader(), pool => sqlx::query_scalar(
            "SELECT token FROM operations WHERE resource = $1 AND idempotency_key = $2 \
             AND token = $3 AND body_sha256 = $4",
        )
        .bind(resource)
        .bind(idempotency_key)
        .bind(token)
        .bind(body_sha256)
        .fetch_optional(pool)
        .await?);
        Ok(found.is_some())
    }

    pub async fn read_value(&self, key: &ResourceKey) -> Result<Option<StoredValue>, StoreError> {
        on_db!(self.reader(), pool => sqlx::query(
            "SELECT value, content_type, revision, highest_token FROM resources WHERE key = $1",
        )
        .bind(key.as_str())
        .fetch_optional(pool)
        .await?
        .map(|row| stored_value(&row))
        .transpose())
    }

    pub async fn audit_page(&self, query: &AuditQuery) -> Result<Vec<AuditEntry>, StoreError> {
        let mut sql = format!("SELECT {AUDIT_COLUMNS} FROM audit WHERE 1 = 1");
        let mut next_param = 1;
        if query.resource.is_some() {
            sql.push_str(&format!(" AND resource = ${next_param}"));
            next_param += 1;
        }
        if query.before.is_some() {
            sql.push_str(&format!(" AND id < ${next_param}"));
            next_param += 1;
        }
        if query.after.is_some() {
            sql.push_str(&format!(" AND id > ${next_param}"));
            next_param += 1;
        }
        let order = if query.after.is_some() { "ASC" } else { "DESC" };
        sql.push_str(&format!(" ORDER BY id {order} LIMIT ${next_param}"));
        let mut entries: Vec<AuditEntry> = on_db!(self.reader(), pool => {
            let mut statement = sqlx::query(&sql);
            if let Some(resource) = &query.resource {
                statement = statement.bind(resource.as_str());
            }
            if let Some(before) = query.before {
                statement = statement.bind(before);
            }
            if let Some(after) = query.after {
                statement = statement.bind(after);
            }
            let rows = statement
                .bind(i64::from(query.limit))
                .fetch_all(pool)
                .await?;
            rows.iter().map(audit_entry).collect::<Result<_, _>>()?
        });
        if query.after.is_some() {
            entries.reverse();
        }
        Ok(entries)
    }
}

fn stored_value(row: &impl NativeRow) -> Result<StoredValue, StoreError> {
    Ok(StoredValue {
        value: row.try_get("value")?,
        content_type: row.try_get("content_type")?,
        revision: row.try_get("revision")?,
        highest_token: row.try_get("highest_token")?,
    })
}

pub(crate) fn audit_entry<R: NativeRow>(row: &R) -> Result<AuditEntry, StoreError> {
    let at_us: i64 = row.try_get("at_us")?;
    let outcome: String = row.try_get("outcome")?;
    Ok(AuditEntry {
        id: row.try_get("id")?,
        at: time_from_us(at_us)?,
        resource: row.try_get("resource")?,
        outcome: Outcome::parse(&outcome)
            .ok_or_else(|| corrupt(format!("unknown outcome {outcome:?} in the audit")))?,
        token: row.try_get("token")?,
        highest_token: row.try_get("highest_token")?,
        revision: row.try_get("revision")?,
        idempotency_key: row.try_get("idempotency_key")?,
        expected_revision: row.try_get("expected_revision")?,
        owner: row.try_get("owner")?,
        lease: row.try_get("lease")?,
        body_sha256: digest(row, "body_sha256")?,
        body_len: row.try_get("body_len")?,
        detail: row.try_get("detail")?,
        caller: row.try_get("caller")?,
        source: None,
    })
}

/// A digest column (`body_sha256`, `hash`, `prev_hash`) as the rest of the program knows it: the
/// audit keeps its 32 bytes, everything above the store the lowercase hex.
pub(crate) fn digest<R: NativeRow>(row: &R, column: &str) -> Result<Option<String>, StoreError> {
    let bytes: Option<Vec<u8>> = row.try_get(column)?;
    Ok(bytes.map(hex::encode))
}
