//! The audit's rows as walks read them (`walk::ChainRow`): with their recorded fields, or, for
//! SQLite's full run, with the encoding the hash covers built by SQLite itself (`SQLITE_ENCODING`,
//! read a page at a time: `pages`), so that rows are not decoded field by field
//! (docs/performance.md, "The audit at 10 million rows").

use super::walk::{ChainRow, Contents};
use crate::store::native::NativeRow;
use crate::store::reads::{audit_entry, AUDIT_COLUMNS};
use crate::store::StoreError;

/// A row and the chain it belongs to.
#[derive(Debug)]
pub(super) struct ReadRow {
    pub resource: String,
    pub row: ChainRow,
}

/// The columns `with_fields` reads, after `SELECT`.
pub(super) fn fields_columns() -> String {
    format!("{AUDIT_COLUMNS}, seq, prev_hash, hash")
}

/// A row read with every recorded field (`fields_columns`).
pub(super) fn with_fields<R: NativeRow>(row: &R) -> Result<ReadRow, StoreError> {
    let entry = audit_entry(row)?;
    Ok(ReadRow {
        resource: entry.resource.clone(),
        row: ChainRow {
            id: entry.id,
            seq: row.try_get("seq")?,
            prev_hash: row.try_get("prev_hash")?,
            hash: row.try_get("hash")?,
            contents: Contents::Fields(Box::new(entry)),
        },
    })
}

/// The JSON array `row_hash` encodes (`domain::chain`), as SQLite builds it from a row's
/// columns, field for field in its order (SQLite's full run reads it: `pages`). Integers and
/// NULLs are printed as serde_json prints them, strings escaped as it escapes them (the tests
/// hold this to every character that is escaped), and the digests, stored as bytes, become the
/// lowercase hex the encoding holds (`hex(NULL)` is `''`, hence the `CASE`).
pub(super) const SQLITE_ENCODING: &str = "json_array('fencewatch-audit-v1', seq, at_us, \
     resource, outcome, token, highest_token, revision, idempotency_key, expected_revision, \
     owner, lease, CASE WHEN body_sha256 IS NULL THEN NULL ELSE lower(hex(body_sha256)) END, \
     body_len, detail, caller, lower(hex(prev_hash)))";

#[cfg(test)]
mod tests {
    use sqlx::sqlite::SqlitePool;

    /// SQLite's JSON strings are serde_json's, character for character, over every character
    /// (a mismatch would only cost a row read again, but every row would cost it).
    #[tokio::test]
    async fn sqlite_escapes_every_character_as_serde_json_does() {
        let pool = SqlitePool::connect("sqlite::memory:").await.unwrap();
        let every: String = (0..=0x10_FFFF).filter_map(char::from_u32).collect();
        for text in [
            every.as_str(),
            "\"",
            "\\",
            "\u{7f}",
            "\u{2028}\u{2029}",
            "😀",
            "",
        ] {
            let sqlite: String = sqlx::query_scalar("SELECT json_array(?1, 7, NULL, -1)")
                .bind(text)
                .fetch_one(&pool)
                .await
                .unwrap();
            let serde = serde_json::to_string(&(text, 7, None::<i64>, -1)).unwrap();
            let first = sqlite
                .bytes()
                .zip(serde.bytes())
                .position(|(a, b)| a != b)
                .unwrap_or(sqlite.len().min(serde.len()));
            assert!(
                sqlite == serde,
                "from byte {first}: SQLite {:?}, serde_json {:?}",
                String::from_utf8_lossy(&sqlite.as_bytes()[first..(first + 40).min(sqlite.len())]),
                String::from_utf8_lossy(&serde.as_bytes()[first..(first + 40).min(serde.len())]),
            );
        }
    }
}
