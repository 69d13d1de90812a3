//! `fencewatch fence reset`: a scope's highest accepted generation set by hand, audited in the
//! scope's chain by the installed `reset()`.

use super::super::{OwnDbError, ResetDone};
use super::checks::request_error;
use super::PgFence;

impl PgFence {
    pub(in crate::owndb) async fn reset(
        &self,
        scope: &str,
        to: i64,
        reason: &str,
    ) -> Result<ResetDone, OwnDbError> {
        let mut tx = self.pool.begin().await?;
        self.require_current(&mut tx).await?;
        let (previous, row_id): (i64, i64) = sqlx::query_as(&format!(
            "SELECT r.previous, r.row_id FROM {}.reset($1, $2, $3) r",
            self.ident()
        ))
        .bind(scope)
        .bind(to)
        .bind(reason)
        .fetch_one(&mut *tx)
        .await
        .map_err(|e| request_error(e, scope))?;
        tx.commit().await?;
        Ok(ResetDone { previous, row_id })
    }
}
