//! A small HTTP client for the contract: requests, replies and the audit read over HTTP.

use reqwest::header::HeaderMap;
use reqwest::StatusCode;
use serde_json::Value;

pub async fn audit_of(http: &reqwest::Client, base: &str, resource: &str) -> Vec<Value> {
    let mut rows = Vec::new();
    let mut before: Option<i64> = None;
    loop {
        let mut url = format!("{base}/v1/audit?limit=1000&resource={}", encode(resource));
        if let Some(before) = before {
            url.push_str(&format!("&before={before}"));
        }
        let reply = Reply::from(http.get(url).send().await.expect("GET audit")).await;
        assert_eq!(reply.status, StatusCode::OK, "{}", reply.json);
        let page = reply.json["entries"].as_array().expect("entries").clone();
        if page.is_empty() {
            break;
        }
        before = page.last().and_then(|row| row["id"].as_i64());
        rows.extend(page);
    }
    rows.reverse();
    rows
}

pub fn encode(text: &str) -> String {
    text.bytes()
        .map(|b| {
            if b.is_ascii_alphanumeric() || b"-._~".contains(&b) {
                (b as char).to_string()
            } else {
                format!("%{b:02X}")
            }
        })
        .collect()
}

/// A PUT under construction.
pub struct Put {
    request: reqwest::RequestBuilder,
}

impl Put {
    pub fn new(http: &reqwest::Client, url: String) -> Self {
        Self {
            request: http.put(url),
        }
    }

    pub fn token(self, token: impl ToString) -> Self {
        self.header("Fencing-Token", token.to_string())
    }

    pub fn key(self, key: &str) -> Self {
        self.header("Idempotency-Key", format!("\"{key}\""))
    }

    pub fn if_match(self, revision: i64) -> Self {
        self.header("If-Match", format!("\"{revision}\""))
    }

    pub fn lease(self, lease: &str) -> Self {
        self.header("Fencing-Lease", lease)
    }

    pub fn owner(self, owner: &str) -> Self {
        self.header("Fencing-Owner", owner)
    }

    pub fn header(mut self, name: &str, value: impl AsRef<str>) -> Self {
        self.request = self.request.header(name, value.as_ref());
        self
    }

    pub fn body(mut self, body: impl Into<reqwest::Body>) -> Self {
        self.request = self.request.body(body);
        self
    }

    pub async fn send(self) -> Reply {
        Reply::from(self.request.send().await.expect("PUT")).await
    }
}

#[derive(Debug)]
pub struct Reply {
    pub status: StatusCode,
    pub headers: HeaderMap,
    pub body: Vec<u8>,
    pub json: Value,
}

impl Reply {
    pub async fn from(response: reqwest::Response) -> Reply {
        let status = response.status();
        let headers = response.headers().clone();
        let body = response.bytes().await.expect("body").to_vec();
        let json = serde_json::from_slice(&body).unwrap_or(Value::Null);
        Reply {
            status,
            headers,
            body,
            json,
        }
    }

    /// Like `from`, but `None` when the connection broke before the whole body arrived.
    pub async fn from_checked(response: reqwest::Response) -> Option<Reply> {
        let status = response.status();
        let headers = response.headers().clone();
        let body = response.bytes().await.ok()?.to_vec();
        let json = serde_json::from_slice(&body).ok()?;
        Some(Reply {
            status,
            headers,
            body,
            json,
        })
    }

    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.get(name).and_then(|v| v.to_str().ok())
    }

    pub fn content_type(&self) -> &str {
        self.header("content-type").unwrap_or_default()
    }

    /// Asserts the RFC 9457 shape and the problem's `type`.
    pub fn assert_problem(&self, status: u16, kind: &str) {
        assert_eq!(self.status.as_u16(), status, "{}", self.json);
        assert_eq!(
            self.content_type(),
            "application/problem+json",
            "{}",
            self.json
        );
        assert_eq!(self.json["type"], kind, "{}", self.json);
        assert_eq!(self.json["status"], status, "{}", self.json);
        assert!(self.json["title"].is_string(), "{}", self.json);
        assert!(self.json["detail"].is_string(), "{}", self.json);
    }
}

pub fn http_builder() -> reqwest::ClientBuilder {
    fencewatch::tls::install_crypto_provider();
    reqwest::Client::builder()
}

pub fn http_client() -> reqwest::Client {
    http_builder().build().expect("build an HTTP client")
}
