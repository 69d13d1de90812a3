//! The bounds of a PostgreSQL snapshot (`pg_current_snapshot()`), by which a reader of the audit
//! tells an id that will never be used from one whose transaction may still commit.

/// Every transaction with an id below `xmin` has ended; every one that starts from now on has an
/// id of at least `xmax`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Xids {
    pub xmin: i64,
    pub xmax: i64,
}
