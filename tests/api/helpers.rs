//! The test harness: a fresh database per test on either backend, the daemon in-process or as a
//! real process, and a small HTTP client for the contract.

use fencewatch::app::service::{FenceService, Limits};
use fencewatch::http::auth::ApiKeys;
use fencewatch::http::{router, serve, Access};
use fencewatch::live::{Live, LiveConfig};
use fencewatch::store::{Store, StoreOptions};
use reqwest::header::HeaderMap;
use reqwest::StatusCode;
use serde_json::Value;
use sqlx::Connection;
use std::process::Stdio;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Arc;
use std::time::Duration;
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::{Child, Command};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Backend {
    Sqlite,
    Postgres,
}

/// A fresh database: a SQLite file in a temporary folder, or a PostgreSQL schema of its own.
pub struct TestDb {
    pub url: String,
    /// Holds the SQLite file; removed when the test ends.
    _dir: tempfile::TempDir,
    pg: Option<(String, String)>,
}

static SCHEMA_COUNTER: AtomicU32 = AtomicU32::new(0);

impl TestDb {
    /// A fresh database. PostgreSQL tests are compiled as ignored unless `FENCEWATCH_TEST_PG`
    /// was set when they were built (see `build.rs`), so one that runs and finds it unset has
    /// nothing to run against: it fails rather than pass having run nothing.
    pub async fn new(backend: Backend) -> TestDb {
        let dir = tempfile::tempdir().expect("create a temporary folder");
        match backend {
            Backend::Sqlite => {
                let url = format!("sqlite://{}", dir.path().join("fencewatch.db").display());
                TestDb {
                    url,
                    _dir: dir,
                    pg: None,
                }
            }
            Backend::Postgres => {
                let base = std::env::var("FENCEWATCH_TEST_PG").expect(
                    "FENCEWATCH_TEST_PG is not set: build and run the PostgreSQL tests with it",
                );
                let schema = format!(
                    "fwtest_{}_{}_{}",
                    std::process::id(),
                    SCHEMA_COUNTER.fetch_add(1, Ordering::Relaxed),
                    chrono::Utc::now().timestamp_micros() % 1_000_000
                );
                let mut conn = sqlx::PgConnection::connect(&base)
                    .await
                    .unwrap_or_else(|e| {
                        panic!("PostgreSQL at FENCEWATCH_TEST_PG is unreachable: {e}")
                    });
                sweep_leftover_schemas(&mut conn).await;
                sqlx::query(&format!("CREATE SCHEMA {schema}"))
                    .execute(&mut conn)
                    .await
                    .expect("create a schema");
                conn.close().await.ok();
                let separator = if base.contains('?') { '&' } else { '?' };
                let url = format!("{base}{separator}options=-c%20search_path%3D{schema}");
                TestDb {
                    url,
                    _dir: dir,
                    pg: Some((base, schema)),
                }
            }
        }
    }

    pub async fn store(&self) -> Store {
        Store::open(
            &self.url,
            &StoreOptions {
                max_connections: 8,
                ..StoreOptions::default()
            },
        )
        .await
        .expect("open the store")
    }
}

impl Drop for TestDb {
    fn drop(&mut self) {
        let Some((base, schema)) = self.pg.take() else {
            return;
        };
        // Never block here: the test's runtime may still owe a background task the progress it
        // needs to end a transaction in this schema. A detached thread drops the schema once
        // its locks are free; a schema it could not drop is swept by the next run.
        std::thread::spawn(move || drop_schemas(&base, &[schema]));
    }
}

/// Drops schemas, waiting at most a few seconds for locks each time.
fn drop_schemas(base: &str, schemas: &[String]) {
    let Ok(runtime) = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    else {
        return;
    };
    runtime.block_on(async {
        let Ok(mut conn) = sqlx::PgConnection::connect(base).await else {
            return;
        };
        let _ = sqlx::query("SET lock_timeout = '5s'")
            .execute(&mut conn)
            .await;
        for schema in schemas {
            for _ in 0..3 {
                let dropped = sqlx::query(&format!("DROP SCHEMA IF EXISTS {schema} CASCADE"))
                    .execute(&mut conn)
                    .await;
                if dropped.is_ok() {
                    break;
                }
                tokio::time::sleep(Duration::from_secs(1)).await;
            }
        }
        let _ = conn.close().await;
    });
}

/// Drops the schemas left by test processes that no longer run (once per process).
async fn sweep_leftover_schemas(conn: &mut sqlx::PgConnection) {
    static SWEPT: std::sync::Once = std::sync::Once::new();
    let mut first = false;
    SWEPT.call_once(|| first = true);
    if !first {
        return;
    }
    let names: Result<Vec<String>, _> = sqlx::query_scalar(
        "SELECT nspname::text FROM pg_namespace WHERE nspname LIKE 'fwtest\\_%'",
    )
    .fetch_all(&mut *conn)
    .await;
    let names = names.unwrap_or_default();
    let dead: Vec<String> = names
        .into_iter()
        .filter(|name| {
            let pid = name.split('_').nth(1).and_then(|p| p.parse::<u32>().ok());
            pid.is_some_and(|pid| {
                pid != std::process::id() && !std::path::Path::new(&format!("/proc/{pid}")).exists()
            })
        })
        .collect();
    let _ = sqlx::query("SET lock_timeout = '2s'")
        .execute(&mut *conn)
        .await;
    for schema in dead {
        let _ = sqlx::query(&format!("DROP SCHEMA IF EXISTS {schema} CASCADE"))
            .execute(&mut *conn)
            .await;
    }
    let _ = sqlx::query("SET lock_timeout = 0")
        .execute(&mut *conn)
        .await;
}

/// A fresh database of `backend` for this test.
#[macro_export]
macro_rules! test_db {
    ($backend:expr) => {
        $crate::helpers::TestDb::new($backend).await
    };
}

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
            FenceService::new(store.clone(), limits),
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

pub async fn audit_of(http: &reqwest::Client, base: &str, resource: &str) -> Vec<Value> {
    let mut rows = Vec::new();
    let mut before: Option<i64> = None;
    loop {
        let mut url = format!("{base}/v1/audit?limit=1000&resource={}", encode(resource));
        if let Some(before) = before {
            url.push_str(&format!("&before={before}"));
        }
        let reply = Reply::from(http.get(url).send().await.expect("GET audit")).await;
        assert_eq!(reply.status, StatusCode::OK, "{}", reply.json);
        let page = reply.json["entries"].as_array().expect("entries").clone();
        if page.is_empty() {
            break;
        }
        before = page.last().and_then(|row| row["id"].as_i64());
        rows.extend(page);
    }
    rows.reverse();
    rows
}

pub fn encode(text: &str) -> String {
    text.bytes()
        .map(|b| {
            if b.is_ascii_alphanumeric() || b"-._~".contains(&b) {
                (b as char).to_string()
            } else {
                format!("%{b:02X}")
            }
        })
        .collect()
}

/// A PUT under construction.
pub struct Put {
    request: reqwest::RequestBuilder,
}

impl Put {
    pub fn new(http: &reqwest::Client, url: String) -> Self {
        Self {
            request: http.put(url),
        }
    }

    pub fn token(self, token: impl ToString) -> Self {
        self.header("Fencing-Token", token.to_string())
    }

    pub fn key(self, key: &str) -> Self {
        self.header("Idempotency-Key", format!("\"{key}\""))
    }

    pub fn if_match(self, revision: i64) -> Self {
        self.header("If-Match", format!("\"{revision}\""))
    }

    pub fn lease(self, lease: &str) -> Self {
        self.header("Fencing-Lease", lease)
    }

    pub fn owner(self, owner: &str) -> Self {
        self.header("Fencing-Owner", owner)
    }

    pub fn header(mut self, name: &str, value: impl AsRef<str>) -> Self {
        self.request = self.request.header(name, value.as_ref());
        self
    }

    pub fn body(mut self, body: impl Into<reqwest::Body>) -> Self {
        self.request = self.request.body(body);
        self
    }

    pub async fn send(self) -> Reply {
        Reply::from(self.request.send().await.expect("PUT")).await
    }
}

#[derive(Debug)]
pub struct Reply {
    pub status: StatusCode,
    pub headers: HeaderMap,
    pub body: Vec<u8>,
    pub json: Value,
}

impl Reply {
    pub async fn from(response: reqwest::Response) -> Reply {
        let status = response.status();
        let headers = response.headers().clone();
        let body = response.bytes().await.expect("body").to_vec();
        let json = serde_json::from_slice(&body).unwrap_or(Value::Null);
        Reply {
            status,
            headers,
            body,
            json,
        }
    }

    /// Like `from`, but `None` when the connection broke before the whole body arrived.
    pub async fn from_checked(response: reqwest::Response) -> Option<Reply> {
        let status = response.status();
        let headers = response.headers().clone();
        let body = response.bytes().await.ok()?.to_vec();
        let json = serde_json::from_slice(&body).ok()?;
        Some(Reply {
            status,
            headers,
            body,
            json,
        })
    }

    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.get(name).and_then(|v| v.to_str().ok())
    }

    pub fn content_type(&self) -> &str {
        self.header("content-type").unwrap_or_default()
    }

    /// Asserts the RFC 9457 shape and the problem's `type`.
    pub fn assert_problem(&self, status: u16, kind: &str) {
        assert_eq!(self.status.as_u16(), status, "{}", self.json);
        assert_eq!(
            self.content_type(),
            "application/problem+json",
            "{}",
            self.json
        );
        assert_eq!(self.json["type"], kind, "{}", self.json);
        assert_eq!(self.json["status"], status, "{}", self.json);
        assert!(self.json["title"].is_string(), "{}", self.json);
        assert!(self.json["detail"].is_string(), "{}", self.json);
    }
}

/// The daemon as a real process, as users run it.
pub struct Daemon {
    pub child: Child,
    pub base: String,
}

impl Daemon {
    pub async fn spawn(db: &TestDb, extra: &[&str]) -> Daemon {
        Self::spawn_on(&db.url, extra).await
    }

    /// A daemon on a database URL of the test's own making (through a proxy, say).
    pub async fn spawn_on(database_url: &str, extra: &[&str]) -> Daemon {
        let mut child = Command::new(env!("CARGO_BIN_EXE_fencewatch"))
            .args([
                "serve",
                "--listen",
                "127.0.0.1:0",
                "--database",
                database_url,
                "--db-max-connections",
                "8",
            ])
            .args(extra)
            .env("FENCEWATCH_LOG", "warn")
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .kill_on_drop(true)
            .spawn()
            .expect("start fencewatch serve");
        let stdout = child.stdout.take().expect("stdout");
        let mut lines = BufReader::new(stdout).lines();
        let first = tokio::time::timeout(Duration::from_secs(30), lines.next_line())
            .await
            .expect("the daemon announces its address within 30 s")
            .expect("read stdout")
            .expect("a first line");
        let base = first
            .strip_prefix("listening on ")
            .unwrap_or_else(|| panic!("unexpected first line {first:?}"))
            .to_owned();
        Daemon { child, base }
    }

    pub fn signal(&self, name: &str) {
        let pid = self.child.id().expect("running").to_string();
        let status = std::process::Command::new("kill")
            .args([&format!("-{name}"), &pid])
            .status()
            .expect("run kill");
        assert!(status.success());
    }

    pub async fn kill(mut self) {
        self.child.kill().await.expect("SIGKILL");
    }

    /// Sends SIGTERM and returns whether it exited cleanly.
    pub async fn terminate(mut self) -> bool {
        self.signal("TERM");
        tokio::time::timeout(Duration::from_secs(30), self.child.wait())
            .await
            .expect("stops within 30 s of SIGTERM")
            .expect("wait")
            .success()
    }
}

/// A builder for the tests' own HTTP clients, with the process's TLS provider in place.
pub fn http_builder() -> reqwest::ClientBuilder {
    fencewatch::tls::install_crypto_provider();
    reqwest::Client::builder()
}

pub fn http_client() -> reqwest::Client {
    http_builder().build().expect("build an HTTP client")
}

/// A small deterministic generator so that failures replay exactly.
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Self {
        Self(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1)
    }

    pub fn below(&mut self, bound: u64) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0 % bound
    }
}

/// One Server-Sent Event.
#[derive(Debug, Clone, Default)]
pub struct SseMessage {
    pub event: String,
    pub id: Option<String>,
    pub data: String,
}

impl SseMessage {
    pub fn json(&self) -> Value {
        serde_json::from_str(&self.data).expect("event data is JSON")
    }
}

/// A minimal SSE reader over a streaming response.
pub struct SseClient {
    response: reqwest::Response,
    buffer: String,
}

impl SseClient {
    pub async fn connect(base: &str, last_event_id: Option<i64>) -> SseClient {
        let mut request = http_client().get(format!("{base}/v1/events"));
        if let Some(id) = last_event_id {
            request = request.header("Last-Event-ID", id.to_string());
        }
        let response = request.send().await.expect("GET /v1/events");
        assert_eq!(response.status(), 200);
        assert!(response
            .headers()
            .get("content-type")
            .and_then(|v| v.to_str().ok())
            .is_some_and(|v| v.starts_with("text/event-stream")));
        SseClient {
            response,
            buffer: String::new(),
        }
    }

    /// The next event of any kind, or `None` if none arrives within `wait`.
    pub async fn next_within(&mut self, wait: Duration) -> Option<SseMessage> {
        let deadline = tokio::time::Instant::now() + wait;
        loop {
            if let Some(end) = self.buffer.find("\n\n") {
                let block: String = self.buffer.drain(..end + 2).collect();
                let mut message = SseMessage::default();
                for line in block.lines() {
                    if let Some(value) = line.strip_prefix("event:") {
                        message.event = value.trim_start().to_owned();
                    } else if let Some(value) = line.strip_prefix("id:") {
                        message.id = Some(value.trim_start().to_owned());
                    } else if let Some(value) = line.strip_prefix("data:") {
                        if !message.data.is_empty() {
                            message.data.push('\n');
                        }
                        message
                            .data
                            .push_str(value.strip_prefix(' ').unwrap_or(value));
                    }
                }
                if message.event.is_empty() && message.data.is_empty() {
                    continue; // a keep-alive comment
                }
                return Some(message);
            }
            let chunk = tokio::time::timeout_at(deadline, self.response.chunk())
                .await
                .ok()?;
            let chunk = chunk.expect("read the stream")?;
            self.buffer.push_str(&String::from_utf8_lossy(&chunk));
        }
    }

    /// The next event of kind `kind`, skipping others; panics after `wait`.
    pub async fn next_of(&mut self, kind: &str, wait: Duration) -> SseMessage {
        let deadline = tokio::time::Instant::now() + wait;
        loop {
            let left = deadline.saturating_duration_since(tokio::time::Instant::now());
            let message = self
                .next_within(left)
                .await
                .unwrap_or_else(|| panic!("no {kind} event within {wait:?}"));
            if message.event == kind {
                return message;
            }
        }
    }

    /// Write events until none arrives for `quiet` (other events do not count).
    pub async fn writes_until_quiet(&mut self, quiet: Duration) -> Vec<SseMessage> {
        let mut writes = Vec::new();
        let mut deadline = tokio::time::Instant::now() + quiet;
        loop {
            let left = deadline.saturating_duration_since(tokio::time::Instant::now());
            match self.next_within(left).await {
                Some(message) if message.event == "write" => {
                    writes.push(message);
                    deadline = tokio::time::Instant::now() + quiet;
                }
                Some(_) => {}
                None => return writes,
            }
        }
    }
}

/// A program the tests run for real (Alertmanager, promtool), if it is installed: when it is
/// not, the test is skipped, saying so, unless `FENCEWATCH_REQUIRE_PEERS=1` makes that a failure.
pub fn peer(path: &str) -> Option<String> {
    let runs = std::process::Command::new(path)
        .arg("--version")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|status| status.success());
    if !runs {
        assert!(
            std::env::var("FENCEWATCH_REQUIRE_PEERS").as_deref() != Ok("1"),
            "FENCEWATCH_REQUIRE_PEERS=1 but {path} is not installed"
        );
        eprintln!("skipping: {path} is not installed");
        return None;
    }
    Some(path.to_owned())
}
