//! `fencewatch lock etcd:PREFIX|zk:/PATH -- CMD`: takes the lock as the lock services' own
//! clients do (etcd's lock API under a lease, as `etcdctl lock`; ZooKeeper's lock recipe, as
//! Curator's `InterProcessMutex`), runs CMD with FENCEWATCH_TOKEN (the lock's generation) and
//! FENCEWATCH_LEASE (the lock's name) so that `fencewatch write` inside it needs no flags, keeps
//! the lock alive while CMD runs, releases it when CMD exits, and exits with CMD's code.

use crate::authority::etcd::EtcdClient;
use crate::cli::LockArgs;
use crate::domain::authority::{AuthorityKind, ExternalLock};
use crate::domain::LeaseName;
use anyhow::Context;
use std::process::ExitCode;
use std::time::Duration;
use tokio::process::Command;
use zookeeper_client as zk;

/// Why the lock was not taken; each has its exit code.
#[derive(Debug, thiserror::Error)]
pub enum LockError {
    #[error("{0}")]
    BadLock(String),
    #[error("the lock {lock} was not free within {}", humantime::format_duration(*.wait))]
    NotTaken { lock: String, wait: Duration },
}

impl LockError {
    fn code(&self) -> u8 {
        match self {
            LockError::BadLock(_) => 2,
            LockError::NotTaken { .. } => 6,
        }
    }
}

pub async fn run(args: LockArgs) -> anyhow::Result<ExitCode> {
    let lock = match parse(&args.lock) {
        Ok(lock) => lock,
        Err(error) => return refuse(&error),
    };
    let outcome = match lock.kind {
        AuthorityKind::Etcd => with_etcd(&args, &lock).await,
        AuthorityKind::ZooKeeper => with_zookeeper(&args, &lock).await,
    };
    match outcome {
        Err(error) => match error.downcast_ref::<LockError>() {
            Some(refused) => refuse(refused),
            None => Err(error),
        },
        Ok(code) => Ok(code),
    }
}

fn refuse(error: &LockError) -> anyhow::Result<ExitCode> {
    eprintln!("fencewatch lock: {error}");
    Ok(ExitCode::from(error.code()))
}

fn parse(text: &str) -> Result<ExternalLock, LockError> {
    let name = LeaseName::parse(text).map_err(|error| LockError::BadLock(error.to_string()))?;
    match ExternalLock::from_lease(&name) {
        None => Err(LockError::BadLock(format!(
            "{text:?} names no lock service: give etcd:PREFIX or zk:/PATH"
        ))),
        Some(parsed) => parsed.map_err(|error| LockError::BadLock(error.to_string())),
    }
}

/// Runs the command with the lock's token and name in its environment, and its exit code.
async fn run_command(args: &LockArgs, lock: &ExternalLock, token: i64) -> anyhow::Result<u8> {
    let (program, rest) = args
        .command
        .split_first()
        .context("no command to run under the lock")?;
    let mut command = Command::new(program);
    command
        .args(rest)
        .env("FENCEWATCH_TOKEN", token.to_string())
        .env("FENCEWATCH_LEASE", lock.lease_name());
    if let Some(name) = &args.name {
        command.env("FENCEWATCH_OWNER", name);
    }
    let status = command
        .status()
        .await
        .with_context(|| format!("failed to run {program}"))?;
    Ok(exit_code(status))
}

/// The child's code; killed by a signal, 128 + the signal, as a shell reports it.
fn exit_code(status: std::process::ExitStatus) -> u8 {
    use std::os::unix::process::ExitStatusExt;
    match (status.code(), status.signal()) {
        (Some(code), _) => u8::try_from(code).unwrap_or(1),
        (None, Some(signal)) => u8::try_from(128 + signal).unwrap_or(1),
        (None, None) => 1,
    }
}

async fn with_etcd(args: &LockArgs, lock: &ExternalLock) -> anyhow::Result<ExitCode> {
    let endpoints: Vec<String> = args
        .etcd
        .split(',')
        .map(|url| url.trim().to_owned())
        .collect();
    let calls = EtcdClient::new(endpoints.clone(), Duration::from_secs(10))?;
    let ttl = i64::try_from(args.ttl.as_secs().max(2)).unwrap_or(i64::MAX);
    let lease = calls
        .grant(ttl)
        .await
        .with_context(|| format!("etcd at {} refused a lease", args.etcd))?;
    // The lock call waits while another holds the lock: its own client, bounded by --wait; the
    // lease is kept alive meanwhile.
    let waiting = EtcdClient::new(endpoints, args.wait)?;
    let keeper = keep_alive(calls.clone(), lease, args.ttl);
    let key = match waiting.lock(lock.name(), lease).await {
        Ok(key) => key,
        Err(crate::authority::etcd::EtcdError::Timeout(_)) => {
            keeper.abort();
            let _ = calls.revoke(lease).await;
            return Err(LockError::NotTaken {
                lock: lock.lease_name(),
                wait: args.wait,
            }
            .into());
        }
        Err(error) => {
            keeper.abort();
            let _ = calls.revoke(lease).await;
            return Err(error).context("etcd refused the lock");
        }
    };
    let token = calls
        .get(&key)
        .await?
        .map(|got| got.create_revision)
        .with_context(|| format!("the lock's key {key} vanished before it was read"));
    let code = match token {
        Ok(token) => run_command(args, lock, token).await,
        Err(error) => Err(error),
    };
    keeper.abort();
    // Revoking the lease deletes the lock key: the next contender holds the lock.
    if let Err(error) = calls.revoke(lease).await {
        tracing::warn!(%error, %key, "failed to release the etcd lock; it lapses with its lease");
    }
    Ok(ExitCode::from(code?))
}

/// Renews the lease every third of its TTL until aborted.
fn keep_alive(client: EtcdClient, lease: i64, ttl: Duration) -> tokio::task::JoinHandle<()> {
    tokio::spawn(async move {
        let every = (ttl / 3).max(Duration::from_millis(500));
        loop {
            tokio::time::sleep(every).await;
            match client.keep_alive(lease).await {
                Ok(true) => {}
                Ok(false) => {
                    tracing::error!(lease, "the etcd lease expired: the lock is lost");
                    return;
                }
                Err(error) => tracing::warn!(%error, lease, "failed to renew the etcd lease"),
            }
        }
    })
}

async fn with_zookeeper(args: &LockArgs, lock: &ExternalLock) -> anyhow::Result<ExitCode> {
    let client = zk::Client::connector()
        .with_session_timeout(args.ttl)
        .connect(&args.zookeeper)
        .await
        .with_context(|| format!("cannot reach ZooKeeper at {}", args.zookeeper))?;
    let prefix = zk::LockPrefix::new_curator(lock.name(), "lock-")
        .map_err(|error| LockError::BadLock(format!("{}: {error}", lock.lease_name())))?;
    let options = zk::LockOptions::new(zk::Acls::anyone_all())
        .with_ancestor_options(zk::CreateMode::Persistent.with_acls(zk::Acls::anyone_all()))?;
    let data = args.name.clone().unwrap_or_default().into_bytes();
    let held = match tokio::time::timeout(args.wait, client.lock(prefix, &data, options)).await {
        Err(_) => {
            return Err(LockError::NotTaken {
                lock: lock.lease_name(),
                wait: args.wait,
            }
            .into())
        }
        Ok(held) => held.context("ZooKeeper refused the lock")?,
    };
    let node = held.lock_path().to_owned();
    let token = client
        .check_stat(&node)
        .await?
        .map(|stat| stat.czxid)
        .with_context(|| format!("the lock node {node} vanished before it was read"));
    let code = match token {
        Ok(token) => run_command(args, lock, token).await,
        Err(error) => Err(error),
    };
    // Deleting the node releases the lock before the session ends.
    if let Err(error) = client.delete(&node, None).await {
        tracing::warn!(%error, %node, "failed to delete the lock node; it goes with the session");
    }
    drop(held);
    Ok(ExitCode::from(code?))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lock_names() {
        assert_eq!(parse("etcd:jobs").unwrap().kind, AuthorityKind::Etcd);
        assert_eq!(
            parse("zk:/locks/jobs").unwrap().kind,
            AuthorityKind::ZooKeeper
        );
        assert!(matches!(parse("jobs"), Err(LockError::BadLock(_))));
        assert!(matches!(parse("zk:jobs"), Err(LockError::BadLock(_))));
        assert!(matches!(parse(""), Err(LockError::BadLock(_))));
    }
}
