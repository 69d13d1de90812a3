//! The same writes straight through the store, no HTTP: one transaction each (the baseline),
//! or through the group commit the daemon uses.

use super::tally::{finish, summarise, Tally};
use super::{BenchOptions, PathResult, Picks};
use crate::app::group_commit::GroupCommit;
use crate::domain::{FencedWrite, FencingToken, LeasePolicy, ResourceKey};
use crate::store::{Store, StoreOptions};
use anyhow::Context;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Instant;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum StorePath {
    OneTransactionPerWrite,
    GroupCommit,
}

/// The same writes through the store, no HTTP: one transaction each (the baseline), or through
/// the group commit the daemon uses.
pub(super) async fn run_store(
    url: &str,
    options: &BenchOptions,
    path: StorePath,
) -> anyhow::Result<PathResult> {
    let store = Store::open(
        url,
        &StoreOptions {
            max_connections: options.connections.max(1) as u32,
            ..StoreOptions::default()
        },
    )
    .await
    .context("failed to open the baseline database")?;
    let write = |resource: usize, token: i64, client: usize| -> anyhow::Result<FencedWrite> {
        Ok(FencedWrite::new(
            ResourceKey::parse(format!("bench/{resource}")).map_err(|e| anyhow::anyhow!(e.0))?,
            FencingToken::new(token).map_err(|e| anyhow::anyhow!(e.0))?,
            format!("value from client {client}"),
        ))
    };
    for resource in 0..options.resources {
        store
            .apply_write(&write(resource, 1000, 0)?, LeasePolicy::default())
            .await?;
    }
    let commits = GroupCommit::start(
        store.clone(),
        LeasePolicy::default(),
        crate::store::DEFAULT_DB_TIMEOUT,
        None,
    );
    let stop = Arc::new(AtomicBool::new(false));
    let started = Instant::now();
    let mut tasks = Vec::new();
    for client in 0..options.connections {
        let store = store.clone();
        let commits = commits.clone();
        let stop = stop.clone();
        let options = options.clone();
        let writes: Vec<FencedWrite> = (0..options.resources)
            .flat_map(|r| [write(r, 1000, client), write(r, 999, client)])
            .collect::<Result<_, _>>()?;
        let mut tally = Tally::new()?;
        tasks.push(tokio::spawn(async move {
            let mut picks = Picks::seeded(client as u64 + 7);
            while !stop.load(Ordering::Relaxed) {
                let resource = picks.resource(options.resources);
                let (_, stale) = picks.token(options.stale_fraction);
                let write = &writes[resource * 2 + usize::from(stale)];
                let began = Instant::now();
                let result = match path {
                    StorePath::OneTransactionPerWrite => {
                        store.apply_write(write, LeasePolicy::default()).await
                    }
                    StorePath::GroupCommit => commits.write(write.clone()).await,
                };
                match result {
                    Ok(result) => {
                        tally.record(began.elapsed(), result.entry.outcome.is_rejection())
                    }
                    Err(_) => tally.errors += 1,
                }
            }
            tally
        }));
    }
    let tallies = finish(tasks, &stop, options.duration).await?;
    drop(commits);
    store.close().await;
    summarise(
        match path {
            StorePath::OneTransactionPerWrite => "store, txn/write",
            StorePath::GroupCommit => "store, grouped",
        },
        options.connections,
        tallies,
        started.elapsed(),
    )
}
