use super::audit::{
    deserialize_optional_rfc3339, deserialize_rfc3339, serialize_optional_rfc3339_micros,
    serialize_rfc3339_micros,
};
use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

/// An ownership overlap: a stale generation still writing to a resource after a newer one was
/// accepted there (or issued by the lease it names). Grouped by resource and stale generation.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Overlap {
    pub id: i64,
    pub resource: String,
    /// The watched database it was seen in (`serve --watch`); `None` for this daemon's own.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source: Option<String>,
    pub stale_token: i64,
    pub superseding_token: i64,
    pub stale_owner: Option<String>,
    pub superseding_owner: Option<String>,
    #[serde(
        serialize_with = "serialize_rfc3339_micros",
        deserialize_with = "deserialize_rfc3339"
    )]
    pub first_seen: DateTime<Utc>,
    #[serde(
        serialize_with = "serialize_rfc3339_micros",
        deserialize_with = "deserialize_rfc3339"
    )]
    pub last_seen: DateTime<Utc>,
    pub rejected_writes: i64,
    /// `open`, or `closed` after a quiet period without rejected writes.
    pub state: OverlapState,
    #[serde(
        serialize_with = "serialize_optional_rfc3339_micros",
        deserialize_with = "deserialize_optional_rfc3339",
        default
    )]
    pub closed_at: Option<DateTime<Utc>>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum OverlapState {
    Open,
    Closed,
}

impl OverlapState {
    pub fn as_str(self) -> &'static str {
        match self {
            OverlapState::Open => "open",
            OverlapState::Closed => "closed",
        }
    }

    pub fn parse(text: &str) -> Option<Self> {
        match text {
            "open" => Some(OverlapState::Open),
            "closed" => Some(OverlapState::Closed),
            _ => None,
        }
    }
}
