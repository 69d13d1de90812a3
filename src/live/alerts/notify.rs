//! Notifications in the Alertmanager webhook format (version 4) and its `POST /api/v2/alerts`
//! body, delivered off the write path with a timeout and retries under a capped backoff.

use super::rules::{Rule, Webhook};
use crate::domain::audit::format_rfc3339_micros;
use chrono::DateTime;
use serde_json::{json, Value};
use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::time::Duration;
use tokio::sync::mpsc;

/// One alert instance firing (first or again) or resolved.
#[derive(Debug, Clone)]
pub struct Notification {
    pub rule: Rule,
    pub resource: Option<String>,
    /// The watched database whose rows fired it (`serve --watch`); `None` for this daemon's.
    pub source: Option<String>,
    pub firing: bool,
    pub starts_at_us: i64,
    /// While firing, a time in the future that the next re-send moves on (see
    /// [`super::firing_ends_at`]); once resolved, when it resolved.
    pub ends_at_us: i64,
    pub value: i64,
    pub external_url: String,
}

fn time(us: i64) -> String {
    DateTime::from_timestamp_micros(us)
        .map(|at| format_rfc3339_micros(&at))
        .unwrap_or_else(|| "0001-01-01T00:00:00Z".to_owned())
}

/// Prometheus' `model.LabelSet.Fingerprint()`, which Alertmanager names alerts by: FNV-1a 64
/// over the pairs in name order, each name and value followed by the byte 0xff.
pub fn fingerprint(labels: &BTreeMap<String, String>) -> String {
    const OFFSET: u64 = 0xcbf2_9ce4_8422_2325;
    const PRIME: u64 = 0x0000_0100_0000_01b3;
    let mut hash = OFFSET;
    let mut add = |bytes: &[u8]| {
        for byte in bytes {
            hash ^= u64::from(*byte);
            hash = hash.wrapping_mul(PRIME);
        }
    };
    for (name, value) in labels {
        add(name.as_bytes());
        add(&[0xff]);
        add(value.as_bytes());
        add(&[0xff]);
    }
    format!("{hash:016x}")
}

/// A label set as Alertmanager prints it in a group key: `{a="x", b="y"}`, values quoted as Go's
/// `%q` quotes them (resource keys have no control characters, so `\` and `"` are what need it).
fn label_set(labels: &BTreeMap<String, String>) -> String {
    let mut text = String::from("{");
    for (index, (name, value)) in labels.iter().enumerate() {
        if index > 0 {
            text.push_str(", ");
        }
        text.push_str(name);
        text.push_str("=\"");
        for c in value.chars() {
            match c {
                '"' => text.push_str("\\\""),
                '\\' => text.push_str("\\\\"),
                c if c.is_control() => {
                    let _ = write!(text, "\\u{:04x}", u32::from(c));
                }
                c => text.push(c),
            }
        }
        text.push('"');
    }
    text.push('}');
    text
}

impl Notification {
    pub fn labels(&self) -> BTreeMap<String, String> {
        let mut labels = self.rule.labels.clone();
        labels.extend(self.group_labels());
        labels
    }

    /// The labels that tell this rule's instances apart: the rule's name, per resource the
    /// resource and, for a watched database's rows, its `source`. A receiver keying incidents
    /// by group key sees one incident per instance.
    pub fn group_labels(&self) -> BTreeMap<String, String> {
        let mut labels = BTreeMap::from([("alertname".to_owned(), self.rule.name.clone())]);
        if let Some(resource) = &self.resource {
            labels.insert("resource".into(), resource.clone());
        }
        if let Some(source) = &self.source {
            labels.insert("source".into(), source.clone());
        }
        labels
    }

    /// As Alertmanager's root route would key the group: `{}:{alertname="…", resource="…"}`.
    pub fn group_key(&self) -> String {
        format!("{{}}:{}", label_set(&self.group_labels()))
    }

    /// Alertmanager's identity of the alert.
    pub fn fingerprint(&self) -> String {
        fingerprint(&self.labels())
    }

    fn annotations(&self) -> Value {
        json!({
            "summary": self.rule.summary,
            "description": format!(
                "{} writes with outcome {} in the last {} (threshold {})",
                self.value,
                self.rule.outcomes.iter().map(|o| o.as_str()).collect::<Vec<_>>().join(" or "),
                humantime::format_duration(self.rule.window),
                self.rule.threshold
            ),
        })
    }

    fn status(&self) -> &'static str {
        if self.firing {
            "firing"
        } else {
            "resolved"
        }
    }

    /// The Alertmanager webhook payload, version 4.
    pub fn webhook_payload(&self) -> Value {
        let labels = self.labels();
        json!({
            "version": "4",
            "groupKey": self.group_key(),
            "truncatedAlerts": 0,
            "status": self.status(),
            "receiver": "fencewatch",
            "groupLabels": self.group_labels(),
            "commonLabels": labels,
            "commonAnnotations": self.annotations(),
            "externalURL": self.external_url,
            "alerts": [{
                "status": self.status(),
                "labels": labels,
                "annotations": self.annotations(),
                "startsAt": time(self.starts_at_us),
                "endsAt": time(self.ends_at_us),
                "generatorURL": format!("{}/v1/alerts", self.external_url),
                "fingerprint": self.fingerprint(),
            }],
        })
    }

    /// The body of Alertmanager's `POST /api/v2/alerts`.
    pub fn alertmanager_payload(&self) -> Value {
        json!([{
            "labels": self.labels(),
            "annotations": self.annotations(),
            "startsAt": time(self.starts_at_us),
            "endsAt": time(self.ends_at_us),
            "generatorURL": format!("{}/v1/alerts", self.external_url),
        }])
    }
}

/// Delay before retry `attempt` (1-based): 200 ms doubling, at most 5 s.
pub fn backoff(attempt: u32) -> Duration {
    crate::domain::backoff::doubling(attempt, Duration::from_millis(200), Duration::from_secs(5))
}

/// Starts the notifier: notifications queue (boundedly) and every receiver gets each one in its
/// own task, so a receiver that is down delays nobody.
pub fn spawn_notifier(
    webhooks: Vec<Webhook>,
    alertmanager: Option<Webhook>,
) -> (mpsc::Sender<Notification>, tokio::task::JoinHandle<()>) {
    let (sender, mut receiver) = mpsc::channel::<Notification>(1024);
    let task = tokio::spawn(async move {
        let http = match crate::tls::http_client(reqwest::Client::builder(), None) {
            Ok(http) => http,
            Err(error) => {
                tracing::error!(%error, "alert notifications are off: no HTTP client");
                return;
            }
        };
        while let Some(notification) = receiver.recv().await {
            for hook in &webhooks {
                tokio::spawn(deliver(
                    http.clone(),
                    hook.clone(),
                    notification.webhook_payload(),
                ));
            }
            if let Some(manager) = &alertmanager {
                let mut target = manager.clone();
                target.url = format!("{}/api/v2/alerts", manager.url.trim_end_matches('/'));
                tokio::spawn(deliver(
                    http.clone(),
                    target,
                    notification.alertmanager_payload(),
                ));
            }
        }
    });
    (sender, task)
}

async fn deliver(http: reqwest::Client, hook: Webhook, payload: Value) {
    for attempt in 0..=hook.max_retries {
        if attempt > 0 {
            tokio::time::sleep(backoff(attempt)).await;
        }
        match http
            .post(&hook.url)
            .timeout(hook.timeout)
            .json(&payload)
            .send()
            .await
        {
            Ok(response) if response.status().is_success() => return,
            Ok(response) => {
                tracing::warn!(url = %hook.url, status = %response.status(), attempt, "alert receiver refused the notification");
            }
            Err(error) => {
                tracing::warn!(url = %hook.url, %error, attempt, "alert receiver unreachable");
            }
        }
    }
    tracing::error!(url = %hook.url, "gave up delivering an alert notification");
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backoff_doubles_and_is_capped() {
        let delays: Vec<u128> = (1..=7).map(|a| backoff(a).as_millis()).collect();
        assert_eq!(delays, [200, 400, 800, 1600, 3200, 5000, 5000]);
        assert_eq!(backoff(1000).as_millis(), 5000);
    }

    fn notification(resource: Option<&str>) -> Notification {
        Notification {
            rule: super::super::rules::default_rules().remove(1),
            resource: resource.map(str::to_owned),
            source: None,
            firing: true,
            starts_at_us: 1_764_474_006_000_000,
            ends_at_us: 1_764_474_246_000_000,
            value: 12,
            external_url: "http://127.0.0.1:7420".into(),
        }
    }

    #[test]
    fn payloads_have_the_alertmanager_fields() {
        let notification = notification(Some("accounts/totals"));
        let payload = notification.webhook_payload();
        assert_eq!(payload["version"], "4");
        assert_eq!(payload["status"], "firing");
        let alert = &payload["alerts"][0];
        assert_eq!(alert["labels"]["alertname"], "StaleOwnerSpikePerResource");
        assert_eq!(alert["labels"]["resource"], "accounts/totals");
        assert_eq!(alert["startsAt"], "2025-11-30T03:40:06.000000Z");
        assert_eq!(alert["endsAt"], "2025-11-30T03:44:06.000000Z");
        assert_eq!(alert["fingerprint"], "bafa0f9b0b2c578b");
        let posted = &notification.alertmanager_payload()[0];
        assert_eq!(posted["endsAt"], alert["endsAt"]);
        assert_eq!(posted["labels"], alert["labels"]);
        let resolved = Notification {
            firing: false,
            ..notification
        };
        let payload = resolved.webhook_payload();
        assert_eq!(payload["status"], "resolved");
        assert_eq!(payload["alerts"][0]["status"], "resolved");
    }

    /// Values that Alertmanager 0.25 reported at `GET /api/v2/alerts` for alerts posted with
    /// these labels.
    #[test]
    fn fingerprints_are_alertmanagers() {
        let labels = |pairs: &[(&str, &str)]| -> BTreeMap<String, String> {
            pairs
                .iter()
                .map(|(n, v)| ((*n).to_owned(), (*v).to_owned()))
                .collect()
        };
        assert_eq!(
            fingerprint(&labels(&[
                ("alertname", "StaleOwnerSpikePerResource"),
                ("resource", "accounts/totals"),
                ("severity", "page"),
            ])),
            "bafa0f9b0b2c578b"
        );
        assert_eq!(
            fingerprint(&labels(&[
                ("alertname", "StaleOwnerSpike"),
                ("severity", "page")
            ])),
            "bae7bb9b0e1d9a28"
        );
        // The empty set hashes to FNV-1a's offset basis, as in Prometheus.
        assert_eq!(fingerprint(&BTreeMap::new()), "cbf29ce484222325");
        // The separator keeps `a=bc` and `ab=c` apart.
        assert_ne!(
            fingerprint(&labels(&[("a", "bc")])),
            fingerprint(&labels(&[("ab", "c")]))
        );
    }

    #[test]
    fn group_keys_name_what_tells_instances_apart() {
        let a = notification(Some("a"));
        let b = notification(Some("b"));
        assert_eq!(
            a.group_key(),
            r#"{}:{alertname="StaleOwnerSpikePerResource", resource="a"}"#
        );
        assert_ne!(a.group_key(), b.group_key());
        assert_eq!(a.webhook_payload()["groupLabels"]["resource"], "a");
        let mut watched = notification(Some("a"));
        watched.source = Some("shop".into());
        assert_eq!(
            watched.group_key(),
            r#"{}:{alertname="StaleOwnerSpikePerResource", resource="a", source="shop"}"#,
            "one resource name in two databases is two incidents"
        );
        assert_ne!(watched.fingerprint(), a.fingerprint());
        assert_eq!(
            watched.alertmanager_payload()[0]["labels"]["source"],
            "shop"
        );
        let mut fleet = notification(None);
        fleet.rule.name = "StaleOwnerSpike".into();
        assert_eq!(fleet.group_key(), r#"{}:{alertname="StaleOwnerSpike"}"#);
        let odd = notification(Some(r#"say "hi"\now"#));
        assert_eq!(
            odd.group_key(),
            r#"{}:{alertname="StaleOwnerSpikePerResource", resource="say \"hi\"\\now"}"#
        );
    }
}
