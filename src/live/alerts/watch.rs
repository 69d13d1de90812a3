//! Every daemon publishes the fleet's alert state changes, whichever daemon evaluated them, and
//! keeps its firing gauge: the states are read whole once, then only those changed since the
//! last look (`alert_states_by_update`), so a tick costs the changes, not every instance ever
//! stored.

use super::{all_rules, AlertConfig, AlertView, InstanceKey};
use crate::api::events::DaemonEvent;
use crate::domain::alert::AlertState;
use crate::live::bus::EventBus;
use crate::live::CHANGE_MARGIN_US;
use crate::store::{Store, StoreError, StoredAlert};
use prometheus_client::metrics::gauge::Gauge;
use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

const ALERT_WATCH: Duration = Duration::from_millis(250);

/// What was last seen of each instance: its state and since when.
type Known = HashMap<InstanceKey, (AlertState, i64)>;

pub async fn watch_alerts(store: Store, bus: EventBus, config: Arc<AlertConfig>, firing: Gauge) {
    let mut ticker = tokio::time::interval(ALERT_WATCH);
    ticker.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    // The state at start-up is not a change: remembered, not published.
    let (mut known, mut since) = loop {
        ticker.tick().await;
        let now = store.clock().now_us();
        match store.alert_states().await {
            Ok(states) => {
                let mut known = Known::new();
                remember(&mut known, &states);
                break (known, now);
            }
            Err(error) => tracing::warn!(%error, "cannot read alert states"),
        }
    };
    loop {
        let count = known
            .values()
            .filter(|(state, _)| *state == AlertState::Firing)
            .count();
        firing.set(i64::try_from(count).unwrap_or(i64::MAX));
        ticker.tick().await;
        let now = store.clock().now_us();
        match publish_changes(&store, &bus, &config, &mut known, since - CHANGE_MARGIN_US).await {
            Ok(()) => since = now,
            Err(error) => tracing::warn!(%error, "cannot read alert states"),
        }
    }
}

async fn publish_changes(
    store: &Store,
    bus: &EventBus,
    config: &AlertConfig,
    known: &mut Known,
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
fn remember<'a>(known: &mut Known, states: &'a [StoredAlert]) -> Vec<&'a StoredAlert> {
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
