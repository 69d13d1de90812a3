//! What differs between the databases' statements in applying a batch, behind one trait:
//! `Decider::apply_segment` (`mod.rs`) observes, decides (`plan`) and applies a segment the
//! same way on both, and each dialect (`sqlite`, `postgres`) says how its statements observe and
//! apply.

use super::plan::{Change, Plan};
use super::shared::Observed;
use crate::domain::FencedWrite;
use crate::store::native::Conn;
use crate::store::wal_sync::{CommitTicket, WalSync};
use crate::store::StoreError;
use std::collections::BTreeSet;
use std::future::Future;
use std::sync::Arc;

/// How a segment's observation starts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Opening {
    /// It begins the transaction: with its commit synced by `wal_sync` afterwards (group
    /// commit), or synced by the commit itself. (SQLite; PostgreSQL begins separately.)
    Begin { unsynced: bool },
    /// Inside the transaction begun before.
    Within,
}

/// How a segment's application ends.
pub(super) enum Closing<'a> {
    /// It commits the transaction; its WAL frames are synced by `unsynced` if given. (SQLite;
    /// PostgreSQL commits separately.)
    Commit { unsynced: Option<&'a Arc<WalSync>> },
    /// A later segment or the commit follows in the same transaction.
    Within,
}

/// What a segment's application found.
pub(super) enum Application {
    /// Everything it changed was as observed: the audit ids in order, and with a commit that
    /// is synced afterwards its ticket.
    Applied {
        ids: Vec<i64>,
        ticket: Option<CommitTicket>,
    },
    /// Something was no longer as observed and nothing was applied; the transaction must be
    /// rolled back. The ids drawn will never have a row.
    Changed { drawn_ids: Vec<i64> },
}

pub(super) trait Dialect: Sync {
    /// The database's native connection.
    type Connection: Send;
    /// Where a segment's audit rows go, learnt with its observation.
    type Position: Send;

    /// Reads what deciding `writes` needs: their resources, the operations they name, the
    /// chain heads of resources without a row, and where the audit rows go.
    fn observe(
        &self,
        conn: &mut Self::Connection,
        opening: Opening,
        keys: &BTreeSet<&str>,
        writes: &[FencedWrite],
    ) -> impl Future<Output = Result<Observed<Self::Position>, StoreError>> + Send;

    /// The connection as the store's statements common to both databases take it.
    fn native(conn: &mut Self::Connection) -> Conn<'_>;

    /// `rows` were changed on purpose between observing and applying (external locks'
    /// records): a check of the rows changed since the observation must expect them.
    fn expect_changes(position: &mut Self::Position, rows: i64);

    /// Applies the plan as a compare-and-set on what it was decided on.
    fn apply(
        &self,
        conn: &mut Self::Connection,
        position: Self::Position,
        plan: &Plan<'_>,
        closing: Closing<'_>,
    ) -> impl Future<Output = Result<Application, StoreError>> + Send;

    /// Records what an applied segment changed, before its transaction commits, where batches
    /// may be decided on the state this daemon's own commits left (`known`).
    fn applied(&self, changes: &[Change<'_>]);
}
