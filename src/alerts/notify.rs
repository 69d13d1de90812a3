//! Notifications in the Alertmanager webhook format (version 4), delivered off the write path
//! with a timeout and retries under a capped backoff.

use super::rules::{Rule, Webhook};
use crate::domain::audit::format_rfc3339_micros;
use chrono::DateTime;
use serde_json::{json, Value};
use sha2::{Digest, Sha256};
use std::collections::BTreeMap;
use std::time::Duration;
use tokio::sync::mpsc;

/// One alert changing to firing or resolved.
#[derive(Debug, Clone)]
pub struct Notification {
    pub rule: Rule,
    pub resource: Option<String>,
    pub firing: bool,
    pub starts_at_us: i64,
    pub ends_at_us: Option<i64>,
    pub value: i64,
    pub external_url: String,
}

/// Alertmanager's "zero" time, used for `endsAt` while an alert fires.
const ZERO_TIME: &str = "0001-01-01T00:00:00Z";

fn time(us: i64) -> String {
    DateTime::from_timestamp_micros(us)
        .map(|at| format_rfc3339_micros(&at))
        .unwrap_or_else(|| ZERO_TIME.to_owned())
}

impl Notification {
    pub fn labels(&self) -> BTreeMap<String, String> {
        let mut labels = self.rule.labels.clone();
        labels.insert("alertname".into(), self.rule.name.clone());
        if let Some(resource) = &self.resource {
            labels.insert("resource".into(), resource.clone());
        }
        labels
    }

    /// Alertmanager's identity of an alert: a hash of its labels.
    pub fn fingerprint(&self) -> String {
        let mut hasher = Sha256::new();
        for (name, value) in self.labels() {
            hasher.update(name.as_bytes());
            hasher.update([0xff]);
            hasher.update(value.as_bytes());
            hasher.update([0xff]);
        }
        hex::encode(&hasher.finalize()[..8])
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

    fn ends_at(&self) -> String {
        self.ends_at_us
            .map(time)
            .unwrap_or_else(|| ZERO_TIME.to_owned())
    }

    /// The Alertmanager webhook payload, version 4.
    pub fn webhook_payload(&self) -> Value {
        let labels = self.labels();
        json!({
            "version": "4",
            "groupKey": format!("{{}}:{{alertname=\"{}\"}}", self.rule.name),
            "truncatedAlerts": 0,
            "status": self.status(),
            "receiver": "fencewatch",
            "groupLabels": { "alertname": self.rule.name },
            "commonLabels": labels,
            "commonAnnotations": self.annotations(),
            "externalURL": self.external_url,
            "alerts": [{
                "status": self.status(),
                "labels": labels,
                "annotations": self.annotations(),
                "startsAt": time(self.starts_at_us),
                "endsAt": self.ends_at(),
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
            "endsAt": if self.firing { Value::Null } else { Value::String(self.ends_at()) },
            "generatorURL": format!("{}/v1/alerts", self.external_url),
        }])
    }
}

/// Delay before retry `attempt` (1-based): 200 ms doubling, at most 5 s.
pub fn backoff(attempt: u32) -> Duration {
    let millis = 200u64.saturating_mul(1u64 << attempt.saturating_sub(1).min(16));
    Duration::from_millis(millis.min(5_000))
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

    #[test]
    fn payloads_have_the_alertmanager_fields() {
        let rule = super::super::rules::default_rules().remove(1);
        let notification = Notification {
            rule,
            resource: Some("accounts/totals".into()),
            firing: true,
            starts_at_us: 1_764_474_006_000_000,
            ends_at_us: None,
            value: 12,
            external_url: "http://127.0.0.1:7420".into(),
        };
        let payload = notification.webhook_payload();
        assert_eq!(payload["version"], "4");
        assert_eq!(payload["status"], "firing");
        let alert = &payload["alerts"][0];
        assert_eq!(alert["labels"]["alertname"], "StaleOwnerSpikePerResource");
        assert_eq!(alert["labels"]["resource"], "accounts/totals");
        assert_eq!(alert["endsAt"], ZERO_TIME);
        assert_eq!(alert["fingerprint"].as_str().unwrap().len(), 16);
        let resolved = Notification {
            firing: false,
            ends_at_us: Some(1_764_474_066_000_000),
            ..notification
        };
        assert_eq!(
            resolved.webhook_payload()["alerts"][0]["status"],
            "resolved"
        );
        assert_eq!(
            resolved.fingerprint(),
            resolved.clone().fingerprint(),
            "same labels, same alert"
        );
    }
}
