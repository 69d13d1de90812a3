//! `fencewatch demo --authority etcd`: the demo's story with etcd as the lock service. An
//! `etcd` from the PATH is started on free loopback ports in a temporary folder, the daemon
//! with `--etcd` on it, and the simulated workers take etcd locks (etcd's lock API, as
//! `etcdctl lock` does) instead of the daemon's leases, writing with `Fencing-Lease:
//! etcd:RESOURCE` and their lock key's create revision. A worker that pauses past its etcd
//! lease is refused as superseded once another holds the lock. Everything it started is
//! stopped when it ends.

use crate::cli::DemoArgs;

/// Why the etcd demo cannot run.
#[derive(Debug, thiserror::Error)]
pub enum DemoEtcdError {
    #[error("demo --authority etcd needs an `etcd` program on the PATH (Debian: etcd-server)")]
    NoEtcd(#[source] std::io::Error),
    #[error("the etcd it started did not answer within 30 s")]
    EtcdNotReady,
}

pub use with_etcd::run;

mod with_etcd {
    use super::{DemoArgs, DemoEtcdError};
    use crate::authority::etcd::EtcdClient;
    use crate::client::{DaemonClient, WriteRequest};
    use crate::commands::demo::locked::Worker;
    use anyhow::Context;
    use std::process::Stdio;
    use std::time::{Duration, Instant};
    use tokio::process::{Child, Command};

    /// etcd grants leases of at least about 1.5 s (its election timeout), so the workers ask
    /// for 2 s and keep it alive; a pause of 3 s outlives it.
    const LEASE_TTL_S: i64 = 2;
    const PAUSE: Duration = Duration::from_secs(3);

    pub async fn run(args: DemoArgs, color: bool) -> anyhow::Result<()> {
        let folder = tempfile::tempdir().context("failed to create a temporary folder")?;
        let (mut etcd, url) = start_etcd(folder.path()).await?;
        let outcome = run_with(&args, color, folder.path(), &url).await;
        let _ = etcd.kill().await;
        outcome
    }

    async fn run_with(
        args: &DemoArgs,
        color: bool,
        folder: &std::path::Path,
        etcd: &str,
    ) -> anyhow::Result<()> {
        let service = crate::commands::demo::locked::LockService {
            authority: "etcd",
            locks: "etcd locks",
            tokens: "tokens are lock keys' create revisions, which every change in etcd raises",
            serve_flag: "--etcd",
            endpoint: etcd,
        };
        crate::commands::demo::locked::run_workers(args, color, folder, service, worker).await
    }

    fn free_port() -> anyhow::Result<u16> {
        let listener =
            std::net::TcpListener::bind("127.0.0.1:0").context("no free loopback port")?;
        Ok(listener.local_addr()?.port())
    }

    /// One etcd member with its data in `folder`, killed when the handle is dropped.
    async fn start_etcd(folder: &std::path::Path) -> anyhow::Result<(Child, String)> {
        let url = format!("http://127.0.0.1:{}", free_port()?);
        let peer = format!("http://127.0.0.1:{}", free_port()?);
        let child = Command::new("etcd")
            .arg("--data-dir")
            .arg(folder.join("etcd"))
            .args(["--name", "demo", "--initial-cluster"])
            .arg(format!("demo={peer}"))
            .args([
                "--listen-client-urls",
                &url,
                "--advertise-client-urls",
                &url,
            ])
            .args([
                "--listen-peer-urls",
                &peer,
                "--initial-advertise-peer-urls",
                &peer,
            ])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .kill_on_drop(true)
            .spawn()
            .map_err(DemoEtcdError::NoEtcd)?;
        let started = Instant::now();
        while started.elapsed() < Duration::from_secs(30) {
            if let Ok(client) = connect(&url) {
                if client.status().await.is_ok() {
                    return Ok((child, url));
                }
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        Err(DemoEtcdError::EtcdNotReady.into())
    }

    /// Calls wait at most 2 s: a worker queued behind others for a lock still notices `stop`.
    fn connect(url: &str) -> Result<EtcdClient, crate::authority::etcd::EtcdError> {
        EtcdClient::new(vec![url.to_owned()], Duration::from_secs(2))
    }

    /// One simulated worker: takes a resource's etcd lock, writes with its create revision,
    /// keeps its etcd lease alive, and when its turn to pause comes, pauses past it while
    /// another takes the lock, then resumes writing as if nothing happened, which the daemon
    /// refuses.
    async fn worker(worker: Worker) {
        let Worker {
            id,
            endpoint,
            daemon,
            resources,
            pauses,
            stop,
        } = worker;
        let Ok(etcd) = connect(&endpoint) else {
            tracing::error!("worker {id}: cannot reach etcd");
            return;
        };
        let owner = format!("worker-{id}");
        let mut turn = id;
        while !*stop.borrow() {
            let resource = &resources[turn % resources.len()];
            turn += 1;
            let Ok(lease) = etcd.grant(LEASE_TTL_S).await else {
                tokio::time::sleep(Duration::from_millis(150)).await;
                continue;
            };
            let Ok(key) = etcd.lock(resource, lease).await else {
                let _ = etcd.revoke(lease).await;
                continue;
            };
            let Ok(Some(token)) = etcd
                .get(&key)
                .await
                .map(|got| got.map(|k| k.create_revision))
            else {
                let _ = etcd.revoke(lease).await;
                continue;
            };
            for step in 0..10 {
                if *stop.borrow() {
                    break;
                }
                if !write(&daemon, resource, token, &owner, step).await {
                    break;
                }
                if step >= 2 && pauses.take(Instant::now()) {
                    // Paused past the etcd lease: the lock passes to another meanwhile.
                    tokio::time::sleep(PAUSE).await;
                    for late in 0..3 {
                        write(&daemon, resource, token, &owner, 100 + late).await;
                    }
                    break;
                }
                let _ = etcd.keep_alive(lease).await;
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
            // Revoking the lease deletes the lock key: the next contender holds the lock.
            let _ = etcd.revoke(lease).await;
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    /// One fenced write naming the resource's etcd lock; returns whether it was accepted.
    async fn write(
        daemon: &DaemonClient,
        resource: &str,
        token: i64,
        owner: &str,
        step: u32,
    ) -> bool {
        let token_text = token.to_string();
        let idempotency_key = format!("{owner}-{token}-{step}");
        let lease = format!("etcd:{resource}");
        let request = WriteRequest {
            token: &token_text,
            idempotency_key: Some(&idempotency_key),
            lease: Some(&lease),
            owner: Some(owner),
            body: format!("total written by {owner} with etcd generation {token}, step {step}")
                .into_bytes(),
            ..WriteRequest::default()
        };
        daemon
            .write(resource, request)
            .await
            .is_ok_and(|answer| answer.is_success())
    }
}
