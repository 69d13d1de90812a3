//! The metrics and the rules as the real `promtool` reads them: the text format that a live
//! daemon serves, OpenMetrics on request, and the shipped rule and scrape files; `amtool` reads
//! the documented Alertmanager route.

use crate::helpers::{http_client, peer, Backend, Daemon};
use crate::test_db;
use std::io::Write;
use std::process::Stdio;

const PROMTOOL: &str = "/usr/bin/promtool";

fn assets(file: &str) -> String {
    format!("{}/assets/prometheus/{file}", env!("CARGO_MANIFEST_DIR"))
}

/// Runs a Prometheus tool with `args`, `stdin` on its standard input; its exit code and output.
fn promtool(promtool: &str, args: &[&str], stdin: &[u8]) -> (i32, String) {
    let mut child = std::process::Command::new(promtool)
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run promtool");
    child
        .stdin
        .take()
        .expect("stdin")
        .write_all(stdin)
        .expect("feed promtool");
    let output = child.wait_with_output().expect("wait for promtool");
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    (output.status.code().unwrap_or(-1), text)
}

/// A live daemon's `/metrics`, after writes of several outcomes, passes `promtool check metrics`
/// (which reads only the text format) and names counters `…_total`; OpenMetrics is still there
/// for a scraper that prefers it.
#[cfg_attr(not(fencewatch_promtool), ignore = "needs promtool on the PATH")]
#[tokio::test]
async fn a_live_daemons_metrics_pass_promtool() {
    let Some(promtool_path) = peer(PROMTOOL) else {
        return;
    };
    let db = test_db!(Backend::Sqlite);
    let daemon = Daemon::spawn(&db, &[]).await;
    let http = http_client();
    for token in [5, 5, 4, 0] {
        http.put(format!("{}/v1/resources/m", daemon.base))
            .header("Fencing-Token", token.to_string())
            .body("v")
            .send()
            .await
            .unwrap();
    }
    let url = format!("{}/metrics", daemon.base);
    for accept in [None, Some("text/plain"), Some("text/plain;version=0.0.4")] {
        let mut request = http.get(&url);
        if let Some(accept) = accept {
            request = request.header("Accept", accept);
        }
        let response = request.send().await.unwrap();
        assert_eq!(
            response.headers()["content-type"],
            "text/plain; version=0.0.4; charset=utf-8",
            "{accept:?}"
        );
        let body = response.bytes().await.unwrap();
        let text = String::from_utf8_lossy(&body);
        assert!(
            text.contains("# TYPE fencewatch_writes_total counter\n"),
            "{text}"
        );
        assert!(text.contains("fencewatch_writes_total{outcome=\"stale\"} 1\n"));
        assert!(!text.contains("# EOF"), "{text}");
        let (code, output) = promtool(&promtool_path, &["check", "metrics"], &body);
        assert_eq!(code, 0, "promtool check metrics: {output}\n{text}");
    }

    // What Prometheus asks for first.
    let response = http
        .get(&url)
        .header(
            "Accept",
            "application/openmetrics-text;version=1.0.0,application/openmetrics-text;\
             version=0.0.1;q=0.75,text/plain;version=0.0.4;q=0.5,*/*;q=0.1",
        )
        .send()
        .await
        .unwrap();
    assert_eq!(
        response.headers()["content-type"],
        "application/openmetrics-text; version=1.0.0; charset=utf-8"
    );
    let text = response.text().await.unwrap();
    assert!(text.ends_with("# EOF\n"), "{text}");
    assert!(
        text.contains("# TYPE fencewatch_writes counter\n"),
        "{text}"
    );
    assert!(text.contains("fencewatch_writes_total{outcome=\"stale\"} 1\n"));
    // The old answer, OpenMetrics to everyone, is what promtool refuses.
    let (code, _) = promtool(&promtool_path, &["check", "metrics"], text.as_bytes());
    assert_ne!(code, 0, "promtool reads only the text format");
    assert!(daemon.terminate().await);
}

/// The shipped rules and scrape config pass promtool's checks, and the rule fires on a spike
/// over the fleet and not below the threshold (`rules_test.yml`).
#[cfg_attr(not(fencewatch_promtool), ignore = "needs promtool on the PATH")]
#[test]
fn the_shipped_prometheus_files_pass_promtool() {
    let Some(promtool_path) = peer(PROMTOOL) else {
        return;
    };
    for (command, what, file) in [
        ("check", "rules", "rules.yml"),
        ("check", "config", "prometheus.yml"),
        ("test", "rules", "rules_test.yml"),
    ] {
        let path = assets(file);
        let args = [command, what, path.as_str()];
        let (code, output) = promtool(&promtool_path, &args, b"");
        assert_eq!(code, 0, "promtool {args:?}: {output}");
    }
}

/// Every shipped alert is tested both ways in `rules_test.yml`: a case where it fires and one
/// where it stays silent, so that a rule added without its test, or one that could never stay
/// quiet, is caught.
#[test]
fn every_shipped_alert_has_a_firing_and_a_silent_test() {
    let read = |file: &str| -> serde_yaml_ng::Value {
        serde_yaml_ng::from_str(&std::fs::read_to_string(assets(file)).unwrap()).unwrap()
    };
    let rules = read("rules.yml");
    let alerts: Vec<&str> = rules["groups"]
        .as_sequence()
        .unwrap()
        .iter()
        .flat_map(|group| group["rules"].as_sequence().unwrap())
        .filter_map(|rule| rule["alert"].as_str())
        .collect();
    assert!(alerts.contains(&"AuditCheckpointRefused"), "{alerts:?}");
    assert!(alerts.contains(&"AuditCheckpointOverdue"), "{alerts:?}");
    let tests = read("rules_test.yml");
    let cases: Vec<(&str, bool)> = tests["tests"]
        .as_sequence()
        .unwrap()
        .iter()
        .flat_map(|test| test["alert_rule_test"].as_sequence().unwrap())
        .map(|case| {
            let fires = !case["exp_alerts"].as_sequence().unwrap().is_empty();
            (case["alertname"].as_str().unwrap(), fires)
        })
        .collect();
    for alert in alerts {
        for fires in [true, false] {
            assert!(
                cases.contains(&(alert, fires)),
                "rules_test.yml has no case where {alert} {}",
                if fires { "fires" } else { "stays silent" }
            );
        }
    }
}

/// The Alertmanager route that docs/alerting.md tells users to write is one Alertmanager loads,
/// grouping by alertname and resource.
#[cfg_attr(
    not(fencewatch_alertmanager),
    ignore = "needs prometheus-alertmanager on the PATH"
)]
#[test]
fn the_documented_alertmanager_route_passes_amtool() {
    let Some(amtool) = peer("/usr/bin/amtool") else {
        return;
    };
    let doc = std::fs::read_to_string(format!("{}/docs/alerting.md", env!("CARGO_MANIFEST_DIR")))
        .unwrap();
    let route = doc
        .split("```yaml\n")
        .filter_map(|block| block.split_once("```").map(|(yaml, _)| yaml))
        .find(|yaml| yaml.starts_with("route:"))
        .expect("a route: block in docs/alerting.md");
    assert!(
        route.contains("group_by: [alertname, source, resource]"),
        "{route}"
    );
    assert_eq!(
        readme_route(),
        without_comments(route),
        "the README's route is docs/alerting.md's"
    );
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("alertmanager.yml");
    std::fs::write(&file, route).unwrap();
    let path = file.display().to_string();
    let (code, output) = promtool(&amtool, &["check-config", &path], b"");
    assert_eq!(code, 0, "amtool check-config: {output}\n{route}");
}

/// docs/alerting.md's `route:` block.
fn documented_route() -> String {
    let doc = std::fs::read_to_string(format!("{}/docs/alerting.md", env!("CARGO_MANIFEST_DIR")))
        .unwrap();
    doc.split("```yaml\n")
        .filter_map(|block| block.split_once("```").map(|(yaml, _)| yaml.to_owned()))
        .find(|yaml| yaml.starts_with("route:"))
        .expect("a route: block in docs/alerting.md")
}

/// The README's Alertmanager block, out of its list item's indentation, comments dropped.
fn readme_route() -> String {
    let readme =
        std::fs::read_to_string(format!("{}/README.md", env!("CARGO_MANIFEST_DIR"))).unwrap();
    let block = readme
        .split("  ```yaml\n")
        .nth(1)
        .and_then(|rest| rest.split_once("  ```"))
        .map(|(yaml, _)| yaml)
        .expect("a yaml block in the README");
    let dedented: Vec<&str> = block
        .lines()
        .map(|l| l.strip_prefix("  ").unwrap_or(l))
        .collect();
    without_comments(&(dedented.join("\n") + "\n"))
}

fn without_comments(yaml: &str) -> String {
    yaml.lines()
        .map(|line| match line.split_once(" #") {
            Some((before, _)) => before.trim_end(),
            None => line,
        })
        .map(|line| format!("{line}\n"))
        .collect()
}

/// One incident pages once: with the documented route loaded into the real Alertmanager, the
/// fleet-wide alert mutes the per-resource alerts of its `source` (shown suppressed, inhibited
/// by it), while a per-resource alert of another source still stands on its own.
#[cfg_attr(
    not(fencewatch_alertmanager),
    ignore = "needs prometheus-alertmanager on the PATH"
)]
#[tokio::test]
async fn the_documented_inhibit_rule_makes_one_incident_page_once() {
    let Some(manager) = crate::alerts::Alertmanager::start_with(&documented_route()).await else {
        return;
    };
    let alert = |labels: serde_json::Value| serde_json::json!({ "labels": labels, "annotations": { "summary": "test" } });
    let alerts = serde_json::json!([
        alert(serde_json::json!({ "alertname": "StaleOwnerSpike", "severity": "page" })),
        alert(
            serde_json::json!({ "alertname": "StaleOwnerSpikePerResource", "severity": "page", "resource": "a" })
        ),
        alert(
            serde_json::json!({ "alertname": "StaleOwnerSpikePerResource", "severity": "page", "resource": "b" })
        ),
        alert(
            serde_json::json!({ "alertname": "StaleOwnerSpikePerResource", "severity": "page", "resource": "c", "source": "shop" })
        ),
    ]);
    let http = http_client();
    let posted = http
        .post(format!("{}/api/v2/alerts", manager.base()))
        .json(&alerts)
        .send()
        .await
        .unwrap();
    assert!(posted.status().is_success(), "{}", posted.status());
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    loop {
        let held = manager.alerts().await;
        let state = |alertname: &str, resource: Option<&str>| {
            held.iter()
                .find(|a| {
                    a["labels"]["alertname"] == alertname
                        && a["labels"]["resource"].as_str() == resource
                })
                .map(|a| a["status"]["state"].as_str().unwrap_or_default().to_owned())
        };
        let states = [
            state("StaleOwnerSpike", None),
            state("StaleOwnerSpikePerResource", Some("a")),
            state("StaleOwnerSpikePerResource", Some("b")),
            state("StaleOwnerSpikePerResource", Some("c")),
        ];
        let expected = ["active", "suppressed", "suppressed", "active"].map(|s| Some(s.to_owned()));
        if states == expected {
            let muted = held
                .iter()
                .find(|a| a["labels"]["resource"] == "a")
                .unwrap();
            assert_eq!(
                muted["status"]["inhibitedBy"].as_array().unwrap().len(),
                1,
                "{muted}"
            );
            break;
        }
        assert!(std::time::Instant::now() < deadline, "{states:?}: {held:?}");
        tokio::time::sleep(std::time::Duration::from_millis(200)).await;
    }
}
