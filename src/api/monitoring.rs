//! The answers of the monitoring reads. `GET /v1/stats` answers with the `stats` event's body
//! ([`StatsView`](super::events::StatsView)); these are the lists.

use super::events::AlertView;
use crate::domain::{AuditEntry, Overlap};
use serde::{Deserialize, Serialize};

/// `GET /v1/audit`: a page of rows, newest first.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AuditPage {
    pub entries: Vec<AuditEntry>,
}

/// `GET /v1/overlaps`: overlaps, newest first.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct OverlapList {
    pub overlaps: Vec<Overlap>,
}

/// `GET /v1/alerts`: every rule's alerts (a per-resource rule without an instance yet shows as
/// one inactive alert without a resource).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AlertList {
    pub alerts: Vec<AlertView>,
}
