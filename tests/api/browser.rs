//! A real browser (Debian's headless Chromium) against the daemon: a page on a foreign origin
//! tries what a browser lets any page send without asking, and changes nothing; a page on an
//! origin allowed with `--allow-origin` follows the live stream with `EventSource`.

use crate::helpers::{Backend, TestApp};
use crate::test_db;
use axum::routing::{get, post};
use fencewatch::http::origin::AllowedOrigins;
use fencewatch::http::Access;
use serde_json::json;
use std::process::Stdio;
use std::time::Duration;
use tokio::sync::mpsc;

/// The browser to drive, or `None` (and the test is skipped, saying so) when none is installed
/// and `FENCEWATCH_REQUIRE_PEERS` is not set.
pub(crate) fn chromium() -> Option<String> {
    let found = ["chromium", "chromium-browser"].into_iter().find(|name| {
        std::process::Command::new(name)
            .arg("--version")
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .is_ok_and(|status| status.success())
    });
    if found.is_none() {
        assert!(
            std::env::var("FENCEWATCH_REQUIRE_PEERS").as_deref() != Ok("1"),
            "FENCEWATCH_REQUIRE_PEERS=1 but no chromium is installed"
        );
        eprintln!("skipping: chromium is not installed");
    }
    found.map(str::to_owned)
}

/// Serves one page on a port of its own (its own origin); whatever the page POSTs to `/report`
/// comes out of the receiver.
async fn serve_page(html: String) -> (String, mpsc::Receiver<String>) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    serve_page_on(listener, html)
}

fn serve_page_on(
    listener: tokio::net::TcpListener,
    html: String,
) -> (String, mpsc::Receiver<String>) {
    let (sender, receiver) = mpsc::channel(16);
    let app = axum::Router::new()
        .route(
            "/",
            get(move || {
                let html = html.clone();
                async move { axum::response::Html(html) }
            }),
        )
        .route(
            "/report",
            post(move |body: String| {
                let sender = sender.clone();
                async move {
                    let _ = sender.send(body).await;
                }
            }),
        );
    let origin = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, app).await });
    (origin, receiver)
}

/// Opens `url` in a fresh headless Chromium, which runs until dropped.
fn open(browser: &str, url: &str, profile: &std::path::Path) -> tokio::process::Child {
    tokio::process::Command::new(browser)
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-quic",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
        ])
        .arg(format!("--user-data-dir={}", profile.display()))
        .arg(url)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .expect("start chromium")
}

async fn next_report(reports: &mut mpsc::Receiver<String>) -> String {
    tokio::time::timeout(Duration::from_secs(60), reports.recv())
        .await
        .expect("the page reports within 60 s")
        .expect("a report")
}

const ATTACK: &str = r#"<!doctype html><script>
const daemon = "DAEMON";
const lease = (action, body) => fetch(daemon + "/v1/leases/jobs/" + action, {
  method: "POST", mode: "no-cors", headers: {"Content-Type": "text/plain"},
  body: JSON.stringify(body)});
(async () => {
  const seen = [];
  for (const [action, body] of [
      ["release", {holder: "worker-1", token: 1}],
      ["acquire", {holder: "evil-page", ttl_ms: 86400000}]]) {
    try { await lease(action, body); seen.push(action + ": sent"); }
    catch (e) { seen.push(action + ": " + e); }
  }
  navigator.sendBeacon(daemon + "/v1/leases/jobs/acquire",
    JSON.stringify({holder: "evil-beacon", ttl_ms: 86400000}));
  try { const r = await fetch(daemon + "/v1/stats"); seen.push("read: " + r.status); }
  catch (e) { seen.push("read: blocked"); }
  await new Promise(done => setTimeout(done, 500));
  await fetch("/report", {method: "POST", body: seen.join("\n")});
})();
</script>"#;

const WATCH: &str = r#"<!doctype html><script>
const events = new EventSource("DAEMON/v1/events");
events.addEventListener("open", () => fetch("/report", {method: "POST", body: "open"}));
events.addEventListener("write", (event) => {
  fetch("/report", {method: "POST", body: "write " + event.data});
  events.close();
});
events.addEventListener("error", () => fetch("/report", {method: "POST", body: "error"}));
</script>"#;

#[cfg_attr(not(fencewatch_chromium), ignore = "needs chromium on the PATH")]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_foreign_page_changes_nothing_and_an_allowed_one_watches_live() {
    let Some(browser) = chromium() else { return };
    let db = test_db!(Backend::Sqlite);
    // The allowed page's origin is known before the daemon starts; its page is served later.
    let watch_listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let allowed = format!("http://{}", watch_listener.local_addr().unwrap());
    let access = Access {
        api_keys: None,
        allowed_origins: AllowedOrigins::parse(&[allowed.as_str()]).unwrap(),
        ..Access::default()
    };
    let app = TestApp::on(&db).access(access).spawn().await;
    let taken = app
        .http
        .post(format!("{}/v1/leases/jobs/acquire", app.base))
        .json(&json!({"holder": "worker-1", "ttl_ms": 600000}))
        .send()
        .await
        .unwrap();
    assert_eq!(taken.status(), 200);

    // The foreign page.
    let (attacker, mut reports) = serve_page(ATTACK.replace("DAEMON", &app.base)).await;
    let profile = tempfile::tempdir().unwrap();
    let page = open(&browser, &format!("{attacker}/"), profile.path());
    let report = next_report(&mut reports).await;
    drop(page);
    assert!(report.contains("read: blocked"), "{report}");
    let lease = app.get("/v1/leases/jobs").await;
    assert_eq!(lease.json["holder"], "worker-1", "{}", lease.json);
    assert_eq!(
        lease.json["token"], 1,
        "no generation was issued: {}",
        lease.json
    );
    assert_eq!(lease.json["state"], "held");

    // The allowed page, on the origin the daemon was told of.
    let (origin, mut watched_reports) =
        serve_page_on(watch_listener, WATCH.replace("DAEMON", &app.base));
    assert_eq!(origin, allowed);
    let profile = tempfile::tempdir().unwrap();
    let _page = open(&browser, &format!("{allowed}/"), profile.path());
    let opened = next_report(&mut watched_reports).await;
    assert_eq!(opened, "open", "the stream opened across origins");
    assert_eq!(
        app.put("jobs/out")
            .token(1)
            .lease("jobs")
            .body("seen live")
            .send()
            .await
            .status,
        201
    );
    let event = next_report(&mut watched_reports).await;
    assert!(event.starts_with("write "), "{event}");
    assert!(event.contains("\"resource\":\"jobs/out\""), "{event}");
}
