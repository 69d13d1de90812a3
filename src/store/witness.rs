//! The witnessed audit's rows: the signed checkpoint lines (`audit_witness`, the same lines the
//! witness file holds) and the signatures prunes put on the chain starts they move.

use super::native::on_db;
use super::{Store, StoreError};
use crate::domain::witness::start_message;
use futures_util::TryStreamExt;

/// Checkpoint lines the database keeps (the newest).
const KEPT_LINES: i64 = 100;

impl Store {
    /// The signature of a chain start moved to (`seq`, `hash`) by a prune, when this store holds
    /// the witness's key.
    pub(crate) fn sign_start(&self, resource: &str, seq: i64, hash: &str) -> Option<String> {
        self.audit_signer
            .as_ref()
            .map(|key| key.sign(&start_message(resource, seq, hash)))
    }

    /// Keeps a signed checkpoint line beside the audit, and only the newest `KEPT_LINES`: the
    /// latest checkpoint vouches for every earlier one (`app::witness`), and the witness file,
    /// not the database, is the record (a line holds every chain, so keeping them all would
    /// grow the database by the witness file's size).
    pub async fn record_witness_line(&self, at_us: i64, line: &str) -> Result<(), StoreError> {
        let mut tx = self.writer().begin().await?;
        on_db!(tx.conn(), conn => sqlx::query(
            "INSERT INTO audit_witness (at_us, line) VALUES ($1, $2)",
        )
        .bind(at_us)
        .bind(line)
        .execute(conn)
        .await?
        .rows_affected());
        on_db!(tx.conn(), conn => sqlx::query(
            "DELETE FROM audit_witness WHERE id <= (SELECT max(id) FROM audit_witness) - $1",
        )
        .bind(KEPT_LINES)
        .execute(conn)
        .await?
        .rows_affected());
        tx.commit().await?;
        Ok(())
    }

    /// The newest `limit` checkpoint lines, newest first.
    pub async fn latest_witness_lines(&self, limit: i64) -> Result<Vec<String>, StoreError> {
        Ok(on_db!(self.reader(), pool => sqlx::query_scalar(
            "SELECT line FROM audit_witness ORDER BY id DESC LIMIT $1",
        )
        .bind(limit)
        .fetch_all(pool)
        .await?))
    }

    /// Every checkpoint line, oldest first, each handed to `each` as it is read.
    pub async fn each_witness_line(&self, mut each: impl FnMut(&str)) -> Result<(), StoreError> {
        on_db!(self.reader(), pool => {
            let mut lines = sqlx::query_scalar::<_, String>(
                "SELECT line FROM audit_witness ORDER BY id",
            )
            .fetch(pool);
            while let Some(line) = lines.try_next().await? {
                each(&line);
            }
        });
        Ok(())
    }
}
