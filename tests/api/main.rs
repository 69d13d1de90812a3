//! Black-box tests of the daemon's contract: the real router or the real binary against a real
//! database, on SQLite and (when `FENCEWATCH_TEST_PG` is set) PostgreSQL.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod helpers;

mod alerts;
mod audit_tools;
mod bad_input;
mod browser;
mod chain_heads;
mod cli;
mod clock;
mod concurrency;
mod deploy;
mod durability;
#[cfg(feature = "etcd")]
mod etcd;
#[cfg(not(feature = "etcd"))]
mod etcd {
    /// Stands for the etcd authority's tests in a build without it, so that the count says so.
    #[test]
    #[ignore = "the etcd authority is built with --features etcd (needs protoc)"]
    fn etcd_authority() {}
}
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
mod owndb_audit;
mod owndb_bench;
mod owndb_examples;
mod owndb_hash;
mod owndb_install;
mod owndb_lease;
mod owndb_load;
mod owndb_race;
mod owndb_rollback;
mod owndb_search_path;
mod prometheus;
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
mod worker_script;
