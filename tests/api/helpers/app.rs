//! The daemon's router served in this process.

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

impl TestApp {
    pub async fn spawn(db: &TestDb) -> TestApp {
        Self::spawn_with(db, Limits::default()).await
    }

    pub async fn spawn_with(db: &TestDb, limits: Limits) -> TestApp {
        Self::spawn_keyed(db, limits, None).await
    }

    /// The router with these limits and, if given, API keys.
    pub async fn spawn_keyed(db: &TestDb, limits: Limits, keys: Option<Arc<ApiKeys>>) -> TestApp {
        Self::spawn_full(db, limits, LiveConfig::default(), keys).await
    }

    pub async fn spawn_full(
        db: &TestDb,
        limits: Limits,
        live: LiveConfig,
        keys: Option<Arc<ApiKeys>>,
    ) -> TestApp {
        Self::spawn_store(db.store().await, limits, live, keys).await
    }

    /// The router over a store prepared by the test (with hooks, say).
    pub async fn spawn_store(
        store: Store,
        limits: Limits,
        live: LiveConfig,
        keys: Option<Arc<ApiKeys>>,
    ) -> TestApp {
        let access = Access {
            api_keys: keys,
            ..Access::default()
        };
        Self::spawn_access(store, limits, live, access).await
    }

    /// The router with API keys and allowed web origins of the test's choosing.
    pub async fn spawn_access(
        store: Store,
        limits: Limits,
        live: LiveConfig,
        access: Access,
    ) -> TestApp {
        let state = fencewatch::commands::serve::start(
            store.clone(),
            limits,
            Default::default(),
            live,
            access,
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
