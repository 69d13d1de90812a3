//! The CLI's clients of a running daemon: `fencewatch lease …` and `fencewatch write …`.
//! Each prints the daemon's JSON answer and exits with a code that says what kind of answer
//! it was, so that shell workers can branch on it.

use crate::cli::{Connection, LeaseAction, LeaseArgs, WriteArgs};
use anyhow::Context;
use percent_encoding::{utf8_percent_encode, AsciiSet, NON_ALPHANUMERIC};
use serde_json::{json, Value};
use std::io::Read;
use std::process::ExitCode;

/// The exit code for an answer of the daemon.
pub fn exit_code(status: u16, problem_type: Option<&str>) -> u8 {
    match (status, problem_type) {
        (200..=299, _) => 0,
        (409, Some("stale-token")) => 3,
        (412, _) => 4,
        (422, _) => 5,
        (409, Some("lease-held" | "lease-lost" | "lease-expired")) => 6,
        (401 | 403, _) => 7,
        (400 | 413, _) => 8,
        (404, _) => 9,
        _ => 1,
    }
}

/// Path characters kept as they are: unreserved ones and `/`, so that `accounts/totals`
/// stays readable.
const PATH: &AsciiSet = &NON_ALPHANUMERIC
    .remove(b'-')
    .remove(b'.')
    .remove(b'_')
    .remove(b'~')
    .remove(b'/');

fn encode_path(text: &str) -> String {
    utf8_percent_encode(text, PATH).to_string()
}

/// Lease names may contain `/` too, but there it would end the name.
fn encode_segment(text: &str) -> String {
    utf8_percent_encode(text, NON_ALPHANUMERIC).to_string()
}

struct Client {
    http: reqwest::Client,
    base: String,
    api_key: Option<String>,
}

impl Client {
    fn new(connection: &Connection) -> anyhow::Result<Self> {
        Ok(Self {
            http: crate::tls::http_client(
                reqwest::Client::builder(),
                connection.ca_cert.as_deref(),
            )?,
            base: connection.url.trim_end_matches('/').to_owned(),
            api_key: connection.api_key.clone(),
        })
    }

    fn request(&self, method: reqwest::Method, path: &str) -> reqwest::RequestBuilder {
        let request = self.http.request(method, format!("{}{path}", self.base));
        match &self.api_key {
            Some(key) => request.bearer_auth(key),
            None => request,
        }
    }

    /// Sends the request; prints the answer; returns the exit code.
    async fn send(&self, request: reqwest::RequestBuilder) -> anyhow::Result<(u8, Value)> {
        let response = request
            .send()
            .await
            .with_context(|| format!("failed to reach the daemon at {}", self.base))?;
        let status = response.status().as_u16();
        let text = response
            .text()
            .await
            .context("failed to read the daemon's answer")?;
        let body: Value = if text.is_empty() {
            Value::Null
        } else {
            serde_json::from_str(&text).unwrap_or(Value::String(text))
        };
        let code = exit_code(status, body.get("type").and_then(Value::as_str));
        Ok((code, body))
    }
}

fn print(code: u8, body: &Value) {
    if body.is_null() {
        return;
    }
    let line = body.to_string();
    if code == 0 {
        println!("{line}");
    } else {
        eprintln!("{line}");
    }
}

fn millis(duration: std::time::Duration) -> u128 {
    duration.as_millis()
}

pub async fn lease(args: LeaseArgs) -> anyhow::Result<ExitCode> {
    let client = Client::new(&args.connection)?;
    let post = |name: &str, action: &str, body: Value| {
        client
            .request(
                reqwest::Method::POST,
                &format!("/v1/leases/{}/{action}", encode_segment(name)),
            )
            .json(&body)
    };
    let (code, body) = match &args.action {
        LeaseAction::Acquire {
            name,
            holder,
            ttl,
            token_only,
        } => {
            let (code, body) = client
                .send(post(
                    name,
                    "acquire",
                    json!({ "holder": holder, "ttl_ms": millis(*ttl) }),
                ))
                .await?;
            if *token_only && code == 0 {
                println!("{}", body["token"]);
                return Ok(ExitCode::SUCCESS);
            }
            (code, body)
        }
        LeaseAction::Renew {
            name,
            holder,
            token,
            ttl,
        } => {
            let mut request = json!({ "holder": holder, "token": token });
            if let Some(ttl) = ttl {
                request["ttl_ms"] = json!(millis(*ttl));
            }
            client.send(post(name, "renew", request)).await?
        }
        LeaseAction::Release {
            name,
            holder,
            token,
        } => {
            client
                .send(post(
                    name,
                    "release",
                    json!({ "holder": holder, "token": token }),
                ))
                .await?
        }
        LeaseAction::Show { name } => {
            client
                .send(client.request(
                    reqwest::Method::GET,
                    &format!("/v1/leases/{}", encode_segment(name)),
                ))
                .await?
        }
    };
    print(code, &body);
    Ok(ExitCode::from(code))
}

pub async fn write(args: WriteArgs) -> anyhow::Result<ExitCode> {
    let client = Client::new(&args.connection)?;
    let mut value = Vec::new();
    std::io::stdin()
        .read_to_end(&mut value)
        .context("failed to read the value from stdin")?;
    let mut request = client
        .request(
            reqwest::Method::PUT,
            &format!("/v1/resources/{}", encode_path(&args.key)),
        )
        .header("Fencing-Token", &args.token)
        .body(value);
    let optional = [
        ("Idempotency-Key", args.idempotency_key.clone()),
        ("If-Match", args.if_match.map(|r| format!("\"{r}\""))),
        ("Fencing-Lease", args.lease.clone()),
        ("Fencing-Owner", args.owner.clone()),
        ("Content-Type", args.content_type.clone()),
    ];
    for (name, value) in optional {
        if let Some(value) = value {
            request = request.header(name, value);
        }
    }
    let (code, body) = client.send(request).await?;
    print(code, &body);
    Ok(ExitCode::from(code))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exit_codes_tell_the_kinds_apart() {
        assert_eq!(exit_code(201, None), 0);
        assert_eq!(exit_code(200, None), 0);
        assert_eq!(exit_code(204, None), 0);
        assert_eq!(exit_code(409, Some("stale-token")), 3);
        assert_eq!(exit_code(412, Some("revision-mismatch")), 4);
        assert_eq!(exit_code(422, Some("idempotency-key-reuse")), 5);
        assert_eq!(exit_code(409, Some("lease-held")), 6);
        assert_eq!(exit_code(409, Some("lease-lost")), 6);
        assert_eq!(exit_code(409, Some("lease-expired")), 6);
        assert_eq!(exit_code(403, Some("unknown-generation")), 7);
        assert_eq!(exit_code(401, Some("unauthorized")), 7);
        assert_eq!(exit_code(400, Some("invalid-request")), 8);
        assert_eq!(exit_code(413, Some("payload-too-large")), 8);
        assert_eq!(exit_code(404, Some("not-found")), 9);
        assert_eq!(exit_code(503, Some("unavailable")), 1);
    }

    #[test]
    fn keys_keep_their_slashes_and_lose_everything_else() {
        assert_eq!(encode_path("accounts/totals"), "accounts/totals");
        assert_eq!(encode_path("a b?c#%"), "a%20b%3Fc%23%25");
        assert_eq!(encode_segment("jobs/a"), "jobs%2Fa");
    }
}
