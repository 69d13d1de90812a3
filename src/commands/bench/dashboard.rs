//! `bench --dashboard`: the dashboard's event path, without a daemon.

use anyhow::Context;
use serde::Serialize;
use std::time::Instant;

/// What the dashboard's event path sustains.
#[derive(Debug, Clone, Serialize)]
pub struct DashboardReport {
    pub events: usize,
    pub seconds: f64,
    pub per_second: f64,
}

/// Feeds `events` write events, as the daemon frames them on `/v1/events`, through the
/// dashboard's own path (SSE decoding, JSON parsing, the model's update) on one thread, in
/// chunks as a socket would deliver them. Drawing is not included: frames are drawn on a
/// fixed interval, whatever the event rate.
pub async fn run_dashboard(events: usize) -> anyhow::Result<DashboardReport> {
    use crate::tui::model::{Model, Msg};
    use eventsource_stream::Eventsource;
    use futures_util::StreamExt;

    let mut wire = Vec::with_capacity(events * 420);
    for id in 1..=events {
        let outcome = if id % 20 == 0 { "stale" } else { "accepted" };
        let entry = serde_json::json!({
            "id": id, "at": "2026-11-30T07:00:00.000000Z", "resource": format!("bench/{}", id % 1000),
            "outcome": outcome, "token": 1000, "highest_token": 1000, "revision": id,
            "idempotency_key": null, "expected_revision": null, "owner": "worker-1",
            "lease": null, "body_sha256": "3f0a377ba0a4a460ecb616f6507ce0d8cfa3e704025d4fda3ed0c5ca05468728",
            "body_len": 20, "detail": null, "caller": null
        });
        wire.extend_from_slice(format!("event: write\nid: {id}\ndata: {entry}\n\n").as_bytes());
    }
    let chunks: Vec<Result<bytes::Bytes, std::io::Error>> = wire
        .chunks(16 * 1024)
        .map(|chunk| Ok(bytes::Bytes::copy_from_slice(chunk)))
        .collect();
    let mut model = Model::new();
    let started = Instant::now();
    let mut stream = futures_util::stream::iter(chunks).eventsource();
    let mut seen = 0;
    while let Some(event) = stream.next().await {
        let event = event.context("the bench's own stream did not decode")?;
        let parsed = crate::api::events::DaemonEvent::parse(&event.event, &event.data)?;
        model.update(Msg::Event(parsed));
        seen += 1;
    }
    let seconds = started.elapsed().as_secs_f64();
    anyhow::ensure!(seen == events, "decoded {seen} of {events} events");
    Ok(DashboardReport {
        events,
        seconds,
        per_second: events as f64 / seconds.max(f64::EPSILON),
    })
}
