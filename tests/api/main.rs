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
mod interleaving;
mod layering;
mod leases;
mod limits;
mod metrics;
mod overlaps;
mod prometheus;
mod security;
mod tls;
mod tui;
