//! etcd through its JSON gateway (`POST /v3/…`, keys and values in base64, 64-bit numbers as
//! strings): the daemon's reads of a lock, and the few calls `fencewatch lock`, the bench, the
//! demo and the tests make to take one. Speaking the gateway keeps protobuf out of the build
//! (docs/architecture.md, "External authorities").

use super::AuthorityError;
use crate::domain::authority::{ExternalLock, LockHolder, LockObservation};
use base64::engine::general_purpose::STANDARD as BASE64;
use base64::Engine as _;
use serde::Deserialize;
use serde_json::{json, Value};
use std::time::Duration;

/// What went wrong talking to etcd.
#[derive(Debug, thiserror::Error)]
pub enum EtcdError {
    #[error("etcd did not answer within {}", humantime::format_duration(*.0))]
    Timeout(Duration),
    #[error("etcd is unavailable: {0}")]
    Unavailable(#[source] reqwest::Error),
    #[error("etcd refused {call}: {message}")]
    Refused { call: &'static str, message: String },
    #[error("etcd answered {call} with something unreadable: {reason}")]
    Unreadable { call: &'static str, reason: String },
    #[error("no etcd endpoint given")]
    NoEndpoint,
}

/// A client of one etcd cluster: tries each endpoint in turn, every call bounded by `timeout`.
#[derive(Clone)]
pub struct EtcdClient {
    endpoints: Vec<String>,
    http: reqwest::Client,
    timeout: Duration,
}

/// One key as etcd lists it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EtcdKey {
    pub key: String,
    pub create_revision: i64,
    pub lease: i64,
}

#[derive(Deserialize)]
struct Header {
    #[serde(default, deserialize_with = "number")]
    revision: i64,
}

#[derive(Deserialize)]
struct RawKey {
    #[serde(default)]
    key: String,
    #[serde(default, deserialize_with = "number")]
    create_revision: i64,
    #[serde(default, deserialize_with = "number")]
    lease: i64,
}

#[derive(Deserialize)]
struct Range {
    header: Option<Header>,
    #[serde(default)]
    kvs: Vec<RawKey>,
}

/// The gateway writes int64 as a JSON string (proto3's JSON mapping); a number is read too.
fn number<'de, D: serde::Deserializer<'de>>(deserializer: D) -> Result<i64, D::Error> {
    match Value::deserialize(deserializer)? {
        Value::String(text) => text.parse().map_err(serde::de::Error::custom),
        Value::Number(number) => number
            .as_i64()
            .ok_or_else(|| serde::de::Error::custom("not a 64-bit integer")),
        Value::Null => Ok(0),
        other => Err(serde::de::Error::custom(format!("not a number: {other}"))),
    }
}

fn encode(bytes: &[u8]) -> String {
    BASE64.encode(bytes)
}

/// The end of the range of every key starting with `prefix` (etcd's `--prefix`).
fn prefix_end(prefix: &[u8]) -> Vec<u8> {
    let mut end = prefix.to_vec();
    while let Some(last) = end.pop() {
        if last < 0xff {
            end.push(last + 1);
            return end;
        }
    }
    // Every byte 0xff (or empty): to the end of the keyspace.
    vec![0]
}

impl EtcdClient {
    /// `endpoints` are `http://HOST:PORT` URLs; nothing is contacted until the first call.
    pub fn new(endpoints: Vec<String>, timeout: Duration) -> Result<Self, EtcdError> {
        if endpoints.is_empty() {
            return Err(EtcdError::NoEndpoint);
        }
        // reqwest is built without a default provider: the one every client of this crate uses.
        crate::tls::install_crypto_provider();
        let http = reqwest::Client::builder()
            .connect_timeout(timeout)
            .timeout(timeout)
            .build()
            .map_err(EtcdError::Unavailable)?;
        Ok(Self {
            endpoints: endpoints
                .into_iter()
                .map(|url| url.trim_end_matches('/').to_owned())
                .collect(),
            http,
            timeout,
        })
    }

    /// Calls `path` on the first endpoint that answers. A refusal by etcd is not retried
    /// elsewhere: every member would say the same.
    async fn call(&self, call: &'static str, path: &str, body: Value) -> Result<Value, EtcdError> {
        let mut last = None;
        for endpoint in &self.endpoints {
            let sent = self
                .http
                .post(format!("{endpoint}{path}"))
                .json(&body)
                .send();
            let response = match tokio::time::timeout(self.timeout, sent).await {
                Err(_) => {
                    last = Some(EtcdError::Timeout(self.timeout));
                    continue;
                }
                Ok(Err(error)) if error.is_timeout() => {
                    last = Some(EtcdError::Timeout(self.timeout));
                    continue;
                }
                Ok(Err(error)) => {
                    last = Some(EtcdError::Unavailable(error));
                    continue;
                }
                Ok(Ok(response)) => response,
            };
            let status = response.status();
            let read = tokio::time::timeout(self.timeout, response.json::<Value>()).await;
            let value = match read {
                Err(_) => return Err(EtcdError::Timeout(self.timeout)),
                Ok(Err(error)) => {
                    return Err(EtcdError::Unreadable {
                        call,
                        reason: error.to_string(),
                    })
                }
                Ok(Ok(value)) => value,
            };
            if let Some(message) = value.get("error").or_else(|| value.get("message")) {
                return Err(EtcdError::Refused {
                    call,
                    message: message.as_str().unwrap_or_default().to_owned(),
                });
            }
            if !status.is_success() {
                return Err(EtcdError::Refused {
                    call,
                    message: format!("HTTP {status}"),
                });
            }
            return Ok(value);
        }
        Err(last.unwrap_or(EtcdError::NoEndpoint))
    }

    fn read<T: for<'de> Deserialize<'de>>(
        call: &'static str,
        value: Value,
    ) -> Result<T, EtcdError> {
        serde_json::from_value(value).map_err(|error| EtcdError::Unreadable {
            call,
            reason: error.to_string(),
        })
    }

    fn key_of(call: &'static str, raw: &RawKey) -> Result<String, EtcdError> {
        let bytes = BASE64
            .decode(&raw.key)
            .map_err(|error| EtcdError::Unreadable {
                call,
                reason: error.to_string(),
            })?;
        Ok(String::from_utf8_lossy(&bytes).into_owned())
    }

    /// The key under `prefix` with the lowest create revision, and the cluster's revision.
    pub async fn first_created(&self, prefix: &str) -> Result<(Option<EtcdKey>, i64), EtcdError> {
        let body = json!({
            "key": encode(prefix.as_bytes()),
            "range_end": encode(&prefix_end(prefix.as_bytes())),
            "sort_target": "CREATE",
            "sort_order": "ASCEND",
            "limit": 1,
            "keys_only": true,
        });
        let range: Range = Self::read("range", self.call("range", "/v3/kv/range", body).await?)?;
        let revision = range
            .header
            .map(|header| header.revision)
            .ok_or(EtcdError::Unreadable {
                call: "range",
                reason: "no header".to_owned(),
            })?;
        let first = match range.kvs.first() {
            Some(raw) => Some(EtcdKey {
                key: Self::key_of("range", raw)?,
                create_revision: raw.create_revision,
                lease: raw.lease,
            }),
            None => None,
        };
        Ok((first, revision))
    }

    /// One key, when it exists.
    pub async fn get(&self, key: &str) -> Result<Option<EtcdKey>, EtcdError> {
        let body = json!({ "key": encode(key.as_bytes()), "keys_only": true });
        let range: Range = Self::read("get", self.call("get", "/v3/kv/range", body).await?)?;
        match range.kvs.first() {
            Some(raw) => Ok(Some(EtcdKey {
                key: Self::key_of("get", raw)?,
                create_revision: raw.create_revision,
                lease: raw.lease,
            })),
            None => Ok(None),
        }
    }

    /// Writes `key` (attached to `lease` unless 0); returns the cluster's revision after it.
    pub async fn put(&self, key: &str, value: &[u8], lease: i64) -> Result<i64, EtcdError> {
        let mut body = json!({ "key": encode(key.as_bytes()), "value": encode(value) });
        if lease != 0 {
            body["lease"] = json!(lease.to_string());
        }
        let value: Value = self.call("put", "/v3/kv/put", body).await?;
        let header: Header = Self::read("put", value.get("header").cloned().unwrap_or_default())?;
        Ok(header.revision)
    }

    /// Deletes `key`.
    pub async fn delete(&self, key: &str) -> Result<(), EtcdError> {
        let body = json!({ "key": encode(key.as_bytes()) });
        self.call("delete", "/v3/kv/deleterange", body)
            .await
            .map(|_| ())
    }

    /// A lease of `ttl_s` seconds; returns its id.
    pub async fn grant(&self, ttl_s: i64) -> Result<i64, EtcdError> {
        #[derive(Deserialize)]
        struct Granted {
            #[serde(rename = "ID", deserialize_with = "number")]
            id: i64,
        }
        let body = json!({ "TTL": ttl_s.to_string() });
        let granted: Granted = Self::read(
            "lease grant",
            self.call("lease grant", "/v3/lease/grant", body).await?,
        )?;
        Ok(granted.id)
    }

    /// Renews `lease` once; `false` when it has already expired.
    pub async fn keep_alive(&self, lease: i64) -> Result<bool, EtcdError> {
        let body = json!({ "ID": lease.to_string() });
        let value = self
            .call("lease keepalive", "/v3/lease/keepalive", body)
            .await?;
        // The gateway streams: one `{"result": {…, "TTL": "N"}}`; a TTL of 0 (or none) means gone.
        let ttl = value
            .get("result")
            .and_then(|result| result.get("TTL"))
            .and_then(|ttl| match ttl {
                Value::String(text) => text.parse::<i64>().ok(),
                Value::Number(number) => number.as_i64(),
                _ => None,
            })
            .unwrap_or(0);
        Ok(ttl > 0)
    }

    pub async fn revoke(&self, lease: i64) -> Result<(), EtcdError> {
        let body = json!({ "ID": lease.to_string() });
        self.call("lease revoke", "/v3/lease/revoke", body)
            .await
            .map(|_| ())
    }

    /// etcd's lock API (`etcdctl lock NAME`): waits until the lock is held under `lease` and
    /// returns the holder's key, `NAME/<lease id>`. Waits at most the client's timeout.
    pub async fn lock(&self, name: &str, lease: i64) -> Result<String, EtcdError> {
        #[derive(Deserialize)]
        struct Locked {
            #[serde(default)]
            key: String,
        }
        let body = json!({ "name": encode(name.as_bytes()), "lease": lease.to_string() });
        let locked: Locked = Self::read("lock", self.call("lock", "/v3/lock/lock", body).await?)?;
        let bytes = BASE64
            .decode(&locked.key)
            .map_err(|error| EtcdError::Unreadable {
                call: "lock",
                reason: error.to_string(),
            })?;
        Ok(String::from_utf8_lossy(&bytes).into_owned())
    }

    pub async fn unlock(&self, key: &str) -> Result<(), EtcdError> {
        let body = json!({ "key": encode(key.as_bytes()) });
        self.call("unlock", "/v3/lock/unlock", body)
            .await
            .map(|_| ())
    }

    /// Whether a member answers (`/readyz`).
    pub async fn status(&self) -> Result<(), EtcdError> {
        self.call("status", "/v3/maintenance/status", json!({}))
            .await
            .map(|_| ())
    }
}

/// The daemon's etcd authority.
pub(super) struct Etcd {
    client: EtcdClient,
}

impl Etcd {
    pub(super) fn new(endpoints: Vec<String>, timeout: Duration) -> Result<Self, AuthorityError> {
        Ok(Self {
            client: EtcdClient::new(endpoints, timeout).map_err(AuthorityError::Etcd)?,
        })
    }

    /// The key under `PREFIX/` with the lowest create revision is the holder. etcd's reads
    /// are linearizable by default: no member behind the leader vouches for an old holder.
    pub(super) async fn observe(
        &self,
        lock: &ExternalLock,
    ) -> Result<LockObservation, AuthorityError> {
        let (first, revision) = self
            .client
            .first_created(&lock.key_prefix())
            .await
            .map_err(AuthorityError::Etcd)?;
        Ok(LockObservation {
            holder: first.map(|key| LockHolder {
                key: key.key,
                generation: key.create_revision,
                name: None,
            }),
            revision,
        })
    }

    pub(super) async fn status(&self) -> Result<(), AuthorityError> {
        self.client.status().await.map_err(AuthorityError::Etcd)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prefix_ends() {
        assert_eq!(prefix_end(b"jobs/"), b"jobs0".to_vec());
        assert_eq!(prefix_end(b"a\xff"), b"b".to_vec());
        assert_eq!(prefix_end(b"\xff\xff"), vec![0]);
    }

    #[test]
    fn numbers_as_the_gateway_writes_them() {
        let range: Range = serde_json::from_value(json!({
            "header": {"revision": "12"},
            "kvs": [{"key": "am9icy8x", "create_revision": "7", "lease": "5"}]
        }))
        .unwrap();
        assert_eq!(range.header.unwrap().revision, 12);
        assert_eq!(range.kvs[0].create_revision, 7);
        assert_eq!(
            EtcdClient::key_of("range", &range.kvs[0]).unwrap(),
            "jobs/1"
        );
        let empty: Range = serde_json::from_value(json!({"header": {"revision": "3"}})).unwrap();
        assert!(empty.kvs.is_empty());
        assert!(serde_json::from_value::<Range>(json!({"header": {"revision": "x"}})).is_err());
    }
}
