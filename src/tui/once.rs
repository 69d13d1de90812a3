//! `tui --once`: the overview printed once, as JSON, for scripts.

use crate::api::events::{AlertView, PerOutcome, RatesByWindow, SourceStats};
use crate::client::{ClientError, DaemonClient};
use crate::domain::alert::AlertState;
use crate::domain::{Overlap, OverlapState};
use serde::Serialize;
use std::collections::BTreeMap;

/// Open overlaps read at most.
const OPEN_OVERLAPS: u32 = 1000;

/// What `tui --once` prints (sorted by name at every level when printed, as it always was).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Overview {
    pub events_dropped: u64,
    pub firing_alerts: Vec<AlertView>,
    pub open_overlaps: Vec<Overlap>,
    pub rates: RatesByWindow,
    /// Each watched database's figures (`serve --watch`), when the daemon watches any.
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub sources: BTreeMap<String, SourceStats>,
    pub totals: PerOutcome<u64>,
    pub url: String,
}

pub async fn overview(client: &DaemonClient) -> Result<Overview, ClientError> {
    let stats = client.stats().await?;
    let overlaps = client
        .overlaps(Some(OverlapState::Open), OPEN_OVERLAPS)
        .await?;
    let alerts = client.alerts().await?;
    Ok(Overview {
        events_dropped: stats.events_dropped,
        firing_alerts: alerts
            .alerts
            .into_iter()
            .filter(|alert| alert.state == AlertState::Firing)
            .collect(),
        open_overlaps: overlaps.overlaps,
        rates: stats.rates,
        sources: stats.sources,
        totals: stats.totals,
        url: client.base().to_owned(),
    })
}
