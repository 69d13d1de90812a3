use super::{Store, StoreError};
use std::time::Duration;

impl Store {
    /// Forgets operation records older than `retention`. A repeat of a forgotten operation is
    /// decided afresh, like any new write.
    pub async fn prune_operations(&self, retention: Duration) -> Result<u64, StoreError> {
        let retention_us = i64::try_from(retention.as_micros()).unwrap_or(i64::MAX);
        let cutoff = self.clock.now_us().saturating_sub(retention_us);
        let result = sqlx::query("DELETE FROM operations WHERE recorded_at_us < $1")
            .bind(cutoff)
            .execute(&self.writer)
            .await?;
        Ok(result.rows_affected())
    }
}
