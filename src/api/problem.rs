//! What a client reads of an RFC 9457 problem (`application/problem+json`): its type, to
//! branch on, and its detail, to show. The daemon's side, with the extension members, is the
//! HTTP layer's `Problem`.

use serde::Deserialize;

#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
pub struct ProblemSummary {
    /// `stale-token`, `lease-held`, … (absent from an answer that is not a problem).
    #[serde(rename = "type", default)]
    pub kind: Option<String>,
    #[serde(default)]
    pub detail: Option<String>,
}

impl ProblemSummary {
    /// Reads a body as a problem; a body that is not one reads as an empty summary.
    pub fn read(body: &[u8]) -> Self {
        serde_json::from_slice(body).unwrap_or_default()
    }
}
