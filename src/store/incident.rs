//! The few rows an incident report needs beyond the overlap: the stale generation's audit, the
//! successor's first accepted write, and the grants of the generations involved, each read with
//! an index rather than by walking the resource's whole history.

use super::leases::{history_event, lease_event};
use super::lock_holders::observed_event;
use super::native::on_db;
use super::reads::{audit_entry, AUDIT_COLUMNS};
use super::{Store, StoreError};
use crate::domain::authority::ExternalLock;
use crate::domain::lease_history::LeaseEvent;
use crate::domain::{AuditEntry, LeaseName};

/// Where generation `$2`'s tenure of resource `$1` begins: after the last write accepted from an
/// older generation (accepted generations only rise). Read backwards through `(resource, id)`,
/// so finding a generation's rows costs the rows since it began, not the resource's history,
/// which an incident measured at each overlap's close would otherwise read whole.
const TENURE_START: &str = "COALESCE((SELECT id FROM audit WHERE resource = $1 \
     AND outcome = 'accepted' AND token < $2 ORDER BY id DESC LIMIT 1), 0)";

impl Store {
    /// The resource's audit rows of generation `token` in its tenure (after the last write
    /// accepted from an older generation), oldest first.
    pub async fn generation_rows(
        &self,
        resource: &str,
        token: i64,
    ) -> Result<Vec<AuditEntry>, StoreError> {
        let sql = format!(
            "SELECT {AUDIT_COLUMNS} FROM audit WHERE resource = $1 AND token = $2 \
             AND id > {TENURE_START} ORDER BY id"
        );
        on_db!(self.reader(), pool => sqlx::query(&sql)
            .bind(resource)
            .bind(token).fetch_all(pool).await?.iter().map(audit_entry).collect())
    }

    /// The resource's first accepted write of generation `token`.
    pub async fn first_accepted(
        &self,
        resource: &str,
        token: i64,
    ) -> Result<Option<AuditEntry>, StoreError> {
        let sql = format!(
            "SELECT {AUDIT_COLUMNS} FROM audit WHERE resource = $1 AND token = $2 \
             AND outcome = 'accepted' AND id > {TENURE_START} ORDER BY id LIMIT 1"
        );
        on_db!(self.reader(), pool => sqlx::query(&sql)
            .bind(resource)
            .bind(token).fetch_optional(pool).await?.as_ref().map(audit_entry).transpose())
    }

    /// The resource's last accepted write before `before_us`: the value a window of its
    /// timeline starts from.
    pub async fn last_accepted_before(
        &self,
        resource: &str,
        before_us: i64,
    ) -> Result<Option<AuditEntry>, StoreError> {
        let sql = format!(
            "SELECT {AUDIT_COLUMNS} FROM audit WHERE resource = $1 AND at_us < $2 \
             AND outcome = 'accepted' ORDER BY id DESC LIMIT 1"
        );
        on_db!(self.reader(), pool => sqlx::query(&sql)
            .bind(resource)
            .bind(before_us).fetch_optional(pool).await?.as_ref().map(audit_entry).transpose())
    }

    /// When the resource's `n`-th newest audit row was written (none if it has fewer): where
    /// a timeline of its latest rows starts, found from the newest end of its index.
    pub async fn nth_newest_at(&self, resource: &str, n: u64) -> Result<Option<i64>, StoreError> {
        let offset = i64::try_from(n.saturating_sub(1)).unwrap_or(i64::MAX);
        on_db!(self.reader(), pool => Ok(sqlx::query_scalar(
            "SELECT at_us FROM audit WHERE resource = $1 ORDER BY id DESC LIMIT 1 OFFSET $2",
        )
        .bind(resource)
        .bind(offset)
        .fetch_optional(pool)
        .await?))
    }

    /// The events of `lease` (or the sightings of an external lock's holders) of generations
    /// `from` to `to`, oldest first; empty for a name that is neither.
    pub async fn generation_history(
        &self,
        lease: &str,
        from: i64,
        to: i64,
    ) -> Result<Vec<LeaseEvent>, StoreError> {
        let Ok(name) = LeaseName::parse(lease) else {
            return Ok(Vec::new());
        };
        match ExternalLock::from_lease(&name) {
            Some(Ok(lock)) => {
                on_db!(self.reader(), pool => sqlx::query(
                    "SELECT id, lock, generation, holder_key, first_seen_us, last_seen_us \
                     FROM authority_holders WHERE lock = $1 AND generation >= $2 \
                     AND generation <= $3 ORDER BY id",
                )
                .bind(lock.lease_name())
                .bind(from)
                .bind(to).fetch_all(pool).await?.iter()
                    .map(|row| observed_event(row).and_then(history_event)).collect())
            }
            Some(Err(_)) => Ok(Vec::new()),
            None => {
                on_db!(self.reader(), pool => sqlx::query(
                    "SELECT id, at_us, lease, event, holder, token, expires_at_us \
                     FROM lease_events WHERE lease = $1 AND token >= $2 AND token <= $3 \
                     ORDER BY id",
                )
                .bind(name.as_str())
                .bind(from)
                .bind(to).fetch_all(pool).await?.iter()
                    .map(|row| lease_event(row).and_then(history_event)).collect())
            }
        }
    }
}
