//! SQLite's full run reads the audit a page of rows at a time, each page one TEXT value that
//! SQLite concatenates from the rows' records: one value crosses from sqlx's SQLite thread per
//! page instead of six per row, since that thread allocating every value and the reader freeing
//! it had the two contend on the allocator's lock (docs/performance.md, "The audit at 10
//! million rows"). Every page is a statement of its own in the run's read transaction, so all
//! see its snapshot. The workers split the page (`Records`), each walking its own chains' rows.
//!
//! A record is `id,seq,` then `len:resource`, `prev_hash,hash,` (uppercase hex; `-` for NULL)
//! and `len:encoding` (`rows::SQLITE_ENCODING`), `len` counting bytes. Integers and hex hold
//! no separator and the texts are delimited by their lengths, so any character a resource or a
//! field holds is read as itself. A `seq` that is neither an integer nor NULL is `?`, refused.

use super::rows::SQLITE_ENCODING;
use super::walk::{ChainRow, Contents};
use crate::store::StoreError;
use sqlx::SqliteConnection;
use std::sync::LazyLock;

/// Rows a page holds: a page is one value of about 350 bytes a row, and one statement.
pub(super) const PAGE_ROWS: i64 = 2_000;

/// A page's records, how many rows it holds and its last id; the subquery's `LIMIT` keeps
/// SQLite from flattening it into the aggregate, so each encoding is built once. The records
/// come in the subquery's order, which SQLite keeps though it does not promise to: a page out
/// of id order is refused (`Records`), failing the run rather than misreading it. The
/// aggregate's own `ORDER BY` would promise it, at the cost of sorting every page
/// (docs/performance.md).
static PAGE_SQL: LazyLock<String> = LazyLock::new(|| {
    format!(
        "SELECT group_concat(id || ',' \
         || CASE typeof(seq) WHEN 'integer' THEN seq WHEN 'null' THEN '' ELSE '?' END || ',' \
         || length(CAST(resource AS BLOB)) || ':' || resource \
         || CASE WHEN prev_hash IS NULL THEN '-' ELSE hex(prev_hash) END || ',' \
         || CASE WHEN hash IS NULL THEN '-' ELSE hex(hash) END || ',' \
         || length(CAST(encoded AS BLOB)) || ':' || encoded, ''), count(*), max(id) \
         FROM (SELECT id, seq, resource, prev_hash, hash, {SQLITE_ENCODING} AS encoded \
         FROM audit WHERE id > $1 ORDER BY id LIMIT $2)"
    )
});

/// A page of the audit as SQLite concatenated it.
#[derive(Debug)]
pub(super) struct Page {
    pub text: String,
    /// The rows the page holds: its records must be as many.
    pub rows: usize,
    /// Its last row's id: the next page starts after it.
    pub last_id: i64,
}

/// The page of up to `page_rows` rows after id `after`; `None` past the last row.
pub(super) async fn read(
    conn: &mut SqliteConnection,
    after: i64,
    page_rows: i64,
) -> Result<Option<Page>, StoreError> {
    let (text, rows, last_id): (Option<String>, i64, Option<i64>) =
        sqlx::query_as(PAGE_SQL.as_str())
            .bind(after)
            .bind(page_rows)
            .fetch_one(conn)
            .await?;
    Ok(match (text, last_id) {
        (Some(text), Some(last_id)) if rows > 0 => Some(Page {
            text,
            rows: usize::try_from(rows).unwrap_or(0),
            last_id,
        }),
        _ => None,
    })
}

/// One row's record, borrowed from its page.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Record<'p> {
    pub id: i64,
    pub seq: Option<i64>,
    pub resource: &'p str,
    /// The digests as hex.
    pub prev_hash: Option<&'p str>,
    pub hash: Option<&'p str>,
    pub encoding: &'p str,
}

impl Record<'_> {
    /// The row as a walk reads it.
    pub fn chain_row(&self) -> Result<ChainRow, StoreError> {
        let digest = |hex_text: Option<&str>| {
            hex_text
                .map(hex::decode)
                .transpose()
                .map_err(|_| malformed("a digest is not hex"))
        };
        Ok(ChainRow {
            id: self.id,
            seq: self.seq,
            prev_hash: digest(self.prev_hash)?,
            hash: digest(self.hash)?,
            contents: Contents::Encoded(self.encoding.to_owned()),
        })
    }
}

/// The records of a page, in id order (checked: the walks rely on it).
pub(super) struct Records<'p> {
    rest: &'p str,
    last_id: Option<i64>,
}

impl<'p> Records<'p> {
    /// The records of `page`, which follows a page that ended at `last_id`.
    pub fn new(page: &'p str, last_id: Option<i64>) -> Self {
        Self {
            rest: page,
            last_id,
        }
    }

    fn next_record(&mut self) -> Result<Record<'p>, StoreError> {
        let id = self
            .until(',')?
            .parse::<i64>()
            .map_err(|_| malformed("an id is not an integer"))?;
        if self.last_id.is_some_and(|last| id <= last) {
            return Err(malformed("its rows are not in id order"));
        }
        self.last_id = Some(id);
        let seq = match self.until(',')? {
            "" => None,
            seq => Some(
                seq.parse::<i64>()
                    .map_err(|_| malformed("a row's seq is not an integer"))?,
            ),
        };
        let resource = self.sized()?;
        let prev_hash = digest(self.until(',')?);
        let hash = digest(self.until(',')?);
        let encoding = self.sized()?;
        Ok(Record {
            id,
            seq,
            resource,
            prev_hash,
            hash,
            encoding,
        })
    }

    /// The text up to `separator`, which is passed.
    fn until(&mut self, separator: char) -> Result<&'p str, StoreError> {
        let (field, rest) = self
            .rest
            .split_once(separator)
            .ok_or_else(|| malformed("a record ends early"))?;
        self.rest = rest;
        Ok(field)
    }

    /// A text after its length in bytes and `:`.
    fn sized(&mut self) -> Result<&'p str, StoreError> {
        let len = self
            .until(':')?
            .parse::<usize>()
            .map_err(|_| malformed("a length is not a number"))?;
        let text = self
            .rest
            .get(..len)
            .ok_or_else(|| malformed("a text is shorter than its length"))?;
        self.rest = &self.rest[len..];
        Ok(text)
    }
}

impl<'p> Iterator for Records<'p> {
    type Item = Result<Record<'p>, StoreError>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.rest.is_empty() {
            return None;
        }
        let record = self.next_record();
        if record.is_err() {
            // Nothing after a malformed record can be told apart.
            self.rest = "";
        }
        Some(record)
    }
}

fn digest(field: &str) -> Option<&str> {
    (field != "-").then_some(field)
}

fn malformed(what: &str) -> StoreError {
    StoreError::Invariant(format!(
        "a page of the audit read for verifying is malformed: {what}"
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use sqlx::sqlite::SqlitePool;
    use sqlx::Row;

    /// Every row comes through as it is stored, over pages smaller than the table, whatever
    /// its texts hold: separators, digits, record-like text, any character but NUL.
    #[tokio::test]
    async fn pages_split_into_the_rows_as_stored() {
        let pool = SqlitePool::connect("sqlite::memory:").await.unwrap();
        let mut conn = pool.acquire().await.unwrap();
        sqlx::raw_sql(
            "CREATE TABLE audit (id INTEGER PRIMARY KEY, at_us INTEGER NOT NULL, \
             resource TEXT NOT NULL, outcome TEXT NOT NULL, token INTEGER, \
             highest_token INTEGER NOT NULL, revision INTEGER NOT NULL, idempotency_key TEXT, \
             expected_revision INTEGER, owner TEXT, lease TEXT, body_sha256 BLOB, \
             body_len INTEGER, detail TEXT, caller TEXT, seq INTEGER, prev_hash BLOB, \
             hash BLOB)",
        )
        .execute(&mut *conn)
        .await
        .unwrap();
        let texts = [
            "plain",
            "",
            ",",
            ":",
            "12:ab,",
            "-",
            "1,2,3:x-,-,0:",
            "a\"b\\c\n\td\u{1}\u{1f}\u{7f}😀",
            "é ß 日本語 \u{2028}\u{10ffff}",
        ];
        let mut expected = Vec::new();
        // Negative ids too: a page starts after any id.
        for (n, text) in texts.iter().cycle().take(47).enumerate() {
            let n = n as i64;
            let id = n * 3 - 20;
            // Older rows have no place in a chain; an empty digest is not a missing one.
            let seq = (n % 5 != 0).then_some(n);
            let prev = (n % 5 != 0).then(|| vec![n as u8; (n % 3) as usize * 16]);
            let hash = (n % 5 != 0).then(|| vec![0xab; 32]);
            let resource = format!("r{}{text}", n % 4);
            sqlx::query(
                "INSERT INTO audit (id, at_us, resource, outcome, highest_token, revision, \
                 owner, detail, seq, prev_hash, hash) VALUES (?, 1, ?, 'accepted', 2, 3, ?, ?, \
                 ?, ?, ?)",
            )
            .bind(id)
            .bind(&resource)
            .bind(text)
            .bind(format!("{text}{text}"))
            .bind(seq)
            .bind(&prev)
            .bind(&hash)
            .execute(&mut *conn)
            .await
            .unwrap();
            let encoding: String =
                sqlx::query(&format!("SELECT {SQLITE_ENCODING} FROM audit WHERE id = ?"))
                    .bind(id)
                    .fetch_one(&mut *conn)
                    .await
                    .unwrap()
                    .get(0);
            expected.push((id, seq, resource, prev, hash, encoding));
        }

        let mut read = Vec::new();
        let (mut after, mut last_id, mut pages) = (i64::MIN, None, 0);
        while let Some(page) = super::read(&mut conn, after, 10).await.unwrap() {
            pages += 1;
            let records: Vec<Record> = Records::new(&page.text, last_id)
                .collect::<Result<_, _>>()
                .unwrap();
            assert_eq!(records.len(), page.rows);
            assert_eq!(records.last().map(|r| r.id), Some(page.last_id));
            for record in records {
                let row = record.chain_row().unwrap();
                let Contents::Encoded(encoding) = row.contents else {
                    panic!("not encoded")
                };
                read.push((
                    row.id,
                    row.seq,
                    record.resource.to_owned(),
                    row.prev_hash,
                    row.hash,
                    encoding,
                ));
            }
            (after, last_id) = (page.last_id, Some(page.last_id));
        }
        assert_eq!(pages, 5);
        assert_eq!(read, expected);
    }

    #[test]
    fn malformed_pages_are_refused() {
        for page in [
            "1,2,1:a-,-,3:[]",        // the encoding shorter than its length
            "1,2,1:a-,-",             // ends early
            "x,2,1:a-,-,1:]",         // an id that is not a number
            "1,?,1:a-,-,1:]",         // a seq that is not an integer
            "1,2,1:aZZ,-,1:]",        // a digest that is not hex
            "2,,0:-,-,0:1,,0:-,-,0:", // out of id order
            "1,,1:é-,-,0:",           // a length inside a character
        ] {
            let parsed: Result<Vec<_>, _> = Records::new(page, None)
                .map(|r| r.and_then(|r| r.chain_row()))
                .collect();
            assert!(parsed.is_err(), "{page:?} was read");
        }
        let parsed: Vec<_> = Records::new("1,,0:-,-,0:", None)
            .collect::<Result<_, _>>()
            .unwrap();
        assert_eq!(parsed[0].resource, "");
    }
}
