//! The dashboard's link to the daemon: the event stream, kept up with capped exponential
//! backoff and resumed with `Last-Event-ID`, and the few reads it needs besides.

use crate::api::events::{AlertEvent, DaemonEvent, OverlapEvent, StatsEvent, WriteEvent};
use crate::tui::model::timeline::{Anchor, Fetch, Page, PAGE};
use crate::tui::model::{Msg, Snapshot};
use eventsource_stream::Eventsource;
use futures_util::StreamExt;
use serde::de::DeserializeOwned;
use serde::Deserialize;
use serde_json::Value;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::mpsc;

/// The wait before reconnect attempt `attempt` (from 1): 250 ms doubling, at most 10 s.
pub fn backoff(attempt: u32) -> Duration {
    let millis = 250u64.saturating_mul(1u64 << attempt.saturating_sub(1).min(16));
    Duration::from_millis(millis.min(10_000))
}

#[derive(Clone)]
pub struct DaemonClient {
    http: reqwest::Client,
    base: String,
    api_key: Option<String>,
}

impl DaemonClient {
    /// A client of the daemon at `base`; an `https://` daemon is trusted through `ca_cert`
    /// when given, else through the system's roots.
    pub fn new(
        base: &str,
        api_key: Option<String>,
        ca_cert: Option<&std::path::Path>,
    ) -> Result<Self, crate::tls::ClientError> {
        Ok(Self {
            http: crate::tls::http_client(reqwest::Client::builder(), ca_cert)?,
            base: base.trim_end_matches('/').to_owned(),
            api_key,
        })
    }

    pub fn base(&self) -> &str {
        &self.base
    }

    fn get(&self, path: &str) -> reqwest::RequestBuilder {
        let request = self.http.get(format!("{}{path}", self.base));
        match &self.api_key {
            Some(key) => request.bearer_auth(key),
            None => request,
        }
    }

    pub async fn json(&self, path: &str) -> Result<Value, String> {
        self.typed(path).await.map_err(|e| e.to_string())
    }

    /// GET `path` and read the answer as `T`.
    pub async fn typed<T: DeserializeOwned>(&self, path: &str) -> Result<T, ClientError> {
        let response = self
            .get(path)
            .timeout(Duration::from_secs(10))
            .send()
            .await
            .map_err(|source| ClientError::Unreachable {
                base: self.base.clone(),
                source,
            })?;
        let status = response.status();
        let body = response
            .bytes()
            .await
            .map_err(|source| ClientError::Unreachable {
                base: self.base.clone(),
                source,
            })?;
        if !status.is_success() {
            let detail = serde_json::from_slice::<Value>(&body)
                .ok()
                .and_then(|v| v.get("detail").and_then(Value::as_str).map(str::to_owned))
                .unwrap_or_default();
            return Err(ClientError::Status {
                path: path.to_owned(),
                status: status.as_u16(),
                detail,
            });
        }
        serde_json::from_slice(&body).map_err(|source| ClientError::BadAnswer {
            path: path.to_owned(),
            source,
        })
    }

    /// A page of `resource`'s audit (`query` after `resource=…&`), oldest first.
    async fn audit(
        &self,
        resource: &str,
        query: &str,
    ) -> Result<Vec<Arc<WriteEvent>>, ClientError> {
        let encoded = encode(resource);
        let page: AuditPage = self
            .typed(&format!("/v1/audit?resource={encoded}&{query}"))
            .await?;
        Ok(page.entries.into_iter().rev().map(Arc::new).collect())
    }

    /// The state at attach, consistent as of one audit id: the stats say through which id
    /// their totals count; the audit is read up to that id, and the stream resumes after it.
    pub async fn snapshot(&self, with_writes: bool) -> Result<Snapshot, ClientError> {
        let stats: StatsEvent = self.typed("/v1/stats").await?;
        let writes = if with_writes && stats.through_audit_id > 0 {
            let page: AuditPage = self
                .typed(&format!(
                    "/v1/audit?before={}&limit={ATTACH_WRITES}",
                    stats.through_audit_id + 1
                ))
                .await?;
            page.entries.into_iter().rev().map(Arc::new).collect()
        } else {
            Vec::new()
        };
        let overlaps: Overlaps = self.typed("/v1/overlaps?state=all&limit=500").await?;
        let alerts: Alerts = self.typed("/v1/alerts").await?;
        Ok(Snapshot {
            stats: Some(stats),
            writes,
            overlaps: overlaps.overlaps,
            alerts: alerts.alerts,
        })
    }

    /// The newest row of `resource` below `before`, if any.
    async fn row_before(
        &self,
        resource: &str,
        before: i64,
    ) -> Result<Option<Arc<WriteEvent>>, ClientError> {
        Ok(self
            .audit(resource, &format!("before={before}&limit=1"))
            .await?
            .pop())
    }

    /// The id of the first row of `resource` at or after `at`: a binary search over ids, a
    /// row at a time, so an incident is found however many writes came after it.
    async fn first_at_or_after(
        &self,
        resource: &str,
        at: chrono::DateTime<chrono::Utc>,
    ) -> Result<Option<i64>, ClientError> {
        let Some(newest) = self.audit(resource, "limit=1").await?.pop() else {
            return Ok(None);
        };
        if newest.at < at {
            return Ok(Some(newest.id));
        }
        // row_before(lo) is older than `at` (or absent); row_before(hi) is not.
        let (mut lo, mut hi) = (1i64, newest.id + 1);
        while hi - lo > 1 {
            let mid = lo + (hi - lo) / 2;
            match self.row_before(resource, mid).await? {
                Some(row) if row.at >= at => hi = mid,
                _ => lo = mid,
            }
        }
        Ok(self.row_before(resource, hi).await?.map(|row| row.id))
    }

    /// Rows of `resource`'s timeline, as the model asked.
    pub async fn timeline(&self, resource: &str, fetch: Fetch) -> Result<Page, ClientError> {
        let full = |rows: &[Arc<WriteEvent>], limit: u32| rows.len() >= limit as usize;
        match &fetch {
            Fetch::Around(anchor) => {
                let (start, wanted) = match anchor {
                    Anchor::Write { id } => (Some(*id), None),
                    Anchor::Overlap {
                        first_seen,
                        stale_token,
                        ..
                    } => (
                        self.first_at_or_after(resource, *first_seen).await?,
                        Some(*stale_token),
                    ),
                };
                let Some(start) = start else {
                    return Ok(Page {
                        rows: Vec::new(),
                        fetch,
                        at_start: true,
                        at_end: true,
                        focus: None,
                    });
                };
                let half = PAGE / 2;
                let mut older = self
                    .audit(resource, &format!("before={start}&limit={half}"))
                    .await?;
                let newer = self
                    .audit(resource, &format!("after={}&limit={PAGE}", start - 1))
                    .await?;
                // The overlap's first stale write: its generation refused, at or after `start`.
                let focus = newer
                    .iter()
                    .find(|r| {
                        wanted.is_none_or(|token| r.token == Some(token))
                            && (wanted.is_none() || r.outcome.is_rejection())
                    })
                    .map_or(start, |r| r.id);
                let (at_start, at_end) = (!full(&older, half), !full(&newer, PAGE));
                older.extend(newer);
                Ok(Page {
                    rows: older,
                    fetch,
                    at_start,
                    at_end,
                    focus: Some(focus),
                })
            }
            Fetch::Before(id) => {
                let rows = self
                    .audit(resource, &format!("before={id}&limit={PAGE}"))
                    .await?;
                Ok(Page {
                    at_start: !full(&rows, PAGE),
                    at_end: false,
                    rows,
                    fetch,
                    focus: None,
                })
            }
            Fetch::After(id) => {
                let rows = self
                    .audit(resource, &format!("after={id}&limit={PAGE}"))
                    .await?;
                Ok(Page {
                    at_start: *id == 0,
                    at_end: !full(&rows, PAGE),
                    rows,
                    fetch,
                    focus: None,
                })
            }
            Fetch::Newest => {
                let rows = self.audit(resource, &format!("limit={PAGE}")).await?;
                Ok(Page {
                    at_start: !full(&rows, PAGE),
                    at_end: true,
                    rows,
                    fetch,
                    focus: None,
                })
            }
        }
    }

    /// Follows the event stream forever, reconnecting with backoff and resuming after the last
    /// write it delivered. Ends when the receiver is gone.
    pub async fn follow(self, to: mpsc::Sender<Msg>) {
        let mut last_write: Option<i64> = None;
        let mut attempt = 0u32;
        loop {
            let error = match self.stream_once(&to, &mut last_write, &mut attempt).await {
                Ok(()) => "the daemon ended the stream".to_owned(),
                Err(error) => error.to_string(),
            };
            if to.is_closed() {
                return;
            }
            attempt += 1;
            let wait = backoff(attempt);
            if to
                .send(Msg::Disconnected {
                    attempt,
                    retry_in: wait,
                    error,
                })
                .await
                .is_err()
            {
                return;
            }
            tokio::time::sleep(wait).await;
        }
    }

    async fn stream_once(
        &self,
        to: &mpsc::Sender<Msg>,
        last_write: &mut Option<i64>,
        attempt: &mut u32,
    ) -> Result<(), ClientError> {
        // The snapshot first, then the stream from the id it is consistent with: nothing is
        // counted twice or missed between the two.
        let replayed_from = *last_write;
        let snapshot = self.snapshot(last_write.is_none()).await?;
        let resume = last_write
            .or_else(|| snapshot.stats.as_ref().map(|s| s.through_audit_id))
            .unwrap_or(0);
        let response = self
            .get("/v1/events")
            .header("Accept", "text/event-stream")
            .header("Last-Event-ID", resume.to_string())
            .send()
            .await
            .map_err(|source| ClientError::Unreachable {
                base: self.base.clone(),
                source,
            })?;
        if !response.status().is_success() {
            return Err(ClientError::Status {
                path: "/v1/events".into(),
                status: response.status().as_u16(),
                detail: String::new(),
            });
        }
        *attempt = 0;
        *last_write = Some(resume);
        let _ = to.send(Msg::Connected { replayed_from }).await;
        let _ = to.send(Msg::Snapshot(snapshot)).await;
        let mut events = response.bytes_stream().eventsource();
        while let Some(event) = events.next().await {
            let event = event.map_err(|e| ClientError::Stream(e.to_string()))?;
            let parsed = match DaemonEvent::parse(&event.event, &event.data) {
                Ok(parsed) => parsed,
                Err(error) => {
                    // A newer daemon's event kind: skip it rather than drop the stream.
                    tracing::debug!(%error, "skipping an event");
                    continue;
                }
            };
            if let DaemonEvent::Write(row) = &parsed {
                *last_write = Some(row.id);
            }
            if to.send(Msg::Event(parsed)).await.is_err() {
                return Ok(());
            }
        }
        Ok(())
    }
}

/// Writes read at attach, for the rejections list and the charts.
const ATTACH_WRITES: u32 = 1000;

#[derive(Deserialize)]
struct AuditPage {
    entries: Vec<WriteEvent>,
}

#[derive(Deserialize)]
struct Overlaps {
    overlaps: Vec<OverlapEvent>,
}

#[derive(Deserialize)]
struct Alerts {
    alerts: Vec<AlertEvent>,
}

fn encode(text: &str) -> String {
    percent_encoding::utf8_percent_encode(text, percent_encoding::NON_ALPHANUMERIC).to_string()
}

#[derive(Debug, thiserror::Error)]
pub enum ClientError {
    #[error("cannot reach {base}: {source}")]
    Unreachable {
        base: String,
        source: reqwest::Error,
    },
    #[error("{path}: {status}: {detail}")]
    Status {
        path: String,
        status: u16,
        detail: String,
    },
    #[error("bad answer from {path}: {source}")]
    BadAnswer {
        path: String,
        source: serde_json::Error,
    },
    #[error("the stream broke: {0}")]
    Stream(String),
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
