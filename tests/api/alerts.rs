//! Stale-owner alerts: pending for `for`, firing, resolved; notifications in Alertmanager's
//! format; a receiver that is down slows nothing; one notification from a fleet of daemons.

use crate::helpers::{Backend, Daemon, Reply, SseClient, TestApp};
use crate::test_db;
use axum::extract::State;
use axum::routing::post;
use axum::{Json, Router};
use fencewatch::alerts::AlertConfig;
use fencewatch::live::LiveConfig;
use fencewatch::service::Limits;
use rstest::rstest;
use serde_json::Value;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// A webhook receiver that keeps what it is sent, with the time it arrived.
#[derive(Clone, Default)]
struct Receiver {
    received: Arc<Mutex<Vec<(Instant, Value)>>>,
}

impl Receiver {
    async fn start() -> (Receiver, String) {
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
            // Alertmanager's API: a list of alerts, kept under a synthetic status.
            .route(
                "/api/v2/alerts",
                post(
                    |State(r): State<Receiver>, Json(body): Json<Value>| async move {
                        let status = if body[0]["endsAt"].is_null() {
                            "am-firing"
                        } else {
                            "am-resolved"
                        };
                        let kept = serde_json::json!({ "status": status, "alerts": body });
                        r.received.lock().unwrap().push((Instant::now(), kept));
                    },
                ),
            )
            .with_state(receiver.clone());
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}/hook", listener.local_addr().unwrap());
        tokio::spawn(async move { axum::serve(listener, app).await });
        (receiver, url)
    }

    fn with_status(&self, status: &str) -> Vec<(Instant, Value)> {
        self.received
            .lock()
            .unwrap()
            .iter()
            .filter(|(_, body)| body["status"] == status)
            .cloned()
            .collect()
    }

    async fn wait_for(&self, status: &str, wait: Duration) -> (Instant, Value) {
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
    TestApp::spawn_full(db, Limits::default(), live, None).await
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

#[rstest]
#[case::sqlite(Backend::Sqlite)]
#[cfg_attr(
    not(fencewatch_pg),
    ignore = "needs PostgreSQL: set FENCEWATCH_TEST_PG"
)]
#[case::postgres(Backend::Postgres)]
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
    assert_eq!(alert["endsAt"], "0001-01-01T00:00:00Z");
    assert!(alert["startsAt"].as_str().unwrap().ends_with('Z'));
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
    assert_ne!(alert["endsAt"], "0001-01-01T00:00:00Z");
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

#[rstest]
#[case::sqlite(Backend::Sqlite)]
#[cfg_attr(
    not(fencewatch_pg),
    ignore = "needs PostgreSQL: set FENCEWATCH_TEST_PG"
)]
#[case::postgres(Backend::Postgres)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn per_resource_rules_fire_for_the_resource(#[case] backend: Backend) {
    let db = test_db!(backend);
    let (receiver, hook) = Receiver::start().await;
    let manager = hook.trim_end_matches("/hook").to_owned();
    let text = format!(
        "{}\n[alerts.alertmanager]\nurl = \"{manager}\"\n",
        config(&hook, true)
    );
    assert!(
        AlertConfig::parse(&text).unwrap().alertmanager.is_some(),
        "{text}"
    );
    let app = app_with_alerts(&db, &text).await;
    stale_writes(&app, "hot", 3).await;
    stale_writes(&app, "cold", 1).await;
    let (_, firing) = receiver.wait_for("firing", Duration::from_secs(10)).await;
    assert_eq!(firing["alerts"][0]["labels"]["resource"], "hot");
    // Straight to an Alertmanager as well.
    let (_, posted) = receiver
        .wait_for("am-firing", Duration::from_secs(10))
        .await;
    assert_eq!(posted["alerts"][0]["labels"]["alertname"], "Spike");
    assert_eq!(posted["alerts"][0]["labels"]["resource"], "hot");
    let alerts = app.get("/v1/alerts").await.json["alerts"]
        .as_array()
        .unwrap()
        .clone();
    let firing: Vec<_> = alerts.iter().filter(|a| a["state"] == "firing").collect();
    assert_eq!(firing.len(), 1);
    assert_eq!(firing[0]["resource"], "hot");
}

/// Notifications never ride the write path: with the receiver down and retrying, writes go on
/// at full speed and the alert still fires.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_receiver_that_is_down_delays_no_write() {
    let db = test_db!(Backend::Sqlite);
    let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let dead = format!("http://{}/hook", closed.local_addr().unwrap());
    drop(closed);
    let app = app_with_alerts(&db, &config(&dead, false)).await;
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
    }
    receiver.wait_for("resolved", Duration::from_secs(15)).await;
    tokio::time::sleep(Duration::from_secs(1)).await;
    assert_eq!(receiver.with_status("firing").len(), 1);
    assert_eq!(receiver.with_status("resolved").len(), 1);
    assert!(first.terminate().await && second.terminate().await);
}

/// The evaluator's writes are fenced by its lease token: once a newer evaluator has written, a
/// deposed one's late write changes nothing and tells it so.
#[rstest]
#[case::sqlite(Backend::Sqlite)]
#[cfg_attr(
    not(fencewatch_pg),
    ignore = "needs PostgreSQL: set FENCEWATCH_TEST_PG"
)]
#[case::postgres(Backend::Postgres)]
#[tokio::test]
async fn a_deposed_evaluator_cannot_write_alert_state(#[case] backend: Backend) {
    use fencewatch::domain::alert::{AlertInstance, AlertState};
    use fencewatch::store::StoredAlert;
    let db = test_db!(backend);
    let store = db.store().await;
    let alert = |state: AlertState, value: i64| StoredAlert {
        rule: "Spike".into(),
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
