//! The body of `POST /v1/resources/{key}/reset`.

use serde::{Deserialize, Serialize};

/// `highest_token` from 1 to 9223372036854775807; `reason` 1 to 512 characters, no control
/// characters (`domain::ResetReason`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ResetRequest {
    pub highest_token: i64,
    pub reason: String,
}
