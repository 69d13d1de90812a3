//! A witnessed audit: checkpoints of every chain's start and head, signed with an Ed25519 key
//! and kept outside the database, so that someone who can rewrite the database cannot rewrite
//! what was signed (docs/guarantees.md). Pure: keys, the checkpoint format, and what a set of
//! checkpoints vouches for.

pub mod checkpoint;
pub mod keys;
pub mod trust;

pub use checkpoint::{start_message, ChainMark, Checkpoint, Link};
pub use keys::{GeneratedKey, PublicKey, SigningKey};
pub use trust::{Witnessed, WitnessedAudit};

#[derive(Debug, thiserror::Error)]
pub enum WitnessError {
    #[error("{0}")]
    Key(String),
    #[error("not a witness line: {0}")]
    Malformed(String),
    #[error("signed by another key ({signed_by})")]
    WrongKey { signed_by: String },
    #[error("its signature does not match its contents: the line was changed after it was signed")]
    BadSignature,
}
