//! The pure core: parsed values and the fence decision. Nothing here touches a database, a
//! socket or a terminal, so every rule can be tested in isolation and reused by each edge.

pub mod alert;
pub mod audit;
pub mod authority;
pub mod backoff;
pub mod chain;
pub mod clock;
pub mod duration;
pub mod fence;
pub mod fence_audit;
pub mod fence_overlaps;
pub mod idempotency;
pub mod incident;
pub mod incident_render;
pub mod key;
pub mod label;
pub mod lease;
pub mod lease_history;
pub mod lock_record;
pub mod outcome;
pub mod overlap;
pub mod prefix;
pub mod refusal;
pub mod reset;
pub mod revision;
pub mod source;
pub mod token;
pub mod witness;
pub mod write;
pub mod xids;

pub use audit::AuditEntry;
pub use fence::{decide, Applied, Decision, RecordedOperation, ResourceState, WriteIntent};
pub use idempotency::IdempotencyKey;
pub use key::ResourceKey;
pub use label::{LeaseName, OwnerLabel};
pub use lease::{Holder, LeaseCheck, LeaseRecord, LeaseScope, Ttl};
pub use outcome::Outcome;
pub use overlap::{Overlap, OverlapState};
pub use reset::{Reset, ResetDone, ResetReason};
pub use revision::Revision;
pub use token::FencingToken;
pub use write::{sha256_hex, FencedWrite, LeasePolicy, RefusedAttempt, WriteResult};
pub use xids::Xids;

/// Why a value from the outside world was refused. The message is shown to the caller as is.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct ParseError(pub String);

impl ParseError {
    pub(crate) fn new(message: impl Into<String>) -> Self {
        Self(message.into())
    }
}
