//! Every daemon publishes the fleet's alert state changes, whichever daemon evaluated them, and
//! keeps its firing gauge: the states are read whole once, then only those changed since the
//! last look (`alert_states_by_update`), so a tick costs the changes, not every instance ever
//! stored.

use super::{all_rules, AlertConfig, AlertView, InstanceKey};
use crate::api::events::DaemonEvent;
use crate::domain::alert::AlertState;
use crate::live::bus::EventBus;
use crate::store::{Store, StoreError, StoredAlert};
use prometheus_client::metrics::gauge::Gauge;
use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

const ALERT_WATCH: Duration = Duration::from_millis(250);
/// Changes are looked for this far behind the last look, for evaluations that commit a little
/// after they stamped their change and for clock skew between daemons; a change read twice is
/// published once (its version is known).
const ALERT_MARGIN_US: i64 = 5_000_000;

/// What was last seen of each instance: its state and since when.
type Version = (AlertState, i64);

pub async fn watch_alerts(store: Store, bus: EventBus, config: Arc<AlertConfig>, firing: Gauge) {
    let mut ticker = tokio::time::interval(ALERT_WATCH);
    ticker.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let mut seen: Option<(HashMap<InstanceKey, Version>, i64)> = None;
    loop {
        ticker.tick().await;
        let now = store.clock().now_us();
        let result = match seen.as_mut() {
            // The state at start-up is not a change: remembered, not published.
            None => store.alert_states().await.map(|states| {
                let mut known = HashMap::new();
                remember(&mut known, &states);
                seen = Some((known, now));
            }),
            Some((known, since)) => {
                publish_changes(&store, &bus, &config, known, *since - ALERT_MARGIN_US)
                    .await
                    .map(|()| *since = now)
            }
        };
        match (result, &seen) {
            (Err(error), _) => tracing::warn!(%error, "cannot read alert states"),
            (Ok(()), Some((known, _))) => {
                let count = known
                    .values()
                    .filter(|(state, _)| *state == AlertState::Firing)
                    .count();
                firing.set(i64::try_from(count).unwrap_or(i64::MAX));
            }
            (Ok(()), None) => {}
        }
    }
}

async fn publish_changes(
    store: &Store,
    bus: &EventBus,
    config: &AlertConfig,
    known: &mut HashMap<InstanceKey, Version>,
    since_us: i64,
) -> Result<(), StoreError> {
    let changed = store.alerts_changed_since(since_us).await?;
    for stored in remember(known, &changed) {
        if let Some(rule) = all_rules(config).find(|r| r.name == stored.rule) {
            bus.publish(DaemonEvent::Alert(Arc::new(AlertView::new(
                rule,
                Some(stored),
            ))));
        }
    }
    Ok(())
}

/// Records each state's version; returns those not already known.
fn remember<'a>(
    known: &mut HashMap<InstanceKey, Version>,
    states: &'a [StoredAlert],
) -> Vec<&'a StoredAlert> {
    states
        .iter()
        .filter(|stored| {
            let key = (
                stored.rule.clone(),
                stored.source.clone(),
                stored.instance.clone(),
            );
            let version = (stored.alert.state, stored.alert.since_us);
            known.insert(key, version) != Some(version)
        })
        .collect()
}
