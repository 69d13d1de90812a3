//! A minimal reader of the live event stream.

use super::http::http_client;
use serde_json::Value;
use std::time::Duration;

#[derive(Debug, Clone, Default)]
pub struct SseMessage {
    pub event: String,
    pub id: Option<String>,
    pub data: String,
}

impl SseMessage {
    pub fn json(&self) -> Value {
        serde_json::from_str(&self.data).expect("event data is JSON")
    }
}

/// A minimal SSE reader over a streaming response.
pub struct SseClient {
    response: reqwest::Response,
    buffer: String,
}

impl SseClient {
    pub async fn connect(base: &str, last_event_id: Option<i64>) -> SseClient {
        let mut request = http_client().get(format!("{base}/v1/events"));
        if let Some(id) = last_event_id {
            request = request.header("Last-Event-ID", id.to_string());
        }
        let response = request.send().await.expect("GET /v1/events");
        assert_eq!(response.status(), 200);
        assert!(response
            .headers()
            .get("content-type")
            .and_then(|v| v.to_str().ok())
            .is_some_and(|v| v.starts_with("text/event-stream")));
        SseClient {
            response,
            buffer: String::new(),
        }
    }

    /// The next event of any kind, or `None` if none arrives within `wait`.
    pub async fn next_within(&mut self, wait: Duration) -> Option<SseMessage> {
        let deadline = tokio::time::Instant::now() + wait;
        loop {
            if let Some(end) = self.buffer.find("\n\n") {
                let block: String = self.buffer.drain(..end + 2).collect();
                let mut message = SseMessage::default();
                for line in block.lines() {
                    if let Some(value) = line.strip_prefix("event:") {
                        message.event = value.trim_start().to_owned();
                    } else if let Some(value) = line.strip_prefix("id:") {
                        message.id = Some(value.trim_start().to_owned());
                    } else if let Some(value) = line.strip_prefix("data:") {
                        if !message.data.is_empty() {
                            message.data.push('\n');
                        }
                        message
                            .data
                            .push_str(value.strip_prefix(' ').unwrap_or(value));
                    }
                }
                if message.event.is_empty() && message.data.is_empty() {
                    continue; // a keep-alive comment
                }
                return Some(message);
            }
            let chunk = tokio::time::timeout_at(deadline, self.response.chunk())
                .await
                .ok()?;
            let chunk = chunk.expect("read the stream")?;
            self.buffer.push_str(&String::from_utf8_lossy(&chunk));
        }
    }

    /// The next event of kind `kind`, skipping others; panics after `wait`.
    pub async fn next_of(&mut self, kind: &str, wait: Duration) -> SseMessage {
        let deadline = tokio::time::Instant::now() + wait;
        loop {
            let left = deadline.saturating_duration_since(tokio::time::Instant::now());
            let message = self
                .next_within(left)
                .await
                .unwrap_or_else(|| panic!("no {kind} event within {wait:?}"));
            if message.event == kind {
                return message;
            }
        }
    }

    /// Write events until none arrives for `quiet` (other events do not count).
    pub async fn writes_until_quiet(&mut self, quiet: Duration) -> Vec<SseMessage> {
        let mut writes = Vec::new();
        let mut deadline = tokio::time::Instant::now() + quiet;
        loop {
            let left = deadline.saturating_duration_since(tokio::time::Instant::now());
            match self.next_within(left).await {
                Some(message) if message.event == "write" => {
                    writes.push(message);
                    deadline = tokio::time::Instant::now() + quiet;
                }
                Some(_) => {}
                None => return writes,
            }
        }
    }
}
