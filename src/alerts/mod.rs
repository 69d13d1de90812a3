//! Stale-owner alerts: rules evaluated by one daemon of the fleet, elected with fencewatch's own
//! lease authority and fencing its alert-state writes with its lease token; notifications to
//! webhooks (Alertmanager's format) or an Alertmanager; every state change stored and
//! published as an `alert` event by every daemon.

mod notify;
mod rules;

pub use notify::{backoff, spawn_notifier, Notification};
pub use rules::{default_rules, AlertConfig, Rule, Webhook};

use crate::domain::alert::{step, AlertInstance, AlertState, Transition};
use crate::domain::audit::format_rfc3339_micros;
use crate::domain::{FencingToken, Holder, LeaseName, Ttl};
use crate::events::{Event, EventBus};
use crate::store::{AcquireResult, Store, StoreError, StoredAlert};
use chrono::DateTime;
use prometheus_client::metrics::gauge::Gauge;
use serde::Serialize;
use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::mpsc;

/// The lease whose holder evaluates the rules.
pub const EVALUATOR_LEASE: &str = "fencewatch/alert-evaluator";

fn micros(duration: Duration) -> i64 {
    i64::try_from(duration.as_micros()).unwrap_or(i64::MAX)
}

/// An alert as the API and the live stream show it.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct AlertView {
    pub rule: String,
    /// The resource, for per-resource rules.
    pub resource: Option<String>,
    pub state: AlertState,
    pub since: Option<String>,
    pub fired_at: Option<String>,
    /// The count last compared with the threshold.
    pub value: i64,
    pub threshold: u64,
    pub window_seconds: f64,
    pub for_seconds: f64,
    pub keep_firing_for_seconds: f64,
    pub labels: std::collections::BTreeMap<String, String>,
    pub summary: String,
}

fn time(us: i64) -> Option<String> {
    DateTime::from_timestamp_micros(us).map(|at| format_rfc3339_micros(&at))
}

impl AlertView {
    pub fn new(rule: &Rule, stored: Option<&StoredAlert>) -> Self {
        Self {
            rule: rule.name.clone(),
            resource: stored.map(|s| s.instance.clone()).filter(|i| !i.is_empty()),
            state: stored
                .map(|s| s.alert.state)
                .unwrap_or(AlertState::Inactive),
            since: stored.and_then(|s| time(s.alert.since_us)),
            fired_at: stored.and_then(|s| s.alert.fired_at_us).and_then(time),
            value: stored.map(|s| s.value).unwrap_or(0),
            threshold: rule.threshold,
            window_seconds: rule.window.as_secs_f64(),
            for_seconds: rule.for_.as_secs_f64(),
            keep_firing_for_seconds: rule.keep_firing_for.as_secs_f64(),
            labels: rule.labels.clone(),
            summary: rule.summary.clone(),
        }
    }
}

/// Every rule with its instances' states: a rule never triggered shows as inactive.
pub fn views(config: &AlertConfig, stored: &[StoredAlert]) -> Vec<AlertView> {
    let mut views = Vec::new();
    for rule in &config.rules {
        let instances: Vec<&StoredAlert> = stored.iter().filter(|s| s.rule == rule.name).collect();
        if instances.is_empty() {
            views.push(AlertView::new(rule, None));
        }
        views.extend(instances.into_iter().map(|s| AlertView::new(rule, Some(s))));
    }
    views
}

/// Runs the election and, while elected, the rules.
pub struct Evaluator {
    pub store: Store,
    pub config: Arc<AlertConfig>,
    pub identity: Holder,
    pub notifier: mpsc::Sender<Notification>,
    pub external_url: String,
}

impl Evaluator {
    pub fn spawn(self) -> tokio::task::JoinHandle<()> {
        tokio::spawn(async move { self.run().await })
    }

    async fn run(self) {
        let lease = match LeaseName::parse(EVALUATOR_LEASE) {
            Ok(lease) => lease,
            Err(error) => {
                tracing::error!(%error, "bad evaluator lease name");
                return;
            }
        };
        let interval = self.config.evaluation_interval;
        // A leader that dies is replaced within the TTL; it renews at a third of it, so the lease
        // history records a renewal every few seconds rather than every evaluation.
        let ttl_duration = (interval * 3).max(Duration::from_secs(6));
        let renew_every = ttl_duration / 3;
        let mut renewed = tokio::time::Instant::now();
        let ttl_ms = i64::try_from(ttl_duration.as_millis()).unwrap_or(6000);
        let Ok(ttl) = Ttl::from_millis(ttl_ms.min(Ttl::MAX_MS)) else {
            return;
        };
        let mut token: Option<FencingToken> = None;
        let mut ticker = tokio::time::interval(interval);
        ticker.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            ticker.tick().await;
            token = match token {
                Some(held) if renewed.elapsed() < renew_every => Some(held),
                Some(held) => match self
                    .store
                    .renew_lease(&lease, &self.identity, held, None)
                    .await
                {
                    Ok(Ok(_)) => {
                        renewed = tokio::time::Instant::now();
                        Some(held)
                    }
                    Ok(Err(_)) => {
                        tracing::info!("lost the alert evaluator lease");
                        None
                    }
                    Err(error) => {
                        tracing::warn!(%error, "cannot renew the alert evaluator lease");
                        Some(held)
                    }
                },
                None => match self.store.acquire_lease(&lease, &self.identity, ttl).await {
                    Ok(AcquireResult::Granted(record)) => {
                        renewed = tokio::time::Instant::now();
                        tracing::info!(token = record.token.get(), "elected alert evaluator");
                        Some(record.token)
                    }
                    Ok(AcquireResult::Held(_)) => None,
                    Err(error) => {
                        tracing::warn!(%error, "cannot take part in the alert evaluator election");
                        None
                    }
                },
            };
            if let Some(held) = token {
                match self.evaluate(held).await {
                    Ok(true) => {}
                    Ok(false) => {
                        tracing::info!("a newer alert evaluator took over");
                        token = None;
                    }
                    Err(error) => tracing::warn!(%error, "alert evaluation failed"),
                }
            }
        }
    }

    /// Evaluates every rule once. `Ok(false)` when a write was fenced off: deposed.
    async fn evaluate(&self, token: FencingToken) -> Result<bool, StoreError> {
        let now = chrono::Utc::now().timestamp_micros();
        let stored: HashMap<(String, String), StoredAlert> = self
            .store
            .alert_states()
            .await?
            .into_iter()
            .map(|s| ((s.rule.clone(), s.instance.clone()), s))
            .collect();
        for rule in &self.config.rules {
            let counts = self
                .store
                .rejection_counts(&rule.outcomes, now - micros(rule.window))
                .await?;
            let mut instances: HashMap<String, i64> = if rule.per_resource {
                counts.into_iter().collect()
            } else {
                HashMap::from([(String::new(), counts.iter().map(|(_, n)| n).sum())])
            };
            // Instances that are pending or firing are evaluated even with no recent rows.
            for ((name, instance), alert) in &stored {
                if name == &rule.name && alert.alert.state != AlertState::Inactive {
                    instances.entry(instance.clone()).or_insert(0);
                }
            }
            for (instance, value) in instances {
                let previous = stored.get(&(rule.name.clone(), instance.clone()));
                let current = previous
                    .map(|s| s.alert)
                    .unwrap_or_else(|| AlertInstance::inactive(now));
                let condition = u64::try_from(value).unwrap_or(0) > rule.threshold;
                let (next, transition) = step(
                    current,
                    condition,
                    now,
                    micros(rule.for_),
                    micros(rule.keep_firing_for),
                );
                if next == current {
                    continue;
                }
                let alert = StoredAlert {
                    rule: rule.name.clone(),
                    instance: instance.clone(),
                    alert: next,
                    value,
                    updated_at_us: now,
                };
                if !self
                    .store
                    .put_alert_state(&alert, current.state, token.get())
                    .await?
                {
                    return Ok(false);
                }
                let notification =
                    |firing: bool, starts_at_us: i64, ends_at_us: Option<i64>| Notification {
                        rule: rule.clone(),
                        resource: Some(instance.clone()).filter(|i| !i.is_empty()),
                        firing,
                        starts_at_us,
                        ends_at_us,
                        value,
                        external_url: self.external_url.clone(),
                    };
                let message = match transition {
                    Some(Transition::Fired) => {
                        Some(notification(true, next.fired_at_us.unwrap_or(now), None))
                    }
                    Some(Transition::Resolved) => Some(notification(
                        false,
                        current.fired_at_us.unwrap_or(now),
                        Some(now),
                    )),
                    _ => None,
                };
                if let Some(message) = message {
                    if self.notifier.try_send(message).is_err() {
                        tracing::error!(rule = %rule.name, "the notification queue is full; a notification was dropped");
                    }
                }
            }
        }
        Ok(true)
    }
}

/// Publishes every alert state change, whichever daemon evaluated it, and keeps the firing
/// gauge current.
pub async fn watch_alerts(store: Store, bus: EventBus, config: Arc<AlertConfig>, firing: Gauge) {
    let mut published: HashMap<(String, String), (AlertState, i64)> = HashMap::new();
    let mut ticker = tokio::time::interval(Duration::from_millis(250));
    ticker.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let mut first = true;
    loop {
        ticker.tick().await;
        let states = match store.alert_states().await {
            Ok(states) => states,
            Err(error) => {
                tracing::warn!(%error, "cannot read alert states");
                continue;
            }
        };
        let count = states
            .iter()
            .filter(|s| s.alert.state == AlertState::Firing)
            .count();
        firing.set(i64::try_from(count).unwrap_or(i64::MAX));
        for stored in &states {
            let key = (stored.rule.clone(), stored.instance.clone());
            let version = (stored.alert.state, stored.alert.since_us);
            if published.get(&key) == Some(&version) {
                continue;
            }
            published.insert(key, version);
            if first {
                continue; // the state at start-up is not a change
            }
            if let Some(rule) = config.rules.iter().find(|r| r.name == stored.rule) {
                let view = AlertView::new(rule, Some(stored));
                if let Ok(value) = serde_json::to_value(&view) {
                    bus.publish(Event::Alert(Arc::new(value)));
                }
            }
        }
        first = false;
    }
}
