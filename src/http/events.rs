//! `GET /v1/events`: Server-Sent Events. `write` events carry audit rows with their id (a
//! watched database's rows carry their `source` and no SSE id); a client
//! that reconnects with `Last-Event-ID` first gets every write it missed, from the audit, then
//! the live stream, with nothing twice. `stats` comes every second; `overlap` and `alert` as
//! they change.

use super::problem::Problem;
use super::AppState;
use crate::live::{LiveMessage, Subscriber};
use axum::extract::State;
use axum::http::HeaderMap;
use axum::response::sse::{Event as SseEvent, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::Router;
use futures_util::stream;
use std::convert::Infallible;
use std::time::Duration;

pub fn router() -> Router<AppState> {
    Router::new().route("/v1/events", get(events))
}

async fn events(State(state): State<AppState>, headers: HeaderMap) -> Result<Response, Problem> {
    let last_event_id = match headers.get("last-event-id") {
        None => None,
        Some(value) => Some(
            value
                .to_str()
                .ok()
                .and_then(|v| v.trim().parse::<i64>().ok())
                .filter(|id| *id >= 0)
                .ok_or_else(|| Problem::invalid_request("Last-Event-ID must be an audit id"))?,
        ),
    };
    let permit = state
        .live
        .admit()
        .ok_or_else(|| Problem::unavailable("too many live event subscribers; retry later"))?;
    let subscriber = Subscriber::new(state.live.clone(), last_event_id);
    // The permit lives as long as the stream.
    let stream = stream::unfold(
        (subscriber, permit),
        |(mut subscriber, permit)| async move {
            let message = subscriber.next().await?;
            Some((
                Ok::<_, Infallible>(sse_event(message)),
                (subscriber, permit),
            ))
        },
    );
    Ok(Sse::new(stream)
        .keep_alive(KeepAlive::new().interval(Duration::from_secs(15)))
        .into_response())
}

fn sse_event(message: LiveMessage) -> SseEvent {
    match message {
        // A watched database's row carries no `id:`: its id is that database's, and a client's
        // `Last-Event-ID` must stay a position in this daemon's audit.
        LiveMessage::Write(row) if row.source.is_some() => SseEvent::default()
            .event("write")
            .data(serde_json::to_string(&row).unwrap_or_default()),
        LiveMessage::Write(row) => SseEvent::default()
            .event("write")
            .id(row.id.to_string())
            .data(serde_json::to_string(&row).unwrap_or_default()),
        LiveMessage::Overlap(overlap) => SseEvent::default()
            .event("overlap")
            .data(serde_json::to_string(&*overlap).unwrap_or_default()),
        LiveMessage::Alert(alert) => SseEvent::default()
            .event("alert")
            .data(serde_json::to_string(&*alert).unwrap_or_default()),
        LiveMessage::Stats(stats) => SseEvent::default()
            .event("stats")
            .data(serde_json::to_string(&stats).unwrap_or_default()),
    }
}
