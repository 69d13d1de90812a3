//! The dashboard's link to the daemon: the event stream, kept up with capped exponential
//! backoff and resumed with `Last-Event-ID`, and the few reads it needs besides.

use super::model::Msg;
use eventsource_stream::Eventsource;
use futures_util::StreamExt;
use serde_json::Value;
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
        let response = self
            .get(path)
            .timeout(Duration::from_secs(10))
            .send()
            .await
            .map_err(|e| format!("cannot reach {}: {e}", self.base))?;
        let status = response.status();
        let body: Value = response
            .json()
            .await
            .map_err(|e| format!("bad answer from {path}: {e}"))?;
        if !status.is_success() {
            return Err(format!(
                "{path}: {status}: {}",
                body["detail"].as_str().unwrap_or("")
            ));
        }
        Ok(body)
    }

    /// What the dashboard shows before the first event: overlaps, alerts, totals.
    pub async fn snapshot(&self) -> Result<Msg, String> {
        let overlaps = self.json("/v1/overlaps?state=all&limit=500").await?;
        let alerts = self.json("/v1/alerts").await?;
        let stats = self.json("/v1/stats").await?;
        Ok(Msg::Snapshot {
            overlaps: overlaps["overlaps"].as_array().cloned().unwrap_or_default(),
            alerts: alerts["alerts"].as_array().cloned().unwrap_or_default(),
            stats: Some(stats),
        })
    }

    /// The audit of `resource`, oldest first.
    pub async fn timeline(&self, resource: &str) -> Result<Vec<Value>, String> {
        let encoded: String =
            percent_encoding::utf8_percent_encode(resource, percent_encoding::NON_ALPHANUMERIC)
                .to_string();
        let page = self
            .json(&format!("/v1/audit?resource={encoded}&limit=500"))
            .await?;
        let mut rows = page["entries"].as_array().cloned().unwrap_or_default();
        rows.reverse();
        Ok(rows)
    }

    /// Follows the event stream forever, reconnecting with backoff and resuming after the last
    /// write it delivered. Ends when the receiver is gone.
    pub async fn follow(self, to: mpsc::Sender<Msg>) {
        let mut last_write: Option<i64> = None;
        let mut attempt = 0u32;
        loop {
            let error = match self.stream_once(&to, &mut last_write, &mut attempt).await {
                Ok(()) => "the daemon ended the stream".to_owned(),
                Err(error) => error,
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
    ) -> Result<(), String> {
        let mut request = self.get("/v1/events").header("Accept", "text/event-stream");
        if let Some(id) = last_write {
            request = request.header("Last-Event-ID", id.to_string());
        }
        let response = request
            .send()
            .await
            .map_err(|e| format!("cannot reach {}: {e}", self.base))?;
        if !response.status().is_success() {
            return Err(format!("the daemon answered {}", response.status()));
        }
        let snapshot = self.snapshot().await?;
        *attempt = 0;
        let _ = to
            .send(Msg::Connected {
                replayed_from: *last_write,
            })
            .await;
        let _ = to.send(snapshot).await;
        let mut events = response.bytes_stream().eventsource();
        while let Some(event) = events.next().await {
            let event = event.map_err(|e| format!("the stream broke: {e}"))?;
            let data: Value = serde_json::from_str(&event.data).unwrap_or(Value::Null);
            if event.event == "write" {
                if let Ok(id) = event.id.parse::<i64>() {
                    *last_write = Some(id);
                }
            }
            if to
                .send(Msg::Event {
                    kind: event.event,
                    data,
                })
                .await
                .is_err()
            {
                return Ok(());
            }
        }
        Ok(())
    }
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
