//! The bodies of `POST /v1/leases/{name}/acquire|renew|release`.

use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AcquireRequest {
    pub holder: String,
    pub ttl_ms: i64,
}

/// Without `ttl_ms` the lease keeps the time to live it was granted with.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RenewRequest {
    pub holder: String,
    pub token: i64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ttl_ms: Option<i64>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ReleaseRequest {
    pub holder: String,
    pub token: i64,
}

/// A time to live as the API counts it, in whole milliseconds (saturating far past any
/// lease the daemon grants).
pub fn ttl_ms(ttl: std::time::Duration) -> i64 {
    i64::try_from(ttl.as_millis()).unwrap_or(i64::MAX)
}

/// A lease as the API shows it: `GET /v1/leases/{name}`, and the answer to a grant.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LeaseView {
    pub lease: String,
    pub holder: String,
    pub token: i64,
    pub expires_at: String,
    pub ttl_ms: i64,
    pub state: LeaseState,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum LeaseState {
    Held,
    Expired,
    Released,
}

/// One entry of a lease's history, as the daemon records it.
pub use crate::domain::lease_history::LeaseEvent as LeaseHistoryEvent;

/// `GET /v1/lease-history/{name}`: the lease's events, newest first.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LeaseHistory {
    pub lease: String,
    pub events: Vec<LeaseHistoryEvent>,
}
