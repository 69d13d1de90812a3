//! The daemon's wall clock is one `Clock`, handed in when the store opens: moving it moves the
//! audit's times and the alert windows together, so an hour-long window is tested in seconds.

use crate::both_backends;
use crate::helpers::{Backend, TestApp};
use crate::test_db;
use fencewatch::domain::audit::format_rfc3339_micros;
use fencewatch::domain::clock::{Clock, ManualClock};
use fencewatch::live::alerts::AlertConfig;
use fencewatch::live::LiveConfig;
use fencewatch::store::{Store, StoreOptions};
use rstest_reuse::apply;
use std::sync::Arc;
use std::time::{Duration, Instant};

const HOURLY_SPIKE: &str = r#"
[alerts]
evaluation_interval = "200ms"

[[alerts.rules]]
name = "HourlySpike"
threshold = 2
window = "1h"
for = "0s"
keep_firing_for = "0s"
labels = { severity = "page" }
summary = "stale owners wrote within the hour"
"#;

async fn alert_state(app: &TestApp) -> String {
    let alerts = app.get("/v1/alerts").await;
    alerts.json["alerts"][0]["state"]
        .as_str()
        .unwrap_or_default()
        .to_owned()
}

async fn wait_for_state(app: &TestApp, state: &str) {
    let deadline = Instant::now() + Duration::from_secs(15);
    loop {
        let now = alert_state(app).await;
        if now == state {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "the alert stayed {now}, not {state}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

#[apply(both_backends)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_audit_times_and_alert_windows_follow_the_daemons_clock(#[case] backend: Backend) {
    let db = test_db!(backend);
    // A whole second, so the audit's microsecond times are exactly the clock's.
    let start = chrono::DateTime::from_timestamp(chrono::Utc::now().timestamp(), 0).unwrap();
    let clock = Arc::new(ManualClock::starting_at(start));
    let store = Store::open(
        &db.url,
        &StoreOptions {
            max_connections: 8,
            clock: clock.clone(),
            ..StoreOptions::default()
        },
    )
    .await
    .unwrap();
    let live = LiveConfig {
        alerts: Arc::new(AlertConfig::parse(HOURLY_SPIKE).unwrap()),
        ..LiveConfig::default()
    };
    let app = TestApp::on(&db).store(store).live(live).spawn().await;

    app.put("totals").token(10).body("new").send().await;
    for _ in 0..3 {
        app.put("totals")
            .token(9)
            .body("old")
            .send()
            .await
            .assert_problem(409, "stale-token");
    }
    let rows = app.audit_of("totals").await;
    assert_eq!(rows.len(), 4);
    for row in &rows {
        assert_eq!(row["at"], format_rfc3339_micros(&start), "{row}");
    }
    wait_for_state(&app, "firing").await;

    // Two hours on the daemon's clock, a moment on the test's: the rejections leave the window.
    clock.advance(Duration::from_secs(2 * 60 * 60));
    let moved = Instant::now();
    wait_for_state(&app, "inactive").await;
    assert!(moved.elapsed() < Duration::from_secs(15));
    assert_eq!(clock.now(), start + chrono::TimeDelta::hours(2));
}
