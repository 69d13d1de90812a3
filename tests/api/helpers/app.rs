//! The daemon's router served in this process.
//!
//! One way to start it: `TestApp::spawn(&db)` with every setting at its default, and
//! `TestApp::on(&db)` for anything else, naming only the settings the test is about:
//!
//! ```ignore
//! let app = TestApp::on(&db)
//!     .limits(limits)  // fence and lease limits (default: `Limits::default()`)
//!     .access(access)  // keys, allowed origins and hosts (default: none of them)
//!     .keys(keys)      // just the keys: an `Arc<ApiKeys>` or an `Option` of one
//!     .live(live)      // alerts, overlaps, the subscriber cap (default: `LiveConfig::default()`)
//!     .store(store)    // a store on `db` the test opened itself, with hooks or a clock
//!     .spawn()
//!     .await;
//! ```
//!
//! Anything not named keeps its default. Only `access` and `keys` overlap: name `keys` after.

use super::db::TestDb;
use super::http::{audit_of, http_client, Put, Reply};
use fencewatch::app::service::Limits;
use fencewatch::http::auth::ApiKeys;
use fencewatch::http::{router, serve, Access};
use fencewatch::live::{Live, LiveConfig};
use fencewatch::store::Store;
use serde_json::Value;
use std::sync::Arc;

/// The daemon's router served in this process on a free port.
pub struct TestApp {
    pub base: String,
    pub http: reqwest::Client,
    pub store: Store,
    pub live: Live,
}

/// A `TestApp` to be: every setting the daemon's default until the test names it. Made by
/// `TestApp::on`, started by `spawn`.
#[must_use = "nothing runs until `spawn`"]
pub struct AppBuilder<'a> {
    db: &'a TestDb,
    store: Option<Store>,
    limits: Limits,
    live: LiveConfig,
    access: Access,
}

impl TestApp {
    /// The daemon with every default (no API keys, no allowed origins) on a store of its own on
    /// `db`: `TestApp::on(db).spawn()`.
    pub async fn spawn(db: &TestDb) -> TestApp {
        Self::on(db).spawn().await
    }

    /// The daemon on `db` with settings of the test's choosing; see the module's example.
    pub fn on(db: &TestDb) -> AppBuilder<'_> {
        AppBuilder {
            db,
            store: None,
            limits: Limits::default(),
            live: LiveConfig::default(),
            access: Access::default(),
        }
    }

    pub fn put(&self, key: &str) -> Put {
        Put::new(&self.http, format!("{}/v1/resources/{key}", self.base))
    }

    pub async fn get(&self, path: &str) -> Reply {
        Reply::from(
            self.http
                .get(format!("{}{path}", self.base))
                .send()
                .await
                .expect("GET"),
        )
        .await
    }

    /// Every audit row of `resource`, oldest first, following the pages.
    pub async fn audit_of(&self, resource: &str) -> Vec<Value> {
        audit_of(&self.http, &self.base, resource).await
    }
}

impl AppBuilder<'_> {
    /// The fence's and the lease authority's limits (`--max-value-bytes`, `--require-lease`, …).
    pub fn limits(mut self, limits: Limits) -> Self {
        self.limits = limits;
        self
    }

    /// The API keys (`--api-key-file`); `None` leaves `/v1` open, as without the flag. Sets only
    /// the keys of the access set so far, so name it after `access`.
    pub fn keys(mut self, keys: impl Into<Option<Arc<ApiKeys>>>) -> Self {
        self.access.api_keys = keys.into();
        self
    }

    /// Who may call: API keys, allowed web origins and allowed hosts, all of them replaced.
    pub fn access(mut self, access: Access) -> Self {
        self.access = access;
        self
    }

    /// The live side's settings: alert rules, the overlap quiet period, the subscriber cap.
    pub fn live(mut self, live: LiveConfig) -> Self {
        self.live = live;
        self
    }

    /// A store the test opened on the database itself (with hooks, or on a manual clock)
    /// instead of the default `db.store()`.
    pub fn store(mut self, store: Store) -> Self {
        self.store = Some(store);
        self
    }

    /// Composes the daemon as `fencewatch serve` does and serves its router on a free port.
    pub async fn spawn(self) -> TestApp {
        let store = match self.store {
            Some(store) => store,
            None => self.db.store().await,
        };
        let state = fencewatch::commands::serve::start(
            store.clone(),
            self.limits,
            Default::default(),
            self.live,
            self.access,
        )
        .await
        .expect("start the live side");
        let live = state.live.clone();
        let app = router(state);
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind");
        let base = format!("http://{}", listener.local_addr().expect("address"));
        tokio::spawn(serve(
            listener,
            app,
            fencewatch::http::ServeLimits::default(),
            std::future::pending(),
        ));
        TestApp {
            base,
            http: http_client(),
            store,
            live,
        }
    }
}
