//! What the daemon sends and its clients read: one set of serde types for both sides.

pub mod events;
pub mod leases;
pub mod monitoring;
mod per_outcome;
pub mod problem;
mod rates;
pub mod reset;
