//! Stale-owner alerts: rules evaluated by one daemon of the fleet, elected with fencewatch's own
//! lease authority and fencing its alert-state writes with its lease token; notifications to
//! webhooks (Alertmanager's format) or an Alertmanager; every state change stored and
//! published as an `alert` event by every daemon.

mod notify;
mod rules;
mod watch;

pub use notify::{backoff, spawn_notifier, Notification};
pub use rules::{default_rules, AlertConfig, Rule, RulesError, Webhook};
pub use watch::watch_alerts;

use crate::domain::alert::{step, AlertInstance, AlertState, Transition};
use crate::domain::duration::saturating_micros;
use crate::domain::{FencingToken, Holder, LeaseName, Ttl};
use crate::store::{
    AcquireResult, AlertChange, RejectionCount, RenewResult, Store, StoreError, StoredAlert,
};
use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::mpsc;

/// The built-in rule over external lock services caught going backwards (recorded by the store
/// when a write's lock answered below a generation seen holding it), one alert per lock. It
/// counts no outcomes: its value is 1 for each lock that regressed within its window.
pub const AUTHORITY_REGRESSED: &str = "AuthorityRegressed";

static AUTHORITY_RULE: std::sync::LazyLock<Rule> = std::sync::LazyLock::new(|| Rule {
    name: AUTHORITY_REGRESSED.to_owned(),
    outcomes: Vec::new(),
    threshold: 0,
    window: Duration::from_secs(300),
    for_: Duration::ZERO,
    keep_firing_for: Duration::from_secs(300),
    per_resource: true,
    labels: std::collections::BTreeMap::from([("severity".to_owned(), "page".to_owned())]),
    summary: "An external lock service's generations went backwards (a restore or a new \
              cluster): writes naming its locks are refused with 503"
        .to_owned(),
});

/// The configured rules, then the built-in ones.
fn all_rules(config: &AlertConfig) -> impl Iterator<Item = &Rule> {
    config.rules.iter().chain(std::iter::once(&*AUTHORITY_RULE))
}

/// An alert instance: its rule, source (`""`: this daemon's own) and resource (`""`: a rule
/// over all resources).
type InstanceKey = (String, String, String);

/// A rule's instances and their values: per source and resource for a per-resource rule; per
/// source over all resources otherwise, this daemon's own always among them (at 0 when quiet).
fn instances_of(rule: &Rule, counts: Vec<RejectionCount>) -> HashMap<(String, String), i64> {
    let mut instances: HashMap<(String, String), i64> = HashMap::new();
    if !rule.per_resource {
        instances.insert((String::new(), String::new()), 0);
    }
    for count in counts {
        let resource = if rule.per_resource {
            count.resource
        } else {
            String::new()
        };
        *instances.entry((count.source, resource)).or_insert(0) += count.count;
    }
    instances
}

/// The lease whose holder evaluates the rules.
pub const EVALUATOR_LEASE: &str = "fencewatch/alert-evaluator";

/// Whether a firing alert that this evaluator last sent at `last_sent_us` (never: `None`) is sent
/// again at the evaluation at `now_us`: when waiting for the next evaluation would leave it
/// unsent for longer than `resend_us`. Microseconds throughout.
pub fn resend_due(
    last_sent_us: Option<i64>,
    now_us: i64,
    resend_us: i64,
    evaluation_us: i64,
) -> bool {
    last_sent_us
        .is_none_or(|last| now_us.saturating_add(evaluation_us) > last.saturating_add(resend_us))
}

/// The `endsAt` of a firing alert sent at `now_us`: four re-sends away, as Prometheus does, so
/// that an Alertmanager keeps the alert active through three lost or late re-sends and times it
/// out by itself only once its sender is gone.
pub fn firing_ends_at(now_us: i64, resend_us: i64, evaluation_us: i64) -> i64 {
    now_us.saturating_add(resend_us.max(evaluation_us).saturating_mul(4))
}

pub use crate::api::events::AlertView;

fn time(us: i64) -> Option<String> {
    crate::domain::audit::rfc3339_of_micros(us)
}

impl AlertView {
    pub fn new(rule: &Rule, stored: Option<&StoredAlert>) -> Self {
        Self {
            rule: rule.name.clone(),
            resource: stored.map(|s| s.instance.clone()).filter(|i| !i.is_empty()),
            source: stored.map(|s| s.source.clone()).filter(|s| !s.is_empty()),
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
    for rule in all_rules(config) {
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
        // Empty whenever this daemon is not the evaluator, so that on election it sends every
        // firing alert it finds stored: the one before may have died before re-sending them.
        let mut sent: HashMap<InstanceKey, i64> = HashMap::new();
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
                    Ok(RenewResult::Renewed(_)) => {
                        renewed = tokio::time::Instant::now();
                        Some(held)
                    }
                    Ok(RenewResult::Lost(_)) => {
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
            if token.is_none() {
                sent.clear();
            }
            if let Some(held) = token {
                match self.evaluate(held, &mut sent).await {
                    Ok(true) => {}
                    Ok(false) => {
                        tracing::info!("a newer alert evaluator took over");
                        token = None;
                        sent.clear();
                    }
                    Err(error) => tracing::warn!(%error, "alert evaluation failed"),
                }
            }
        }
    }

    /// Evaluates every rule once and sends what is due: each change to firing or resolved, and
    /// each firing alert not sent for a while (`sent` has when each was last sent by this
    /// evaluator). `Ok(false)` when a write was fenced off: deposed.
    async fn evaluate(
        &self,
        token: FencingToken,
        sent: &mut HashMap<InstanceKey, i64>,
    ) -> Result<bool, StoreError> {
        let now = self.store.clock().now_us();
        let resend_us = saturating_micros(self.config.resend_interval);
        let evaluation_us = saturating_micros(self.config.evaluation_interval);
        let stored: HashMap<InstanceKey, StoredAlert> = self
            .store
            .alert_states()
            .await?
            .into_iter()
            .map(|s| ((s.rule.clone(), s.source.clone(), s.instance.clone()), s))
            .collect();
        let mut changes = Vec::new();
        let mut due = Vec::new();
        for rule in all_rules(&self.config) {
            let since = now - saturating_micros(rule.window);
            let counts: Vec<RejectionCount> = if std::ptr::eq(rule, &*AUTHORITY_RULE) {
                let locks = self.store.authority_regressions(since).await?;
                locks
                    .into_iter()
                    .map(|(lock, _)| RejectionCount {
                        source: String::new(),
                        resource: lock,
                        count: 1,
                    })
                    .collect()
            } else {
                self.store.rejection_counts(&rule.outcomes, since).await?
            };
            let mut instances = instances_of(rule, counts);
            // Instances that are pending or firing are evaluated even with no recent rows.
            for ((name, source, instance), alert) in &stored {
                if name == &rule.name && alert.alert.state != AlertState::Inactive {
                    instances
                        .entry((source.clone(), instance.clone()))
                        .or_insert(0);
                }
            }
            for ((source, instance), value) in instances {
                let key = (rule.name.clone(), source.clone(), instance.clone());
                let previous = stored.get(&key);
                let current = previous
                    .map(|s| s.alert)
                    .unwrap_or_else(|| AlertInstance::inactive(now));
                let condition = u64::try_from(value).unwrap_or(0) > rule.threshold;
                let (next, transition) = step(
                    current,
                    condition,
                    now,
                    saturating_micros(rule.for_),
                    saturating_micros(rule.keep_firing_for),
                );
                if next != current {
                    changes.push(AlertChange {
                        alert: StoredAlert {
                            rule: rule.name.clone(),
                            source: source.clone(),
                            instance: instance.clone(),
                            alert: next,
                            value,
                            updated_at_us: now,
                        },
                        from: current.state,
                    });
                }
                let notification =
                    |firing: bool, starts_at_us: i64, ends_at_us: i64| Notification {
                        rule: rule.clone(),
                        resource: Some(instance.clone()).filter(|i| !i.is_empty()),
                        source: Some(source.clone()).filter(|s| !s.is_empty()),
                        firing,
                        starts_at_us,
                        ends_at_us,
                        value,
                        external_url: self.external_url.clone(),
                    };
                let message = if transition == Some(Transition::Resolved) {
                    sent.remove(&key);
                    Some(notification(false, current.fired_at_us.unwrap_or(now), now))
                } else if next.state == AlertState::Firing
                    && resend_due(sent.get(&key).copied(), now, resend_us, evaluation_us)
                {
                    Some(notification(
                        true,
                        next.fired_at_us.unwrap_or(now),
                        firing_ends_at(now, resend_us, evaluation_us),
                    ))
                } else {
                    None
                };
                if let Some(message) = message {
                    due.push((key, message));
                }
            }
        }
        // Stored before anything is sent: a deposed evaluator sends nothing.
        if !self.store.put_alert_states(&changes, token.get()).await? {
            return Ok(false);
        }
        for (key, message) in due {
            let firing = message.firing;
            if self.notifier.try_send(message).is_err() {
                // Not marked as sent: the next evaluation tries again.
                tracing::error!(rule = %key.0, "the notification queue is full; a notification was dropped");
            } else if firing {
                sent.insert(key, now);
            }
        }
        Ok(true)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const S: i64 = 1_000_000;

    #[test]
    fn a_firing_alert_is_sent_at_once_then_at_least_every_resend_interval() {
        // Evaluations every 200 ms, re-sends every second.
        let (resend, evaluation) = (S, S / 5);
        let mut last = None;
        let mut sends = Vec::new();
        for tick in 0..=15 {
            let now = 10 * S + tick * evaluation;
            if resend_due(last, now, resend, evaluation) {
                sends.push(now - 10 * S);
                last = Some(now);
            }
        }
        assert_eq!(sends, [0, S, 2 * S, 3 * S]);
        // Never sent by this evaluator (just elected): due whatever the time.
        assert!(resend_due(None, 0, resend, evaluation));
        // A late tick sends early rather than leave a gap over the interval.
        assert!(resend_due(Some(0), S - evaluation + 1, resend, evaluation));
        assert!(!resend_due(Some(0), S - evaluation, resend, evaluation));
        // An interval shorter than the evaluations: every evaluation.
        assert!(resend_due(Some(0), evaluation, S / 10, evaluation));
    }

    #[test]
    fn ends_at_is_four_of_the_longer_interval_away() {
        assert_eq!(firing_ends_at(100 * S, 60 * S, S), 340 * S);
        assert_eq!(firing_ends_at(100 * S, S, 5 * S), 120 * S);
        assert_eq!(firing_ends_at(i64::MAX - 1, S, S), i64::MAX);
    }
}
