//! fencewatch: fencing tokens enforced at the resource, with an audit of every attempt.
//!
//! Read it as the pipeline (docs/architecture.md): `domain` is pure; `api` holds the wire types;
//! `app` owns the use cases over `store`; `live` follows what was committed; `http` and `client`
//! are the two ends of the wire; `tui` draws; `commands` composes them into what users run.

pub mod api;
pub mod app;
pub mod authority;
pub mod cli;
pub mod client;
pub mod commands;
pub mod domain;
pub mod http;
pub mod live;
pub mod metrics;
pub mod owndb;
pub mod redact;
pub mod store;
pub mod tls;
pub mod tui;

pub use commands::run;
