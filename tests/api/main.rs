//! Black-box tests of the daemon's contract: the real router or the real binary against a real
//! database, on SQLite and (when `FENCEWATCH_TEST_PG` is set) PostgreSQL.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod helpers;

use rstest_reuse::template;

/// A test of both databases: SQLite always, PostgreSQL where `FENCEWATCH_TEST_PG` was set when
/// the tests were built (see `build.rs`), ignored otherwise. `#[apply(both_backends)]` on a test
/// taking `#[case] backend: Backend`.
#[template]
#[rstest::rstest]
#[case::sqlite(crate::helpers::Backend::Sqlite)]
#[cfg_attr(
    not(fencewatch_pg),
    ignore = "needs PostgreSQL: set FENCEWATCH_TEST_PG"
)]
#[case::postgres(crate::helpers::Backend::Postgres)]
fn both_backends(#[case] backend: crate::helpers::Backend) {}

mod alerts;
mod audit_bytes;
mod audit_latest;
mod audit_log;
mod audit_tamper;
mod audit_tools;
mod audit_verify;
mod audit_verify_strings;
mod bad_input;
mod bench_fill;
mod bench_witness;
mod browser;
mod chain_heads;
mod cli;
mod clock;
mod concurrency;
mod deploy;
mod durability;
mod etcd;
mod events;
mod faults;
mod fence;
mod group_commit;
mod hostile;
mod idempotency;
mod incident_report;
mod interleaving;
mod layering;
mod lease_race;
mod leases;
mod limits;
mod metrics;
mod openapi;
mod overlaps;
mod owndb_attacks;
mod owndb_audit;
mod owndb_bench;
mod owndb_copies;
mod owndb_examples;
mod owndb_hash;
mod owndb_install;
mod owndb_lease;
mod owndb_load;
mod owndb_orm;
mod owndb_race;
mod owndb_rollback;
mod owndb_search_path;
mod partitions;
mod pg_schema;
mod prometheus;
mod readme;
mod rebinding;
mod refusals;
mod reset;
mod retention;
mod scopes;
mod secrets;
mod security;
mod tls;
mod tui;
mod watch;
mod witness;
mod worker_script;
mod zookeeper;
