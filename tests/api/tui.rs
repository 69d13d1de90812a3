//! The dashboard and the demo as users run them: in a real pseudo-terminal, as a script, and
//! headless.

use crate::helpers::{bench_report, Backend, Daemon};
use crate::test_db;
use std::process::Stdio;
use std::time::Duration;
use tokio::io::AsyncWriteExt;
use tokio::process::Command;

const BIN: &str = env!("CARGO_BIN_EXE_fencewatch");

async fn stale_write_pair(base: &str) {
    let http = crate::helpers::http_client();
    for (token, owner) in [(8, "new-owner"), (7, "old-owner")] {
        http.put(format!("{base}/v1/resources/accounts/totals"))
            .header("Fencing-Token", token.to_string())
            .header("Fencing-Owner", owner)
            .body("v")
            .send()
            .await
            .unwrap();
    }
}

/// The binary in a real pseudo-terminal (util-linux `script`) against a real daemon: the
/// overlap shows up, `q` quits, and the terminal is restored.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_dashboard_in_a_real_terminal_shows_the_overlap_and_quits() {
    if std::process::Command::new("script")
        .arg("--version")
        .output()
        .is_err()
    {
        panic!("the end-to-end dashboard test needs `script` (util-linux) for a pseudo-terminal");
    }
    let db = test_db!(Backend::Sqlite);
    let daemon = Daemon::spawn(&db, &[]).await;
    stale_write_pair(&daemon.base).await;
    let mut child = Command::new("script")
        .args([
            "-qfec",
            &format!(
                "stty cols 100 rows 30; exec {BIN} tui --url {}",
                daemon.base
            ),
            "/dev/null",
        ])
        .env("TERM", "xterm-256color")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let mut keys = child.stdin.take().unwrap();
    tokio::time::sleep(Duration::from_millis(1500)).await;
    keys.write_all(b"2").await.unwrap();
    tokio::time::sleep(Duration::from_millis(800)).await;
    keys.write_all(b"q").await.unwrap();
    keys.flush().await.unwrap();
    let output = tokio::time::timeout(Duration::from_secs(20), child.wait_with_output())
        .await
        .expect("the dashboard quits on q")
        .unwrap();
    assert!(output.status.success(), "exit status {}", output.status);
    let screen = String::from_utf8_lossy(&output.stdout);
    for expected in [
        "Ownership overlaps: 1",
        "accounts/totals",
        "old-owner",
        "new-owner",
        "OPEN",
        "LIVE",
    ] {
        assert!(
            screen.contains(expected),
            "{expected:?} never appeared on the screen"
        );
    }
    // Restored: the alternate screen is left and the cursor shown again, last.
    let leave = screen
        .rfind("\u{1b}[?1049l")
        .expect("left the alternate screen");
    let enter = screen
        .rfind("\u{1b}[?1049h")
        .expect("entered the alternate screen");
    assert!(leave > enter);
    assert!(
        screen[leave..].contains("\u{1b}[?25h"),
        "the cursor is shown again"
    );
    daemon.kill().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn once_json_prints_the_overview_for_scripts() {
    let db = test_db!(Backend::Sqlite);
    let daemon = Daemon::spawn(&db, &[]).await;
    stale_write_pair(&daemon.base).await;
    let output = Command::new(BIN)
        .args(["tui", "--once", "--json", "--url", &daemon.base])
        .output()
        .await
        .unwrap();
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let overview: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(overview["totals"]["stale"], 1);
    assert_eq!(overview["totals"]["accepted"], 1);
    assert_eq!(overview["open_overlaps"].as_array().unwrap().len(), 1);
    assert_eq!(overview["open_overlaps"][0]["stale_owner"], "old-owner");
    assert!(overview["firing_alerts"].as_array().unwrap().is_empty());
    // A daemon that is not there is an error, not an empty overview.
    daemon.kill().await;
    let output = Command::new(BIN)
        .args(["tui", "--once", "--json", "--url", "http://127.0.0.1:9"])
        .output()
        .await
        .unwrap();
    assert!(!output.status.success());
}

/// The demo tells a story: its first incident is a zombie refused after its successor took
/// over, spiking into an alert; the summary names it, and with `--database` the incident is
/// there to look at again with `fencewatch audit incidents`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_headless_demo_produces_overlaps_and_a_firing_alert() {
    let dir = tempfile::tempdir().unwrap();
    let database = format!("sqlite://{}", dir.path().join("demo.db").display());
    let output = tokio::time::timeout(
        Duration::from_secs(60),
        Command::new(BIN)
            .args(["demo", "--headless", "--duration", "5s", "--json"])
            .args(["--database", &database])
            .output(),
    )
    .await
    .expect("the demo ends after its duration")
    .unwrap();
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let summary: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
    assert!(summary["overlaps"].as_u64().unwrap() >= 1, "{summary}");
    assert!(summary["alerts_fired"].as_u64().unwrap() >= 1, "{summary}");
    assert!(
        summary["writes"]["accepted"].as_u64().unwrap() > 10,
        "{summary}"
    );
    assert!(
        summary["writes"]["superseded"].as_u64().unwrap()
            + summary["writes"]["stale"].as_u64().unwrap()
            >= 1
    );
    // Spaced, not an overlap a second: in 5 s, the one scripted incident.
    let incidents = summary["incidents"].as_array().unwrap();
    assert_eq!(incidents.len(), 1, "{summary}");
    let first = &incidents[0];
    // A zombie: an older generation of one worker, refused after another's newer one.
    assert!(first["stale_token"].as_i64() < first["superseding_token"].as_i64());
    assert_ne!(first["stale_owner"], first["superseding_owner"]);
    // The spike: more refused retries than the alert's threshold of 2.
    assert!(first["rejected_writes"].as_i64().unwrap() > 2, "{summary}");
    assert_eq!(
        summary["alert_history"][0]["rule"], "StaleOwnerSpike",
        "{summary}"
    );
    assert_eq!(summary["database"]["url"], database.as_str());
    assert_eq!(summary["database"]["kept"], true);
    // The demo's rules are said beside the built-in ones they differ from.
    let rules = &summary["rules"];
    assert!(
        rules["demo"][0].as_str().unwrap().contains("more than 2 "),
        "{rules}"
    );
    assert!(
        rules["built_in"][0]
            .as_str()
            .unwrap()
            .contains("more than 20 "),
        "{rules}"
    );
    // The kept file is whole on its own: the WAL was copied into it and removed at the end.
    let wal = dir.path().join("demo.db-wal");
    let wal_bytes = std::fs::metadata(&wal).map_or(0, |m| m.len());
    assert_eq!(wal_bytes, 0, "{} left behind", wal.display());

    // Looked at again afterwards, from the database it kept.
    let again = Command::new(BIN)
        .args(["audit", "incidents", "--json", "--database", &database])
        .output()
        .await
        .unwrap();
    assert!(
        again.status.success(),
        "{}",
        String::from_utf8_lossy(&again.stderr)
    );
    let text = String::from_utf8_lossy(&again.stdout);
    assert!(text.contains(first["resource"].as_str().unwrap()), "{text}");

    // Its report measures what the script did: the zombie stalled 1.5 s past its last write
    // and renewal, its 1 s grant lapsed meanwhile, and nothing of it got through after the lapse.
    let id = first["id"].as_i64().unwrap().to_string();
    let report = Command::new(BIN)
        .args([
            "audit",
            "report",
            &id,
            "--format",
            "json",
            "--database",
            &database,
        ])
        .output()
        .await
        .unwrap();
    assert!(
        report.status.success(),
        "{}",
        String::from_utf8_lossy(&report.stderr)
    );
    let report: serde_json::Value = serde_json::from_slice(&report.stdout).unwrap();
    let pause_ms = report["pause_ms"].as_i64().unwrap();
    assert!((1_400..=2_500).contains(&pause_ms), "{report}");
    assert!(report["stale_grant_lapsed_at"].is_string(), "{report}");
    assert_eq!(report["accepted_after_lapse"], 0, "{report}");
}

/// Without `--database` the summary says the database went with the demo, and how to keep one.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_demo_says_where_its_database_went() {
    let output = tokio::time::timeout(
        Duration::from_secs(60),
        Command::new(BIN)
            .args(["demo", "--headless", "--duration", "1s"])
            .output(),
    )
    .await
    .expect("the demo ends after its duration")
    .unwrap();
    assert!(output.status.success());
    let text = String::from_utf8_lossy(&output.stdout);
    assert!(text.contains("was temporary and is deleted now"), "{text}");
    assert!(
        text.contains("alert rules: the demo's") && text.contains("serve's built-in rules"),
        "{text}"
    );
    assert!(
        text.contains(&format!(
            "then look again: {BIN} audit incidents --database sqlite://demo.db"
        )) && text.contains(&format!("to keep one, run {BIN} demo --database")),
        "{text}"
    );
}

/// The benchmark harness runs end to end and reports both paths side by side.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_bench_reports_http_and_the_store_side_by_side() {
    let report = bench_report(
        &[
            "--duration",
            "1s",
            "--connections",
            "2",
            "--resources",
            "10",
            "--stale",
            "0.5",
            "--readers",
            "1",
            "--subscribers",
            "2",
            "--json",
        ],
        Duration::from_secs(60),
    )
    .await;
    for path in [&report["http"], &report["baseline"]] {
        assert!(path["requests"].as_u64().unwrap() > 0, "{report}");
        assert_eq!(path["errors"], 0, "{report}");
        assert!(
            path["accepted"].as_u64().unwrap() > 0 && path["rejected"].as_u64().unwrap() > 0,
            "{report}"
        );
        assert!(path["p50_ms"].as_f64().unwrap() <= path["p99_ms"].as_f64().unwrap());
    }
    assert!(report["ratio"].as_f64().unwrap() > 0.0);
    assert!(report["daemon_peak_rss_mib"].as_f64().unwrap() > 1.0);
    // Both processes' CPU per write, and the ceiling it sets, which the run cannot have beaten.
    let cpu = &report["cpu"];
    assert!(cpu["daemon_us"].as_f64().unwrap() > 0.0, "{report}");
    assert!(cpu["load_generator_us"].as_f64().unwrap() > 0.0, "{report}");
    assert!(
        cpu["ceiling_per_second"].as_f64().unwrap()
            >= report["http"]["per_second"].as_f64().unwrap(),
        "{report}"
    );
    // The grouped store path ran beside them, with the same outcomes.
    let grouped = &report["group_commit"];
    assert!(grouped["requests"].as_u64().unwrap() > 0, "{report}");
    assert_eq!(grouped["errors"], 0, "{report}");
    // Reads and live streams ran beside the writes: every write is an event to each stream.
    let reads = &report["reads"];
    assert!(reads["accepted"].as_u64().unwrap() > 0, "{report}");
    assert_eq!(reads["errors"], 0, "{report}");
    let events = &report["events"];
    assert_eq!(events["errors"], 0, "{report}");
    assert!(
        events["events"].as_u64().unwrap() >= report["http"]["requests"].as_u64().unwrap(),
        "{report}"
    );
}

/// The dashboard's event path is measured through its real decoding and model.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_bench_measures_the_dashboards_event_path() {
    let report = bench_report(&["--dashboard", "5000", "--json"], Duration::from_secs(60)).await;
    assert_eq!(report["events"], 5000);
    assert!(report["per_second"].as_f64().unwrap() > 0.0, "{report}");
}

/// On PostgreSQL the bench also runs PostgreSQL's own ceiling for the workload, pgbench's
/// one-statement fenced write, in the same invocation, on tables of its own.
#[cfg_attr(
    not(fencewatch_pg),
    ignore = "needs PostgreSQL: set FENCEWATCH_TEST_PG"
)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_bench_runs_pgbench_beside_the_store_on_postgres() {
    let db = test_db!(Backend::Postgres);
    let report = bench_report(
        &[
            "--database",
            &db.url,
            "--no-http",
            "--duration",
            "1s",
            "--connections",
            "2",
            "--resources",
            "10",
            "--stale",
            "0.5",
            "--json",
        ],
        Duration::from_secs(90),
    )
    .await;
    let pgbench = &report["pgbench"];
    assert_eq!(pgbench["path"], "pgbench", "{report}");
    assert!(pgbench["requests"].as_u64().unwrap() > 0, "{report}");
    assert_eq!(pgbench["errors"], 0, "{report}");
    // Half the writes carry a superseded generation: the fence refuses them there too.
    assert!(
        pgbench["accepted"].as_u64().unwrap() > 0 && pgbench["rejected"].as_u64().unwrap() > 0,
        "{report}"
    );
    assert!(report["group_commit"]["requests"].as_u64().unwrap() > 0);
    // Without HTTP there is nothing to compare with pgbench.
    assert!(report["pgbench_ratio"].is_null(), "{report}");
    // Its tables are gone afterwards.
    let left = Command::new("psql")
        .args([
            "-qAtX",
            "-c",
            "SELECT count(*) FROM pg_tables WHERE tablename LIKE 'fencewatch_pgbench%'",
            &db.url,
        ])
        .output()
        .await
        .unwrap();
    assert_eq!(String::from_utf8_lossy(&left.stdout).trim(), "0");
}
