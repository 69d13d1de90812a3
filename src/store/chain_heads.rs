//! Where each resource's audit chain has its head, and how a batch moves the heads.
//!
//! A written resource keeps its head in its own row (`resources.chain_seq`, `chain_hash`), so
//! the update an accepted write makes anyway advances it: a separate head row was one more
//! randomly placed page for every write to rewrite. A resource never written has no row, yet
//! attempts on it are audited; their chain's head is a row of `chain_heads` until a batch
//! creates the resource, which then marks that row `MOVED`. The mark is written under the same
//! compare-and-set as any head (PostgreSQL, several daemons): a batch that still saw the
//! resource missing and appends to its `chain_heads` row finds it changed, or its insert of
//! one taken, and runs again, so the chain never forks between the two places.

use super::batch::shared::{ChainHeads, ObservedResource};
use super::native::{on_db, Conn, Native};
use super::StoreError;
use crate::domain::chain;
use crate::store::error::corrupt;
use std::collections::{BTreeSet, HashMap};

/// The `seq` of a `chain_heads` row whose resource has been created: its head is in the
/// resource's row now.
pub(super) const MOVED: i64 = -1;

/// The heads of the batch's resources when it looked, and which `chain_heads` rows it saw.
pub(super) struct StartingHeads {
    pub heads: ChainHeads,
    pub unwritten: UnwrittenSeen,
}

/// The `chain_heads` rows a batch saw for resources without a row of their own, by resource:
/// their position, to be advanced from.
pub(super) struct UnwrittenSeen(HashMap<String, i64>);

impl StartingHeads {
    /// From the resources observed and the `chain_heads` rows of the batch's keys.
    pub fn new(
        keys: &BTreeSet<&str>,
        resources: &HashMap<String, ObservedResource>,
        unwritten_rows: Vec<(String, i64, String)>,
    ) -> Result<Self, StoreError> {
        let mut unwritten_heads: HashMap<String, (i64, String)> = unwritten_rows
            .into_iter()
            .map(|(resource, seq, hash)| (resource, (seq, hash)))
            .collect();
        let mut heads = ChainHeads::with_capacity(keys.len());
        let mut unwritten = HashMap::new();
        for key in keys {
            let head = match (resources.get(*key), unwritten_heads.remove(*key)) {
                (Some(resource), _) => resource.chain.clone(),
                (None, Some((MOVED, _))) => return Err(moved_without_row()),
                (None, Some((seq, hash))) => {
                    unwritten.insert((*key).to_owned(), seq);
                    (seq, hash)
                }
                (None, None) => (0, chain::GENESIS.to_owned()),
            };
            heads.insert((*key).to_owned(), head);
        }
        Ok(Self {
            heads,
            unwritten: UnwrittenSeen(unwritten),
        })
    }
}

fn moved_without_row() -> StoreError {
    corrupt("a chain head is marked moved to a resource that has no row")
}

/// How the batch moves `chain_heads` rows; heads in resources' rows move with their updates
/// and inserts (`batch::rows`).
#[derive(Debug, Default, PartialEq, Eq)]
pub(super) struct UnwrittenMoves {
    /// `[resource, seq, hash, observed seq]`: rows seen, moved on from where they were.
    pub advances: Vec<(String, i64, String, i64)>,
    /// `[resource, seq, hash]`: rows not seen, inserted only if still missing.
    pub starts: Vec<(String, i64, String)>,
}

impl UnwrittenMoves {
    /// For each resource without a row, in key order: its head after the batch, or `MOVED`
    /// where the batch creates it.
    pub fn new<'a>(
        seen: &UnwrittenSeen,
        after: impl IntoIterator<Item = (&'a str, bool, &'a (i64, String))>,
    ) -> Self {
        let mut moves = Self::default();
        for (resource, created, (seq, hash)) in after {
            let (seq, hash) = match created {
                true => (MOVED, String::new()),
                false => (*seq, hash.clone()),
            };
            match seen.0.get(resource) {
                Some(observed) => moves
                    .advances
                    .push((resource.to_owned(), seq, hash, *observed)),
                None => moves.starts.push((resource.to_owned(), seq, hash)),
            }
        }
        moves
    }
}

/// Where an appended chain's head is kept, found when it was locked.
enum HeadRow {
    Resource,
    Unwritten,
}

/// The heads of the resources an append outside group commit names (a refused attempt), locked
/// until its transaction ends on PostgreSQL; SQLite's transaction already holds the only write
/// lock.
pub(super) struct LockedHeads {
    pub heads: ChainHeads,
    rows: Vec<(String, HeadRow)>,
}

impl LockedHeads {
    pub async fn lock(mut conn: Conn<'_>, resources: &BTreeSet<&str>) -> Result<Self, StoreError> {
        let lock = match conn {
            Native::Postgres(_) => " FOR UPDATE",
            Native::Sqlite(_) => "",
        };
        let in_resource =
            format!("SELECT chain_seq, chain_hash FROM resources WHERE key = $1{lock}");
        let mut locked = Self {
            heads: ChainHeads::with_capacity(resources.len()),
            rows: Vec::with_capacity(resources.len()),
        };
        // Key order, as every writer locks them.
        for resource in resources {
            let (head, row) = match head_in(conn.reborrow(), &in_resource, resource).await? {
                Some(head) => (head, HeadRow::Resource),
                None => match unwritten_head(conn.reborrow(), resource).await? {
                    // Created since the first look (PostgreSQL, another daemon): its row is
                    // committed, as the mark is.
                    (MOVED, _) => {
                        let head = head_in(conn.reborrow(), &in_resource, resource)
                            .await?
                            .ok_or_else(moved_without_row)?;
                        (head, HeadRow::Resource)
                    }
                    unwritten => (unwritten, HeadRow::Unwritten),
                },
            };
            locked.heads.insert((*resource).to_owned(), head);
            locked.rows.push(((*resource).to_owned(), row));
        }
        Ok(locked)
    }

    /// Writes the heads back where they were found, once the entries are linked.
    pub async fn store(&self, mut conn: Conn<'_>) -> Result<(), StoreError> {
        for (resource, row) in &self.rows {
            let (seq, hash) = self
                .heads
                .get(resource)
                .ok_or_else(|| corrupt("a locked chain head went missing"))?;
            let sql = match row {
                HeadRow::Resource => {
                    "UPDATE resources SET chain_seq = $2, chain_hash = $3 WHERE key = $1"
                }
                HeadRow::Unwritten => {
                    "INSERT INTO chain_heads (resource, seq, hash) VALUES ($1, $2, $3) \
                     ON CONFLICT (resource) DO UPDATE SET seq = excluded.seq, hash = excluded.hash"
                }
            };
            on_db!(conn.reborrow(), conn => sqlx::query(sql)
                .bind(resource.as_str())
                .bind(*seq)
                .bind(hash.as_str())
                .execute(conn)
                .await
                .map(drop))?;
        }
        Ok(())
    }
}

async fn head_in(
    conn: Conn<'_>,
    sql: &str,
    resource: &str,
) -> Result<Option<(i64, String)>, StoreError> {
    // `sql` selects `chain_seq, chain_hash`, in that order.
    Ok(on_db!(conn, conn => sqlx::query_as(sql)
        .bind(resource)
        .fetch_optional(conn)
        .await?))
}

/// The `chain_heads` row of a resource without a row of its own, the genesis where there is
/// none. PostgreSQL creates it if missing and locks it.
async fn unwritten_head(conn: Conn<'_>, resource: &str) -> Result<(i64, String), StoreError> {
    let head: Option<(i64, String)> = match conn {
        Native::Postgres(conn) => {
            sqlx::query_as(
                "INSERT INTO chain_heads (resource, seq, hash) VALUES ($1, $2, $3) \
                 ON CONFLICT (resource) DO UPDATE SET resource = excluded.resource \
                 RETURNING seq, hash",
            )
            .bind(resource)
            .bind(0_i64)
            .bind(chain::GENESIS)
            .fetch_optional(conn)
            .await?
        }
        Native::Sqlite(conn) => {
            sqlx::query_as("SELECT seq, hash FROM chain_heads WHERE resource = $1")
                .bind(resource)
                .fetch_optional(conn)
                .await?
        }
    };
    Ok(head.unwrap_or_else(|| (0, chain::GENESIS.to_owned())))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::{ResourceState, Revision};

    fn written(seq: i64) -> ObservedResource {
        ObservedResource {
            state: ResourceState {
                highest_token: 3,
                revision: Revision::new(2).unwrap(),
            },
            owner: None,
            chain: (seq, format!("h{seq}")),
        }
    }

    #[test]
    fn a_written_resource_starts_from_its_row_and_others_from_chain_heads_or_genesis() {
        let keys = BTreeSet::from(["a", "b", "c"]);
        let resources = HashMap::from([("a".to_owned(), written(5))]);
        let starting = StartingHeads::new(
            &keys,
            &resources,
            vec![
                ("a".to_owned(), MOVED, String::new()),
                ("b".to_owned(), 2, "b2".to_owned()),
            ],
        )
        .unwrap();
        assert_eq!(starting.heads["a"], (5, "h5".to_owned()));
        assert_eq!(starting.heads["b"], (2, "b2".to_owned()));
        assert_eq!(starting.heads["c"], (0, chain::GENESIS.to_owned()));

        // b's row advances from 2; c's starts; b is created by the batch, so it is marked.
        let b_after = (4, "b4".to_owned());
        let c_after = (1, "c1".to_owned());
        let moves = UnwrittenMoves::new(
            &starting.unwritten,
            [("b", true, &b_after), ("c", false, &c_after)],
        );
        assert_eq!(moves.advances, [("b".to_owned(), MOVED, String::new(), 2)]);
        assert_eq!(moves.starts, [("c".to_owned(), 1, "c1".to_owned())]);
    }

    #[test]
    fn a_head_marked_moved_without_its_resource_is_an_error() {
        let keys = BTreeSet::from(["a"]);
        let error = StartingHeads::new(
            &keys,
            &HashMap::new(),
            vec![("a".to_owned(), MOVED, String::new())],
        )
        .err()
        .expect("inconsistent");
        assert!(error.to_string().contains("moved"), "{error}");
    }
}
