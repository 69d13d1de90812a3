//! `GET /v1/events`: Server-Sent Events. `write` events carry audit rows with their id (a
//! watched database's rows carry their `source` and no SSE id); a client
//! that reconnects with `Last-Event-ID` first gets every write it missed, from the audit, then
//! the live stream, with nothing twice. `stats` comes every second; `overlap` and `alert` as
//! they change.

use super::problem::Problem;
use super::AppState;
use crate::api::events::{DaemonEvent, EventError};
use crate::live::Subscriber;
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
            loop {
                let event = subscriber.next().await?;
                match sse_event(&event) {
                    Ok(sse) => return Some((Ok::<_, Infallible>(sse), (subscriber, permit))),
                    // The stream goes on: ending it would have the client resume at this same
                    // event and fail again.
                    Err(error) => tracing::error!(%error, "cannot send a live event; skipped"),
                }
            }
        },
    );
    Ok(Sse::new(stream)
        .keep_alive(KeepAlive::new().interval(Duration::from_secs(15)))
        .into_response())
}

/// An event as SSE, in the order of its lines: `event:` its kind's name, `id:` where it has
/// one, `data:` its JSON.
fn sse_event(event: &DaemonEvent) -> Result<SseEvent, EventError> {
    let data = event.data()?;
    let sse = SseEvent::default().event(event.kind().name());
    let sse = match event.sse_id() {
        Some(id) => sse.id(id.to_string()),
        None => sse,
    };
    Ok(sse.data(data))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::api::events::fixtures::{wire, WATCHED_WRITE};
    use crate::api::events::EventKind;

    /// The bytes a stream of `events` sends.
    async fn sent(events: &[DaemonEvent]) -> String {
        let frames: Vec<Result<SseEvent, Infallible>> = events
            .iter()
            .map(|event| Ok(sse_event(event).unwrap()))
            .collect();
        let response = Sse::new(stream::iter(frames)).into_response();
        let body = axum::body::to_bytes(response.into_body(), usize::MAX)
            .await
            .unwrap();
        String::from_utf8(body.to_vec()).unwrap()
    }

    #[tokio::test]
    async fn every_kind_is_sent_under_its_name_with_its_data_as_given() {
        for &kind in EventKind::ALL {
            let (name, data) = wire(kind);
            let event = DaemonEvent::parse(name, data).unwrap();
            let id = match kind {
                EventKind::Write => "id: 7\n",
                EventKind::Overlap | EventKind::Alert | EventKind::Stats => "",
            };
            assert_eq!(
                sent(&[event]).await,
                format!("event: {name}\n{id}data: {data}\n\n")
            );
        }
    }

    #[tokio::test]
    async fn a_watched_databases_row_has_no_id_line() {
        let event = DaemonEvent::parse("write", WATCHED_WRITE).unwrap();
        assert_eq!(
            sent(&[event]).await,
            format!("event: write\ndata: {WATCHED_WRITE}\n\n")
        );
    }
}
