//! The use cases between the edges and the store: each write, lease and read bounded by
//! `--db-timeout`, batched by group commit, and published to the live side after commit.

pub mod group_commit;
pub mod incident;
pub mod refusals;
pub mod retention;
pub mod service;
pub mod witness;
