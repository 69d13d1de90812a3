//! The test harness: a fresh database per test on either backend, the daemon in-process or as a
//! real process, and a small HTTP client for the contract. One file per job; the tests name
//! everything through `helpers::`.

mod app;
mod db;
mod http;
mod owndb;
mod process;
mod raw;
mod sse;

pub use app::TestApp;
pub use db::{Backend, TestDb};
pub use http::{audit_of, encode, http_builder, http_client, Put, Reply};
pub use owndb::{audit_of_scope, with_user, Guard, UserConn, UserDb, ORDERS};
pub use process::{bench_report, fencewatch, peer, Daemon, DaemonLog};
pub use raw::{Raw, RawConn, RawPool};
pub use sse::SseClient;

/// A small deterministic generator so that failures replay exactly.
pub struct Rng(fastrand::Rng);

impl Rng {
    pub fn new(seed: u64) -> Self {
        Self(fastrand::Rng::with_seed(seed))
    }

    pub fn below(&mut self, bound: u64) -> u64 {
        self.0.u64(..bound)
    }
}
