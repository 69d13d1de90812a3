//! Incident reports: histories with known answers, built on the daemon's own (manual) clock,
//! reported by `GET /v1/overlaps/{id}/report` and `fencewatch audit report`, member by member.

use crate::both_backends;
use crate::helpers::{Backend, TestApp, TestDb};
use crate::test_db;
use chrono::{DateTime, TimeDelta, Utc};
use fencewatch::domain::audit::format_rfc3339_micros;
use fencewatch::domain::clock::ManualClock;
use fencewatch::store::{Store, StoreOptions};
use rstest::rstest;
use rstest_reuse::apply;
use serde_json::{json, Value};
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::process::Command;

const BIN: &str = env!("CARGO_BIN_EXE_fencewatch");

/// A daemon and the clock its history is written on. On SQLite that is a manual clock the
/// test moves, so every figure is exact. On PostgreSQL the lease authority runs on the
/// database's clock (daemons sharing it must agree on expiry), so the test waits in real time
/// and the figures are known within `slack`.
struct Scene {
    db: TestDb,
    app: TestApp,
    clock: Option<Arc<ManualClock>>,
    start: DateTime<Utc>,
    /// How far a time or duration may be off the known answer.
    slack: TimeDelta,
}

impl Scene {
    async fn new(backend: Backend) -> Scene {
        let db = test_db!(backend);
        let (clock, start, slack) = match backend {
            Backend::Sqlite => {
                let start = DateTime::from_timestamp(Utc::now().timestamp(), 0).unwrap();
                (
                    Some(Arc::new(ManualClock::starting_at(start))),
                    start,
                    TimeDelta::zero(),
                )
            }
            Backend::Postgres => (None, Utc::now(), TimeDelta::milliseconds(400)),
        };
        let mut options = StoreOptions {
            max_connections: 8,
            ..StoreOptions::default()
        };
        if let Some(clock) = &clock {
            options.clock = clock.clone();
        }
        let store = Store::open(&db.url, &options).await.unwrap();
        let app = TestApp::on(&db).store(store).spawn().await;
        // In real time, the history starts once the daemon is up.
        let start = if clock.is_some() { start } else { Utc::now() };
        Scene {
            db,
            app,
            clock,
            start,
            slack,
        }
    }

    /// Moves the daemon's clock to `ms` after the start, or waits until then.
    async fn at(&self, ms: i64) {
        let target = self.start + TimeDelta::milliseconds(ms);
        match &self.clock {
            Some(clock) => {
                use fencewatch::domain::clock::Clock;
                let now = clock.now();
                assert!(target >= now, "the clock only moves forward");
                clock.advance((target - now).to_std().unwrap_or(Duration::ZERO));
            }
            None => {
                let wait = (target - Utc::now()).to_std().unwrap_or(Duration::ZERO);
                tokio::time::sleep(wait).await;
            }
        }
    }

    fn time(&self, ms: i64) -> String {
        format_rfc3339_micros(&(self.start + TimeDelta::milliseconds(ms)))
    }

    async fn lease(&self, action: &str, body: Value) -> Value {
        let reply = self
            .app
            .http
            .post(format!("{}/v1/leases/jobs/{action}", self.app.base))
            .json(&body)
            .send()
            .await
            .unwrap();
        let status = reply.status();
        let body: Value = reply.json().await.unwrap();
        assert_eq!(status, 200, "{action}: {body}");
        body
    }

    async fn write(&self, token: i64, owner: &str) -> u16 {
        self.app
            .put("totals")
            .token(token)
            .lease("jobs")
            .owner(owner)
            .body(format!("{owner}-{token}"))
            .send()
            .await
            .status
            .as_u16()
    }

    /// A write that names no lease: fenced by its token alone.
    async fn write_unleased(&self, token: i64, owner: &str) -> u16 {
        self.app
            .put("totals")
            .token(token)
            .owner(owner)
            .body(format!("{owner}-{token}"))
            .send()
            .await
            .status
            .as_u16()
    }

    /// Checks `report` member by member against `expected`, where a time is given as
    /// milliseconds after the start: times and durations within the slack, the rest exactly.
    fn assert_facts(&self, report: &Value, expected: &Value) {
        let members = expected.as_object().unwrap();
        let got = report.as_object().unwrap();
        let mut names: Vec<&String> = got.keys().filter(|k| *k != "timeline").collect();
        names.sort();
        let mut want: Vec<&String> = members.keys().collect();
        want.sort();
        assert_eq!(names, want, "the report's members");
        for (name, value) in members {
            let actual = &got[name];
            if name.ends_with("_at") && !value.is_null() {
                let at = DateTime::parse_from_rfc3339(actual.as_str().unwrap_or_default())
                    .unwrap_or_else(|_| panic!("{name}: {actual}"));
                let off = at.with_timezone(&Utc)
                    - (self.start + TimeDelta::milliseconds(value.as_i64().unwrap()));
                assert!(
                    off.abs() <= self.slack,
                    "{name}: {actual}, expected {value} ms in"
                );
            } else if name.ends_with("_ms") && !value.is_null() {
                let off = actual.as_i64().unwrap() - value.as_i64().unwrap();
                assert!(
                    off.abs() <= 2 * self.slack.num_milliseconds(),
                    "{name}: {actual}, expected {value}"
                );
            } else {
                assert_eq!(actual, value, "{name}");
            }
        }
    }

    /// worker-a holds generation 1 of lease `jobs` from 0 s (5 s TTL), writes, renews at 2 s
    /// (to 7 s) and stalls; worker-b takes the lease over at 9 s and writes at 10 s; worker-a
    /// wakes at 12.5 s and is refused at 12.5 s, 13 s and 15 s. With `late_write`, worker-a
    /// also writes at 8 s: after its lapse, before any successor, accepted (no `Fencing-Lease`).
    async fn paused_holder(&self, late_write: bool) -> i64 {
        let a = self
            .lease("acquire", json!({"holder": "worker-a", "ttl_ms": 5000}))
            .await;
        assert_eq!(a["token"], 1);
        assert_eq!(self.write(1, "worker-a").await, 201);
        self.at(2_000).await;
        self.lease("renew", json!({"holder": "worker-a", "token": 1}))
            .await;
        if late_write {
            self.at(8_000).await;
            assert_eq!(self.write(1, "worker-a").await, 200);
        }
        self.at(9_000).await;
        let b = self
            .lease("acquire", json!({"holder": "worker-b", "ttl_ms": 5000}))
            .await;
        assert_eq!(b["token"], 2);
        self.at(10_000).await;
        assert_eq!(self.write(2, "worker-b").await, 200);
        for ms in [12_500, 13_000, 15_000] {
            self.at(ms).await;
            assert_eq!(self.write(1, "worker-a").await, 409);
        }
        let overlaps = self.app.get("/v1/overlaps").await;
        let list = overlaps.json["overlaps"].as_array().unwrap();
        assert_eq!(list.len(), 1, "{}", overlaps.json);
        list[0]["id"].as_i64().unwrap()
    }
}

/// Runs `fencewatch audit --database URL ARGS`: exit code, stdout, stderr.
async fn audit(url: &str, args: &[&str]) -> (i32, String, String) {
    let output = Command::new(BIN)
        .args(["audit", "--database", url])
        .args(args)
        .env("FENCEWATCH_LOG", "warn")
        .output()
        .await
        .unwrap();
    (
        output.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&output.stdout).into_owned(),
        String::from_utf8_lossy(&output.stderr).into_owned(),
    )
}

/// The timeline as (kind, event, generation, owner, count) lines.
fn lines(report: &Value) -> Vec<(String, String, i64, String, u64)> {
    report["timeline"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| {
            (
                e["kind"].as_str().unwrap().to_owned(),
                e["event"].as_str().unwrap().to_owned(),
                e["generation"].as_i64().unwrap(),
                e["owner"].as_str().unwrap().to_owned(),
                e["count"].as_u64().unwrap(),
            )
        })
        .collect()
}

fn line(
    kind: &str,
    event: &str,
    g: i64,
    owner: &str,
    count: u64,
) -> (String, String, i64, String, u64) {
    (
        kind.to_owned(),
        event.to_owned(),
        g,
        owner.to_owned(),
        count,
    )
}

#[rstest]
#[case::sqlite_paused(Backend::Sqlite, false)]
#[case::sqlite_late_write(Backend::Sqlite, true)]
#[cfg_attr(
    not(fencewatch_pg),
    ignore = "needs PostgreSQL: set FENCEWATCH_TEST_PG"
)]
#[case::postgres_paused(Backend::Postgres, false)]
#[cfg_attr(
    not(fencewatch_pg),
    ignore = "needs PostgreSQL: set FENCEWATCH_TEST_PG"
)]
#[case::postgres_late_write(Backend::Postgres, true)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_paused_holders_incident_is_reported_with_known_figures(
    #[case] backend: Backend,
    #[case] late_write: bool,
) {
    let scene = Scene::new(backend).await;
    let id = scene.paused_holder(late_write).await;
    let reply = scene.app.get(&format!("/v1/overlaps/{id}/report")).await;
    assert_eq!(reply.status, 200, "{}", reply.json);
    let report = reply.json;
    let (last_active, pause, after_lapse) = if late_write {
        (8_000, 4_500, 1)
    } else {
        (2_000, 10_500, 0)
    };
    let expected = json!({
        "incident": id,
        "resource": "totals",
        "source": null,
        "stale_generation": 1,
        "stale_owner": "worker-a",
        "superseding_generation": 2,
        "superseding_owner": "worker-b",
        "stale_last_active_at": last_active,
        "stale_grant_lapsed_at": 7_000,
        "superseding_acquired_at": 9_000,
        "superseding_first_write_at": 10_000,
        "first_refused_at": 12_500,
        "last_refused_at": 15_000,
        "refused": 3,
        "pause_ms": pause,
        "zombie_lifetime_ms": 2_500,
        "accepted_after_lapse": after_lapse,
    });
    scene.assert_facts(&report, &expected);
    let timeline = report["timeline"].clone();

    // The window: a second before the stale owner's last activity to a second after its last
    // refusal; the refusals folded into one line.
    let mut want = Vec::new();
    if late_write {
        want.push(line("write", "accepted", 1, "worker-a", 1));
    } else {
        want.push(line("lease", "renewed", 1, "worker-a", 1));
    }
    want.extend([
        line("lease", "expired", 1, "worker-a", 1),
        line("lease", "acquired", 2, "worker-b", 1),
        line("write", "accepted", 2, "worker-b", 1),
        line("write", "superseded", 1, "worker-a", 3),
    ]);
    assert_eq!(lines(&report), want, "{timeline:#}");
    let refusals = timeline.as_array().unwrap().last().unwrap();
    assert_eq!(refusals["at"], report["first_refused_at"]);
    assert_eq!(refusals["last_at"], report["last_refused_at"]);

    // The command reads the same facts from the database alone.
    let (code, stdout, stderr) = audit(
        &scene.db.url,
        &["report", &id.to_string(), "--format", "json"],
    )
    .await;
    assert_eq!(code, 0, "{stderr}");
    let from_cli: Value = serde_json::from_str(&stdout).unwrap();
    assert_eq!(from_cli, report);

    // Text and Markdown say the same figures.
    let (code, text, _) = audit(&scene.db.url, &["report", &id.to_string()]).await;
    assert_eq!(code, 0);
    let pause = report["pause_ms"].as_i64().unwrap();
    let pause_text = format!("{}.{:03} s", pause / 1000, pause % 1000);
    assert!(
        text.contains(&format!("Pause:                    {pause_text}")),
        "{text}"
    );
    let (code, md, _) = audit(
        &scene.db.url,
        &["report", &id.to_string(), "--format", "md"],
    )
    .await;
    assert_eq!(code, 0);
    assert!(md.contains(&format!("| Pause | {pause_text} |")), "{md}");
    assert!(md.contains("| Refused attempts | 3 |"), "{md}");
    assert!(md.contains("|---|---|"), "{md}");
}

#[apply(both_backends)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unknown_incident_is_a_404_and_a_bad_id_a_400(#[case] backend: Backend) {
    let scene = Scene::new(backend).await;
    scene
        .app
        .get("/v1/overlaps/999/report")
        .await
        .assert_problem(404, "not-found");
    scene
        .app
        .get("/v1/overlaps/abc/report")
        .await
        .assert_problem(400, "invalid-request");
    scene
        .app
        .get("/v1/overlaps/0/report")
        .await
        .assert_problem(400, "invalid-request");
    scene
        .app
        .get("/v1/overlaps/1/report?format=html")
        .await
        .assert_problem(400, "invalid-request");
    // The command says so and fails, on a database the daemon created.
    let (code, stdout, stderr) = audit(&scene.db.url, &["report", "999"]).await;
    assert_ne!(code, 0);
    assert!(stdout.is_empty());
    assert!(stderr.contains("no incident 999"), "{stderr}");
}

/// Tokens without a lease: the history cannot tell a lapse, and says so with `null`.
#[apply(both_backends)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_a_lease_the_lapse_is_null(#[case] backend: Backend) {
    let scene = Scene::new(backend).await;
    assert_eq!(scene.write_unleased(4, "old").await, 201);
    scene.at(1_000).await;
    assert_eq!(scene.write_unleased(5, "new").await, 200);
    scene.at(3_000).await;
    assert_eq!(scene.write_unleased(4, "old").await, 409);
    let id = scene.app.get("/v1/overlaps").await.json["overlaps"][0]["id"]
        .as_i64()
        .unwrap();
    let report = scene
        .app
        .get(&format!("/v1/overlaps/{id}/report"))
        .await
        .json;
    for member in [
        "stale_grant_lapsed_at",
        "superseding_acquired_at",
        "accepted_after_lapse",
    ] {
        assert!(report[member].is_null(), "{member}: {report}");
    }
    scene.assert_facts(
        &report,
        &json!({
            "incident": id,
            "resource": "totals",
            "source": null,
            "stale_generation": 4,
            "stale_owner": "old",
            "superseding_generation": 5,
            "superseding_owner": "new",
            "stale_last_active_at": 0,
            "stale_grant_lapsed_at": null,
            "superseding_acquired_at": null,
            "superseding_first_write_at": 1_000,
            "first_refused_at": 3_000,
            "last_refused_at": 3_000,
            "refused": 1,
            "pause_ms": 3_000,
            "zombie_lifetime_ms": 0,
            "accepted_after_lapse": null,
        }),
    );
}

/// `audit summary` aggregates the incidents since a time; `audit timeline --around` shows the
/// incident's window only, with renewals folded.
#[apply(both_backends)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_summary_and_the_bounded_timeline(#[case] backend: Backend) {
    let scene = Scene::new(backend).await;
    let id = scene.paused_holder(true).await;
    let (code, stdout, stderr) =
        audit(&scene.db.url, &["summary", "--since", "1h", "--json"]).await;
    assert_eq!(code, 0, "{stderr}");
    let summary: Value = serde_json::from_str(&stdout).unwrap();
    assert_eq!(summary["incidents"], 1);
    assert_eq!(
        summary["by_owner"],
        json!([{"name": "worker-a", "incidents": 1}])
    );
    assert_eq!(
        summary["by_resource"],
        json!([{"name": "totals", "incidents": 1}])
    );
    let near = |value: &Value, want: i64| {
        let off = value.as_i64().unwrap() - want;
        assert!(
            off.abs() <= 2 * scene.slack.num_milliseconds(),
            "{value}, expected {want}"
        );
    };
    near(&summary["pause_ms"]["p50"], 4_500);
    near(&summary["zombie_lifetime_ms"]["max"], 2_500);
    assert_eq!(summary["accepted_after_lapse"], 1);

    let (code, stdout, stderr) = audit(
        &scene.db.url,
        &["timeline", "totals", "--around", &id.to_string(), "--json"],
    )
    .await;
    assert_eq!(code, 0, "{stderr}");
    let timeline: Value = serde_json::from_str(&stdout).unwrap();
    // From a second before the lapse (7 s) to a second after the last refusal (15 s).
    scene.assert_facts(
        &json!({"since_at": timeline["since"], "until_at": timeline["until"]}),
        &json!({"since_at": 6_000, "until_at": 16_000}),
    );
    let first = &timeline["entries"][0];
    assert_eq!(
        (first["kind"].as_str(), first["outcome"].as_str()),
        (Some("write"), Some("accepted"))
    );
    scene.assert_facts(
        &json!({"first_at": first["at"]}),
        &json!({"first_at": 8_000}),
    );
    // The value before the window's first write is the one accepted before the window.
    assert_eq!(first["revision_before"], 1);
}

/// Runs headless Chromium on a local file with every name resolving nowhere and no proxy
/// reachable, so that the page can draw only what it carries; returns its stdout.
async fn chromium_offline(browser: &str, args: &[String], profile: &std::path::Path) -> String {
    let output = tokio::time::timeout(
        Duration::from_secs(90),
        Command::new(browser)
            .args([
                "--headless",
                "--no-sandbox",
                "--disable-gpu",
                "--no-first-run",
                "--disable-background-networking",
                "--disable-component-update",
                "--disable-sync",
                "--proxy-server=127.0.0.1:9",
                "--host-resolver-rules=MAP * ~NOTFOUND",
                "--window-size=1000,1100",
                "--hide-scrollbars",
            ])
            .arg(format!("--user-data-dir={}", profile.display()))
            .args(args)
            .stdin(std::process::Stdio::null())
            .kill_on_drop(true)
            .output(),
    )
    .await
    .expect("chromium finishes within 90 s")
    .expect("run chromium");
    String::from_utf8_lossy(&output.stdout).into_owned()
}

/// The HTML report, opened in a real browser without network: its lanes are laid out with
/// width, the grant bars, refused ticks and uncovered window drawn; a screenshot is taken.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_html_report_renders_its_lanes_offline_in_chromium() {
    let Some(browser) = crate::browser::chromium() else {
        return;
    };
    let scene = Scene::new(Backend::Sqlite).await;
    let id = scene.paused_holder(true).await;
    let dir = tempfile::tempdir().unwrap();
    let page = dir.path().join("incident.html");
    let (code, stdout, stderr) = audit(
        &scene.db.url,
        &[
            "report",
            &id.to_string(),
            "--format",
            "html",
            "--output",
            page.to_str().unwrap(),
        ],
    )
    .await;
    assert_eq!(code, 0, "{stderr}");
    assert!(stdout.is_empty(), "the page went to the file");
    let html = std::fs::read_to_string(&page).unwrap();
    // Nothing to fetch: the only URL is the SVG namespace, which is a name, not a request.
    assert_eq!(
        html.matches("http").count(),
        html.matches("http://www.w3.org/2000/svg").count(),
        "{html}"
    );
    for fetches in ["src=", "href=", "url(", "@import"] {
        assert!(!html.contains(fetches), "{fetches}");
    }

    // A copy with a script that measures what the browser drew and writes it into the page.
    let probe = dir.path().join("probe.html");
    let script = r#"<script>
const box = (s) => [...document.querySelectorAll(s)].map((e) => {
  const r = e.getBoundingClientRect(); return [Math.round(r.width), Math.round(r.height)]; });
document.body.setAttribute('data-drawn', JSON.stringify({
  lanes: box('svg .lane'), held: box('svg .held'), refused: box('svg .refused line'),
  uncovered: box('svg .uncovered'), markers: box('svg .marker') }));
</script></body>"#;
    std::fs::write(&probe, html.replace("</body>", script)).unwrap();
    let profile = dir.path().join("profile");
    let dom = chromium_offline(
        &browser,
        &[
            "--dump-dom".to_owned(),
            format!("file://{}", probe.display()),
        ],
        &profile,
    )
    .await;
    let drawn = dom
        .split("data-drawn=\"")
        .nth(1)
        .and_then(|rest| rest.split('"').next())
        .unwrap_or_else(|| panic!("no measurements in {dom}"))
        .replace("&quot;", "\"");
    let drawn: Value = serde_json::from_str(&drawn).unwrap();
    let sizes = |what: &str| -> Vec<(i64, i64)> {
        drawn[what]
            .as_array()
            .unwrap()
            .iter()
            .map(|wh| (wh[0].as_i64().unwrap(), wh[1].as_i64().unwrap()))
            .collect()
    };
    let lanes = sizes("lanes");
    assert_eq!(lanes.len(), 2, "one lane per owner and generation: {drawn}");
    for (width, height) in &lanes {
        assert!(*width > 600 && *height > 10, "{drawn}");
    }
    assert_eq!(sizes("held").len(), 2, "{drawn}");
    assert!(sizes("held").iter().all(|(w, _)| *w > 0), "{drawn}");
    // Three refusals folded into one run: a tick at each end.
    assert_eq!(sizes("refused").len(), 2, "{drawn}");
    let uncovered = sizes("uncovered");
    assert_eq!(uncovered.len(), 1, "{drawn}");
    assert!(
        uncovered[0].0 > 10,
        "the window from the lapse to the first write: {drawn}"
    );
    assert_eq!(sizes("markers").len(), 2, "lapse and takeover: {drawn}");

    let shot = dir.path().join("shot.png");
    let started = Instant::now();
    chromium_offline(
        &browser,
        &[
            format!("--screenshot={}", shot.display()),
            format!("file://{}", page.display()),
        ],
        &profile,
    )
    .await;
    let png = std::fs::read(&shot).unwrap();
    assert_eq!(&png[..8], b"\x89PNG\r\n\x1a\n");
    assert!(
        png.len() > 10_000,
        "a blank page is smaller: {} bytes",
        png.len()
    );
    eprintln!("screenshot in {:?}", started.elapsed());
}

/// A resource with 10,000 rows: `--around` prints the incident's window only (the renewals in
/// it folded), read from the database by the window rather than the whole history. The time
/// taken is printed for docs/performance.md, not asserted (a shared machine's figures vary).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn around_an_incident_on_a_long_history_prints_only_its_window() {
    let scene = Scene::new(Backend::Sqlite).await;
    const CHUNK: i64 = 20;
    const CHUNKS: i64 = 250;
    let burst = |token: i64, owner: &'static str| {
        let scene = &scene;
        async move {
            let writes = (0..CHUNK).map(|_| scene.write(token, owner));
            for status in futures_util::future::join_all(writes).await {
                assert!(status == 200 || status == 201, "{status}");
            }
        }
    };
    scene
        .lease("acquire", json!({"holder": "worker-a", "ttl_ms": 5000}))
        .await;
    // worker-a: 5,000 writes over 25 s, renewing every 100 ms.
    for chunk in 0..CHUNKS {
        scene.at(chunk * 100).await;
        burst(1, "worker-a").await;
        scene
            .lease("renew", json!({"holder": "worker-a", "token": 1}))
            .await;
    }
    let last = (CHUNKS - 1) * 100;
    // Its grant lapses at last + 5 s; worker-b takes over a second later and writes; worker-a
    // is refused twice.
    scene.at(last + 6_000).await;
    scene
        .lease("acquire", json!({"holder": "worker-b", "ttl_ms": 60_000}))
        .await;
    scene.at(last + 6_500).await;
    assert_eq!(scene.write(2, "worker-b").await, 200);
    scene.at(last + 7_000).await;
    assert_eq!(scene.write(1, "worker-a").await, 409);
    scene.at(last + 7_500).await;
    assert_eq!(scene.write(1, "worker-a").await, 409);
    // worker-b: 5,000 more writes after the incident.
    for chunk in 0..CHUNKS {
        scene.at(last + 8_600 + chunk * 100).await;
        burst(2, "worker-b").await;
    }
    let rows = scene.app.store.max_audit_id().await.unwrap();
    assert!(rows >= 10_000, "{rows} rows");
    let id = scene.app.get("/v1/overlaps").await.json["overlaps"][0]["id"]
        .as_i64()
        .unwrap();

    let started = Instant::now();
    let (code, text, stderr) = audit(
        &scene.db.url,
        &["timeline", "totals", "--around", &id.to_string()],
    )
    .await;
    let took = started.elapsed();
    assert_eq!(code, 0, "{stderr}");
    eprintln!("audit timeline --around on {rows} rows: {took:?} (the whole command)");
    let (code, json_text, _) = audit(
        &scene.db.url,
        &["timeline", "totals", "--around", &id.to_string(), "--json"],
    )
    .await;
    assert_eq!(code, 0);
    let timeline: Value = serde_json::from_str(&json_text).unwrap();
    assert_eq!(timeline["since"], scene.time(last - 1_000));
    assert_eq!(timeline["until"], scene.time(last + 8_500));
    let entries = timeline["entries"].as_array().unwrap();
    // A second of worker-a's writes (11 bursts of 20, the window's start included) and the
    // incident's three: nothing else.
    let writes = entries.iter().filter(|e| e["kind"] == "write").count();
    assert_eq!(writes, 11 * 20 + 1 + 2, "{}", entries.len());
    let (since, until) = (scene.time(last - 1_000), scene.time(last + 8_500));
    for entry in entries {
        let at = entry["at"].as_str().unwrap();
        assert!(at >= since.as_str() && at <= until.as_str(), "{entry}");
    }
    // The window's eleven renewals, one after each burst, make one line.
    let renewals: Vec<&Value> = entries
        .iter()
        .filter(|e| e["kind"] == "lease" && e["event"] == "renewed")
        .collect();
    assert_eq!(renewals.len(), 1, "{renewals:?}");
    assert_eq!(renewals[0]["count"], 11);
    assert_eq!(renewals[0]["last_at"], scene.time(last));
    assert!(text.contains("renewed ×11"), "{text}");
    assert!(text.lines().count() < 300, "{} lines", text.lines().count());
}
