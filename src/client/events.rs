//! Following the event stream: a consistent state at attach, then the live events, kept up
//! with capped exponential backoff and resumed with `Last-Event-ID`.

use super::{AuditRequest, ClientError, DaemonClient};
use crate::api::events::{AlertView, DaemonEvent, StatsView};
use crate::domain::{AuditEntry, Overlap};
use eventsource_stream::{EventStreamError, Eventsource};
use futures_util::StreamExt;
use std::time::Duration;
use tokio::sync::mpsc;

/// Writes read at attach, for the rejections list and the charts.
const ATTACH_WRITES: u32 = 1000;
/// Overlaps read at attach, open and closed.
const ATTACH_OVERLAPS: u32 = 500;

/// The wait before reconnect attempt `attempt` (from 1): 250 ms doubling, at most 10 s.
pub fn backoff(attempt: u32) -> Duration {
    crate::domain::backoff::doubling(attempt, Duration::from_millis(250), Duration::from_secs(10))
}

/// The state at attach, consistent as of one audit id: the stats say through which id their
/// totals count, and the writes are the audit's up to that same id.
#[derive(Debug, Clone, PartialEq)]
pub struct Attach {
    pub stats: StatsView,
    /// Recent writes up to the stats' audit id, oldest first.
    pub writes: Vec<AuditEntry>,
    pub overlaps: Vec<Overlap>,
    pub alerts: Vec<AlertView>,
}

/// What the follower tells its listener, in order: connected, the state at attach, events;
/// after a break, disconnected and (once back) the same again.
#[derive(Debug, Clone, PartialEq)]
pub enum StreamUpdate {
    /// Streaming; `replayed_from` is the write id a reconnect resumed after.
    Connected {
        replayed_from: Option<i64>,
    },
    Attached(Attach),
    Event(DaemonEvent),
    /// Lost; the next attempt (counted from 1) is in `retry_in`.
    Disconnected {
        attempt: u32,
        retry_in: Duration,
        error: String,
    },
}

impl DaemonClient {
    /// Reads the state at attach; the writes only when asked (a reconnect replays them from
    /// the stream instead).
    pub async fn attach(&self, with_writes: bool) -> Result<Attach, ClientError> {
        let stats = self.stats().await?;
        let writes = if with_writes && stats.through_audit_id > 0 {
            let page = self
                .audit(AuditRequest {
                    before: Some(stats.through_audit_id + 1),
                    limit: Some(ATTACH_WRITES),
                    ..AuditRequest::default()
                })
                .await?;
            page.entries.into_iter().rev().collect()
        } else {
            Vec::new()
        };
        let overlaps = self.overlaps(None, ATTACH_OVERLAPS).await?.overlaps;
        let alerts = self.alerts().await?.alerts;
        Ok(Attach {
            stats,
            writes,
            overlaps,
            alerts,
        })
    }

    /// Follows the event stream forever, reconnecting with backoff and resuming after the last
    /// write it delivered. Ends when the receiver is gone.
    pub async fn follow<M: From<StreamUpdate>>(self, to: mpsc::Sender<M>) {
        let mut last_write: Option<i64> = None;
        let mut attempt = 0u32;
        loop {
            let error = match self.stream_once(&to, &mut last_write, &mut attempt).await {
                Ok(()) => "the daemon ended the stream".to_owned(),
                Err(error) => with_causes(&error),
            };
            if to.is_closed() {
                return;
            }
            attempt += 1;
            let wait = backoff(attempt);
            let update = StreamUpdate::Disconnected {
                attempt,
                retry_in: wait,
                error,
            };
            if to.send(update.into()).await.is_err() {
                return;
            }
            tokio::time::sleep(wait).await;
        }
    }

    async fn stream_once<M: From<StreamUpdate>>(
        &self,
        to: &mpsc::Sender<M>,
        last_write: &mut Option<i64>,
        attempt: &mut u32,
    ) -> Result<(), ClientError> {
        // The state at attach first, then the stream from the id it is consistent with:
        // nothing is counted twice or missed between the two.
        let replayed_from = *last_write;
        let attach = self.attach(last_write.is_none()).await?;
        let resume = last_write.unwrap_or(attach.stats.through_audit_id);
        let request = self
            .request(reqwest::Method::GET, "/v1/events")
            .header("Accept", "text/event-stream")
            .header("Last-Event-ID", resume.to_string());
        let response = self.send(request).await?;
        if !response.status().is_success() {
            return Err(ClientError::Status {
                path: "/v1/events".into(),
                status: response.status().as_u16(),
                detail: String::new(),
            });
        }
        *attempt = 0;
        *last_write = Some(resume);
        let _ = to
            .send(StreamUpdate::Connected { replayed_from }.into())
            .await;
        let _ = to.send(StreamUpdate::Attached(attach).into()).await;
        let mut events = response.bytes_stream().eventsource();
        while let Some(event) = events.next().await {
            let event = event.map_err(|error| {
                ClientError::Stream(match error {
                    EventStreamError::Transport(source) => {
                        EventStreamError::Transport(super::quiet(source))
                    }
                    other => other,
                })
            })?;
            let parsed = match DaemonEvent::parse(&event.event, &event.data) {
                Ok(parsed) => parsed,
                Err(error) => {
                    // A newer daemon's event kind: skip it rather than drop the stream.
                    tracing::debug!(%error, "skipping an event");
                    continue;
                }
            };
            // Resumed from where the daemon says its stream can be resumed (its own writes).
            if let Some(id) = parsed.sse_id() {
                *last_write = Some(id);
            }
            if to.send(StreamUpdate::Event(parsed).into()).await.is_err() {
                return Ok(());
            }
        }
        Ok(())
    }
}

/// An error and its causes on one line, as the dashboard shows why it is reconnecting.
fn with_causes(error: &dyn std::error::Error) -> String {
    let mut text = error.to_string();
    let mut cause = error.source();
    while let Some(next) = cause {
        text.push_str(": ");
        text.push_str(&next.to_string());
        cause = next.source();
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_retry_schedule_doubles_up_to_ten_seconds() {
        let schedule: Vec<u128> = (1..=8).map(|a| backoff(a).as_millis()).collect();
        assert_eq!(schedule, [250, 500, 1000, 2000, 4000, 8000, 10_000, 10_000]);
        assert_eq!(backoff(10_000).as_millis(), 10_000);
    }
}
