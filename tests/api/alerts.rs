//! Stale-owner alerts: pending for `for`, firing, resolved; notifications in Alertmanager's
//! format, re-sent while firing so that a real Alertmanager keeps them active; one incident per
//! resource; a receiver that is down slows nothing; one notification from a fleet of daemons,
//! and a new evaluator re-sends what it finds firing.

use crate::both_backends;
use crate::helpers::{http_client, peer, Backend, Daemon, Reply, SseClient, TestApp};
use crate::test_db;
use axum::extract::State;
use axum::routing::post;
use axum::{Json, Router};
use fencewatch::live::alerts::AlertConfig;
use fencewatch::live::LiveConfig;
use rstest_reuse::apply;
use serde_json::Value;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// A webhook receiver that keeps what it is sent, with the time it arrived.
#[derive(Clone, Default)]
pub(crate) struct Receiver {
    received: Arc<Mutex<Vec<(Instant, Value)>>>,
}

impl Receiver {
    pub(crate) async fn start() -> (Receiver, String) {
        let receiver = Receiver::default();
        let app = Router::new()
            .route(
                "/hook",
                post(
                    |State(r): State<Receiver>, Json(body): Json<Value>| async move {
                        r.received.lock().unwrap().push((Instant::now(), body));
                    },
                ),
            )
            .with_state(receiver.clone());
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}/hook", listener.local_addr().unwrap());
        tokio::spawn(async move { axum::serve(listener, app).await });
        (receiver, url)
    }

    pub(crate) fn with_status(&self, status: &str) -> Vec<(Instant, Value)> {
        self.received
            .lock()
            .unwrap()
            .iter()
            .filter(|(_, body)| body["status"] == status)
            .cloned()
            .collect()
    }

    pub(crate) async fn wait_for(&self, status: &str, wait: Duration) -> (Instant, Value) {
        let deadline = Instant::now() + wait;
        loop {
            if let Some(found) = self.with_status(status).into_iter().next() {
                return found;
            }
            assert!(
                Instant::now() < deadline,
                "no {status} notification within {wait:?}; got {:?}",
                self.received
                    .lock()
                    .unwrap()
                    .iter()
                    .map(|(_, body)| body["status"].clone())
                    .collect::<Vec<_>>()
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }
}

fn instant(time: &Value) -> chrono::DateTime<chrono::FixedOffset> {
    chrono::DateTime::parse_from_rfc3339(time.as_str().unwrap())
        .unwrap_or_else(|e| panic!("{time} is no RFC 3339 time: {e}"))
}

fn config(hook: &str, per_resource: bool) -> String {
    format!(
        r#"
[alerts]
evaluation_interval = "200ms"

[[alerts.rules]]
name = "Spike"
threshold = 2
window = "3s"
for = "1s"
keep_firing_for = "0s"
per_resource = {per_resource}
labels = {{ severity = "page" }}
summary = "stale owners are writing"

[[alerts.webhooks]]
url = "{hook}"
timeout = "1s"
max_retries = 3
"#
    )
}

async fn app_with_alerts(db: &crate::helpers::TestDb, text: &str) -> TestApp {
    let live = LiveConfig {
        alerts: Arc::new(AlertConfig::parse(text).unwrap()),
        ..LiveConfig::default()
    };
    TestApp::on(db).live(live).spawn().await
}

async fn stale_writes(app: &TestApp, resource: &str, count: usize) {
    app.put(resource)
        .token(10)
        .owner("new")
        .body("v")
        .send()
        .await;
    for _ in 0..count {
        app.put(resource)
            .token(9)
            .owner("old")
            .body("v")
            .send()
            .await
            .assert_problem(409, "stale-token");
    }
}

#[apply(both_backends)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_alert_fires_after_for_and_resolves_after_recovery(#[case] backend: Backend) {
    let db = test_db!(backend);
    let (receiver, hook) = Receiver::start().await;
    let app = app_with_alerts(&db, &config(&hook, false)).await;
    let mut events = SseClient::connect(&app.base, None).await;
    let alerts = app.get("/v1/alerts").await;
    assert_eq!(alerts.json["alerts"][0]["state"], "inactive");

    stale_writes(&app, "totals", 3).await;
    let condition_true = Instant::now();
    let (fired_at, firing) = receiver.wait_for("firing", Duration::from_secs(10)).await;
    assert!(
        fired_at.duration_since(condition_true) >= Duration::from_millis(800),
        "fired before `for` had passed"
    );
    assert_eq!(firing["version"], "4");
    assert_eq!(firing["receiver"], "fencewatch");
    assert_eq!(firing["groupLabels"]["alertname"], "Spike");
    let alert = &firing["alerts"][0];
    assert_eq!(
        (
            alert["status"].as_str(),
            alert["labels"]["alertname"].as_str(),
            alert["labels"]["severity"].as_str()
        ),
        (Some("firing"), Some("Spike"), Some("page"))
    );
    // Four re-sends (the default 1m) ahead.
    assert_eq!(
        instant(&alert["endsAt"]) - instant(&alert["startsAt"]),
        chrono::Duration::seconds(240)
    );
    assert_eq!(firing["groupKey"], r#"{}:{alertname="Spike"}"#);
    assert_eq!(alert["fingerprint"].as_str().unwrap().len(), 16);
    assert_eq!(alert["annotations"]["summary"], "stale owners are writing");
    assert!(alert["generatorURL"]
        .as_str()
        .unwrap()
        .ends_with("/v1/alerts"));

    let shown = app.get("/v1/alerts").await.json["alerts"][0].clone();
    assert_eq!(
        (shown["state"].as_str(), shown["value"].as_i64()),
        (Some("firing"), Some(3))
    );
    // The stats follow within a watcher tick.
    let deadline = Instant::now() + Duration::from_secs(5);
    while app.get("/v1/stats").await.json["firing_alerts"] != 1 {
        assert!(
            Instant::now() < deadline,
            "stats never showed the firing alert"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }

    // The rows age out of the 3 s window: resolved.
    let (_, resolved) = receiver.wait_for("resolved", Duration::from_secs(15)).await;
    let alert = &resolved["alerts"][0];
    assert_eq!(alert["status"], "resolved");
    assert_eq!(alert["startsAt"], firing["alerts"][0]["startsAt"]);
    let ended = instant(&alert["endsAt"]);
    assert!(
        ended > instant(&alert["startsAt"]) && ended < instant(&firing["alerts"][0]["endsAt"]),
        "a resolved alert ends when it resolved: {alert}"
    );
    assert_eq!(
        alert["fingerprint"], firing["alerts"][0]["fingerprint"],
        "the same alert"
    );
    assert_eq!(receiver.with_status("firing").len(), 1, "notified once");

    // Every state change was an alert event: pending, firing, inactive.
    let mut states = Vec::new();
    while states.last().map(String::as_str) != Some("inactive") {
        states.push(
            events
                .next_of("alert", Duration::from_secs(10))
                .await
                .json()["state"]
                .as_str()
                .unwrap()
                .to_owned(),
        );
    }
    assert_eq!(states, ["pending", "firing", "inactive"]);
    let metrics = String::from_utf8(app.get("/metrics").await.body).unwrap();
    assert!(metrics.contains("fencewatch_alerts_firing 0"), "{metrics}");
}

#[apply(both_backends)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn per_resource_rules_fire_for_the_resource(#[case] backend: Backend) {
    let db = test_db!(backend);
    let (receiver, hook) = Receiver::start().await;
    let app = app_with_alerts(&db, &config(&hook, true)).await;
    stale_writes(&app, "hot", 3).await;
    stale_writes(&app, "cold", 1).await;
    let (_, firing) = receiver.wait_for("firing", Duration::from_secs(10)).await;
    assert_eq!(firing["alerts"][0]["labels"]["resource"], "hot");
    assert_eq!(
        firing["groupKey"],
        r#"{}:{alertname="Spike", resource="hot"}"#
    );
    assert_eq!(firing["groupLabels"]["resource"], "hot");
    let alerts = app.get("/v1/alerts").await.json["alerts"]
        .as_array()
        .unwrap()
        .clone();
    let firing: Vec<_> = alerts.iter().filter(|a| a["state"] == "firing").collect();
    assert_eq!(firing.len(), 1);
    assert_eq!(firing[0]["resource"], "hot");
}

/// Notifications never ride the write path: with the Alertmanager down and the webhook slow to
/// answer 500, both retried and the alert re-sent at every evaluation, writes go on at full
/// speed and the alert still fires.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_receiver_that_is_down_delays_no_write() {
    let db = test_db!(Backend::Sqlite);
    let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let dead = format!("http://{}", closed.local_addr().unwrap());
    drop(closed);
    let failing = Router::new().route(
        "/hook",
        post(|| async {
            tokio::time::sleep(Duration::from_millis(500)).await;
            axum::http::StatusCode::INTERNAL_SERVER_ERROR
        }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let slow = format!("http://{}/hook", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, failing).await });
    let app = app_with_alerts(
        &db,
        &short_config(&slow, Some(&dead), false, "30s", "100ms"),
    )
    .await;
    stale_writes(&app, "totals", 3).await;
    let deadline = Instant::now() + Duration::from_secs(10);
    while app.get("/v1/alerts").await.json["alerts"][0]["state"] != "firing" {
        assert!(Instant::now() < deadline, "never fired");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    // The notifier is now retrying against nothing; writes are as fast as ever.
    let mut slowest = Duration::ZERO;
    for token in 11..111 {
        let started = Instant::now();
        assert!(app
            .put("other")
            .token(token)
            .body("v")
            .send()
            .await
            .status
            .is_success());
        slowest = slowest.max(started.elapsed());
    }
    assert!(slowest < Duration::from_secs(1), "a write took {slowest:?}");
}

/// Two daemons on one PostgreSQL database: one is elected, one notification is sent.
#[cfg_attr(
    not(fencewatch_pg),
    ignore = "needs PostgreSQL: set FENCEWATCH_TEST_PG"
)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_daemons_send_one_notification() {
    let db = test_db!(Backend::Postgres);
    let (receiver, hook) = Receiver::start().await;
    let file = tempfile::NamedTempFile::new().unwrap();
    std::fs::write(file.path(), config(&hook, false)).unwrap();
    let path = file.path().to_str().unwrap();
    let first = Daemon::spawn(&db, &["--config", path]).await;
    let second = Daemon::spawn(&db, &["--config", path]).await;
    let http = crate::helpers::http_client();
    for (base, token) in [
        (&first.base, 10),
        (&second.base, 9),
        (&first.base, 9),
        (&second.base, 9),
    ] {
        http.put(format!("{base}/v1/resources/shared"))
            .header("Fencing-Token", token.to_string())
            .body("v")
            .send()
            .await
            .unwrap();
    }
    receiver.wait_for("firing", Duration::from_secs(15)).await;
    // Both daemons publish the state; only the elected one notified.
    for base in [&first.base, &second.base] {
        let alerts = Reply::from(http.get(format!("{base}/v1/alerts")).send().await.unwrap()).await;
        assert_eq!(alerts.json["alerts"][0]["state"], "firing");
        wait_for_firing_count(base, 1).await;
    }
    // A daemon started while the alert fires counts it at once and does not announce it as a
    // change; the resolution, evaluated by another daemon, it does.
    let third = Daemon::spawn(&db, &["--config", path]).await;
    let mut late_events = SseClient::connect(&third.base, None).await;
    wait_for_firing_count(&third.base, 1).await;
    receiver.wait_for("resolved", Duration::from_secs(15)).await;
    let first_seen = late_events.next_of("alert", Duration::from_secs(10)).await;
    assert_eq!(first_seen.json()["state"], "inactive");
    for base in [&first.base, &second.base, &third.base] {
        wait_for_firing_count(base, 0).await;
    }
    tokio::time::sleep(Duration::from_secs(1)).await;
    assert_eq!(receiver.with_status("firing").len(), 1);
    assert_eq!(receiver.with_status("resolved").len(), 1);
    assert!(first.terminate().await && second.terminate().await && third.terminate().await);
}

/// Waits until the daemon's stats show `count` firing alerts.
async fn wait_for_firing_count(base: &str, count: u64) {
    let http = crate::helpers::http_client();
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let stats = Reply::from(http.get(format!("{base}/v1/stats")).send().await.unwrap()).await;
        if stats.json["firing_alerts"] == count {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "{base} never showed {count} firing alert(s): {}",
            stats.json
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// The evaluator's writes are fenced by its lease token: once a newer evaluator has written, a
/// deposed one's late write changes nothing and tells it so.
#[apply(both_backends)]
#[tokio::test]
async fn a_deposed_evaluator_cannot_write_alert_state(#[case] backend: Backend) {
    use fencewatch::domain::alert::{AlertInstance, AlertState};
    use fencewatch::store::StoredAlert;
    let db = test_db!(backend);
    let store = db.store().await;
    let alert = |state: AlertState, value: i64| StoredAlert {
        rule: "Spike".into(),
        source: String::new(),
        instance: String::new(),
        alert: AlertInstance {
            state,
            ..AlertInstance::inactive(1)
        },
        value,
        updated_at_us: 1,
    };
    assert!(store
        .put_alert_state(&alert(AlertState::Firing, 5), AlertState::Inactive, 7)
        .await
        .unwrap());
    assert!(!store
        .put_alert_state(&alert(AlertState::Inactive, 0), AlertState::Firing, 6)
        .await
        .unwrap());
    let states = store.alert_states().await.unwrap();
    assert_eq!(
        (states[0].alert.state, states[0].value),
        (AlertState::Firing, 5)
    );
    assert!(store
        .put_alert_state(&alert(AlertState::Inactive, 0), AlertState::Firing, 8)
        .await
        .unwrap());
}

const ALERTMANAGER: &str = "/usr/bin/prometheus-alertmanager";

/// The real Alertmanager on a free loopback port with a data folder of its own, no cluster
/// port, routing every alert to `hook`, grouped by alertname and resource (the route
/// docs/alerting.md suggests), resolving alerts sent without `endsAt` after `resolve_timeout`.
pub(crate) struct Alertmanager {
    base: String,
    _child: tokio::process::Child,
    _dir: tempfile::TempDir,
}

impl Alertmanager {
    /// `None` (the test is skipped) when Alertmanager is not installed.
    pub(crate) async fn start(hook: &str, resolve_timeout: &str) -> Option<Alertmanager> {
        Self::start_with(&format!(
            r#"
global:
  resolve_timeout: {resolve_timeout}
route:
  receiver: test
  group_by: [alertname, resource]
  group_wait: 100ms
  group_interval: 1s
  repeat_interval: 1h
receivers:
  - name: test
    webhook_configs:
      - url: "{hook}"
        send_resolved: true
"#
        ))
        .await
    }

    /// The real Alertmanager with `config` as its `alertmanager.yml`.
    pub(crate) async fn start_with(config_text: &str) -> Option<Alertmanager> {
        let binary = peer(ALERTMANAGER)?;
        let dir = tempfile::tempdir().unwrap();
        let config = dir.path().join("alertmanager.yml");
        std::fs::write(&config, config_text).unwrap();
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let mut child = tokio::process::Command::new(binary)
            .arg(format!("--config.file={}", config.display()))
            .arg(format!(
                "--storage.path={}",
                dir.path().join("data").display()
            ))
            .arg(format!("--web.listen-address=127.0.0.1:{port}"))
            .arg("--cluster.listen-address=")
            .arg("--log.level=warn")
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::inherit())
            .kill_on_drop(true)
            .spawn()
            .expect("start Alertmanager");
        let base = format!("http://127.0.0.1:{port}");
        let http = http_client();
        let deadline = Instant::now() + Duration::from_secs(20);
        loop {
            if let Ok(response) = http.get(format!("{base}/-/ready")).send().await {
                if response.status().is_success() {
                    break;
                }
            }
            assert!(
                child.try_wait().unwrap().is_none(),
                "Alertmanager exited at start"
            );
            assert!(Instant::now() < deadline, "Alertmanager not ready in 20 s");
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        Some(Alertmanager {
            base,
            _child: child,
            _dir: dir,
        })
    }

    pub(crate) fn base(&self) -> &str {
        &self.base
    }

    /// `GET /api/v2/alerts`: the alerts Alertmanager holds active (resolved ones are left out).
    pub(crate) async fn alerts(&self) -> Vec<Value> {
        let reply = http_client()
            .get(format!("{}/api/v2/alerts", self.base))
            .send()
            .await
            .unwrap();
        assert!(reply.status().is_success());
        reply.json::<Vec<Value>>().await.unwrap()
    }
}

/// A short rule (evaluated every 200 ms, firing after `for` 500 ms while more than 2 stale writes
/// are in the last `window`) that notifies `hook` and posts to the Alertmanager at `manager`.
fn short_config(
    hook: &str,
    manager: Option<&str>,
    per_resource: bool,
    window: &str,
    resend: &str,
) -> String {
    format!(
        r#"
[alerts]
evaluation_interval = "200ms"
resend_interval = "{resend}"

[[alerts.rules]]
name = "Spike"
threshold = 2
window = "{window}"
for = "500ms"
keep_firing_for = "0s"
per_resource = {per_resource}
labels = {{ severity = "page" }}

[[alerts.webhooks]]
url = "{hook}"
timeout = "1s"
max_retries = 2
{}"#,
        manager
            .map(|url| format!("\n[alerts.alertmanager]\nurl = \"{url}\"\ntimeout = \"1s\"\n"))
            .unwrap_or_default()
    )
}

/// A spike that lasts longer than Alertmanager's `resolve_timeout` stays active there, because
/// fencewatch re-sends it with `endsAt` ahead; it resolves when fencewatch resolves it, with the
/// `endsAt` fencewatch sent, not by timing out.
#[cfg_attr(
    not(fencewatch_alertmanager),
    ignore = "needs prometheus-alertmanager on the PATH"
)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_spike_outlasting_resolve_timeout_stays_active_in_alertmanager() {
    let db = test_db!(Backend::Sqlite);
    let (paged, page_hook) = Receiver::start().await;
    let Some(manager) = Alertmanager::start(&page_hook, "5s").await else {
        return;
    };
    let (direct, hook) = Receiver::start().await;
    let app = app_with_alerts(
        &db,
        &short_config(&hook, Some(&manager.base), false, "9s", "1s"),
    )
    .await;
    stale_writes(&app, "totals", 3).await;

    // Poll Alertmanager, then fencewatch: once Alertmanager has the alert, it must keep it for
    // as long as fencewatch (asked after it) still says firing.
    let deadline = Instant::now() + Duration::from_secs(30);
    let mut first_active: Option<Instant> = None;
    let mut last_active = None;
    let mut fingerprint = None;
    loop {
        let active = manager.alerts().await;
        let state = app.get("/v1/alerts").await.json["alerts"][0]["state"].clone();
        let now = Instant::now();
        match (active.as_slice(), first_active) {
            ([alert], _) => {
                assert_eq!(alert["labels"]["alertname"], "Spike");
                assert_eq!(alert["status"]["state"], "active");
                fingerprint = Some(alert["fingerprint"].clone());
                first_active.get_or_insert(now);
                last_active = Some(now);
            }
            ([], Some(_)) => {
                assert_ne!(
                    state, "firing",
                    "Alertmanager dropped an alert that fencewatch still fires"
                );
                break;
            }
            ([], None) => {}
            (many, _) => panic!("one alert expected: {many:?}"),
        }
        assert!(now < deadline, "the alert never went through: {state}");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    let (first_active, last_active) = (first_active.unwrap(), last_active.unwrap());
    let held = last_active - first_active;
    eprintln!("Alertmanager held the alert active for {held:?} (resolve_timeout 5s)");
    assert!(
        held > Duration::from_secs(6),
        "active for {held:?}, not past resolve_timeout"
    );

    // fencewatch sent it again about every second, each time with endsAt four seconds ahead.
    let firing = direct.with_status("firing");
    assert!(firing.len() >= 6, "{} firing notices", firing.len());
    for pair in firing.windows(2) {
        let gap = pair[1].0 - pair[0].0;
        assert!(
            gap < Duration::from_millis(1600),
            "a re-send came {gap:?} late"
        );
    }
    for (_, notice) in &firing {
        let alert = &notice["alerts"][0];
        assert_eq!(alert["startsAt"], firing[0].1["alerts"][0]["startsAt"]);
        assert_eq!(Some(&alert["fingerprint"]), fingerprint.as_ref());
    }
    let (_, resolved) = direct.wait_for("resolved", Duration::from_secs(5)).await;
    let ended = instant(&resolved["alerts"][0]["endsAt"]);
    let last_ends_at = instant(&firing.last().unwrap().1["alerts"][0]["endsAt"]);
    assert!(
        ended < last_ends_at,
        "resolved before the last endsAt ran out"
    );

    // Alertmanager paged once and resolved once, with fencewatch's endsAt.
    let (_, page) = paged.wait_for("resolved", Duration::from_secs(10)).await;
    assert_eq!(instant(&page["alerts"][0]["endsAt"]), ended);
    assert_eq!(
        page["alerts"][0]["fingerprint"],
        resolved["alerts"][0]["fingerprint"]
    );
    assert_eq!(
        paged.with_status("firing").len(),
        1,
        "paged once while firing"
    );
    assert_eq!(paged.with_status("resolved").len(), 1);
}

/// Two resources spiking together are two incidents: two group keys at fencewatch's webhook, the
/// same two at Alertmanager's, and two alerts in Alertmanager under fencewatch's fingerprints.
#[cfg_attr(
    not(fencewatch_alertmanager),
    ignore = "needs prometheus-alertmanager on the PATH"
)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_resources_spiking_together_are_two_incidents() {
    let db = test_db!(Backend::Sqlite);
    let (paged, page_hook) = Receiver::start().await;
    let Some(manager) = Alertmanager::start(&page_hook, "5s").await else {
        return;
    };
    let (direct, hook) = Receiver::start().await;
    let app = app_with_alerts(
        &db,
        &short_config(&hook, Some(&manager.base), true, "5s", "1s"),
    )
    .await;
    stale_writes(&app, "a", 3).await;
    stale_writes(&app, "b", 3).await;

    let deadline = Instant::now() + Duration::from_secs(15);
    let ours = loop {
        let mut keys: std::collections::BTreeMap<String, Value> = Default::default();
        for (_, notice) in direct.with_status("firing") {
            keys.insert(notice["groupKey"].as_str().unwrap().to_owned(), notice);
        }
        if keys.len() == 2 {
            break keys;
        }
        assert!(
            Instant::now() < deadline,
            "two incidents expected: {keys:?}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    assert_eq!(
        ours.keys().collect::<Vec<_>>(),
        [
            r#"{}:{alertname="Spike", resource="a"}"#,
            r#"{}:{alertname="Spike", resource="b"}"#
        ]
    );
    let ours_by_fingerprint: std::collections::BTreeMap<String, Value> = ours
        .values()
        .map(|notice| {
            let alert = &notice["alerts"][0];
            (
                alert["fingerprint"].as_str().unwrap().to_owned(),
                alert["labels"].clone(),
            )
        })
        .collect();
    assert_eq!(ours_by_fingerprint.len(), 2);

    // Alertmanager holds the same two alerts under the same fingerprints.
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let theirs: std::collections::BTreeMap<String, Value> = manager
            .alerts()
            .await
            .iter()
            .map(|alert| {
                (
                    alert["fingerprint"].as_str().unwrap().to_owned(),
                    alert["labels"].clone(),
                )
            })
            .collect();
        if theirs == ours_by_fingerprint {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "Alertmanager has {theirs:?}, fencewatch sent {ours_by_fingerprint:?}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }

    // And it notified two groups, keyed as fencewatch keys them.
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let keys: std::collections::BTreeSet<String> = paged
            .with_status("firing")
            .iter()
            .map(|(_, notice)| notice["groupKey"].as_str().unwrap().to_owned())
            .collect();
        if keys.len() == 2 {
            assert_eq!(
                keys.iter().collect::<Vec<_>>(),
                ours.keys().collect::<Vec<_>>()
            );
            break;
        }
        assert!(Instant::now() < deadline, "Alertmanager paged {keys:?}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// The evaluator dies with an alert firing; the daemon elected after it finds the alert stored
/// and sends it again (same alert, same start) rather than wait for a change.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_new_evaluator_resends_the_firing_alerts_it_finds() {
    let db = test_db!(Backend::Sqlite);
    let (receiver, hook) = Receiver::start().await;
    let file = tempfile::NamedTempFile::new().unwrap();
    // A window long enough to outlast the old evaluator's lease; no re-send within the test.
    std::fs::write(file.path(), short_config(&hook, None, false, "30s", "10m")).unwrap();
    let path = file.path().to_str().unwrap();
    let first = Daemon::spawn(&db, &["--config", path]).await;
    let http = http_client();
    for token in [10, 9, 9, 9] {
        http.put(format!("{}/v1/resources/shared", first.base))
            .header("Fencing-Token", token.to_string())
            .body("v")
            .send()
            .await
            .unwrap();
    }
    let (_, fired) = receiver.wait_for("firing", Duration::from_secs(10)).await;
    first.kill().await;
    assert_eq!(receiver.with_status("firing").len(), 1);

    let second = Daemon::spawn(&db, &["--config", path]).await;
    let deadline = Instant::now() + Duration::from_secs(20);
    while receiver.with_status("firing").len() < 2 {
        assert!(Instant::now() < deadline, "the new evaluator sent nothing");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let (_, again) = receiver.with_status("firing").remove(1);
    let (before, after) = (&fired["alerts"][0], &again["alerts"][0]);
    assert_eq!(after["fingerprint"], before["fingerprint"]);
    assert_eq!(
        after["startsAt"], before["startsAt"],
        "the same firing, not a new one"
    );
    assert!(instant(&after["endsAt"]) > instant(&before["endsAt"]));
    assert!(second.terminate().await);
}
