//! `fencewatch demo --authority zookeeper`: the demo's story with ZooKeeper as the lock
//! service. Debian's ZooKeeper (its server jar, run with `java` from the PATH) is started on a
//! free loopback port in a temporary folder, the daemon with `--zookeeper` on it, and the
//! simulated workers take ZooKeeper locks (the lock recipe Curator and kazoo use) instead of
//! the daemon's leases, writing with `Fencing-Lease: zk:/RESOURCE` and their lock node's czxid.
//! A worker whose session ends during a pause keeps writing with its old czxid and is refused
//! as superseded once another holds the lock. Everything it started is stopped when it ends.

use super::locked::Worker;
use crate::cli::DemoArgs;
use crate::client::{DaemonClient, WriteRequest};
use anyhow::Context;
use std::process::Stdio;
use std::time::{Duration, Instant};
use tokio::process::{Child, Command};
use zookeeper_client as zk;

/// Why the ZooKeeper demo cannot run.
#[derive(Debug, thiserror::Error)]
pub enum DemoZooKeeperError {
    #[error(
        "demo --authority zookeeper needs ZooKeeper's server jar at {0} (Debian: zookeeper; \
         or set FENCEWATCH_ZOOKEEPER_JAR) and `java` on the PATH"
    )]
    NoZooKeeper(String, #[source] std::io::Error),
    #[error("the ZooKeeper it started did not answer within 60 s")]
    NotReady,
}

const PAUSE: Duration = Duration::from_secs(3);

pub async fn run(args: DemoArgs, color: bool) -> anyhow::Result<()> {
    let folder = tempfile::tempdir().context("failed to create a temporary folder")?;
    let (mut server, hosts) = start_zookeeper(folder.path()).await?;
    let outcome = run_with(&args, color, folder.path(), &hosts).await;
    let _ = server.kill().await;
    outcome
}

async fn run_with(
    args: &DemoArgs,
    color: bool,
    folder: &std::path::Path,
    hosts: &str,
) -> anyhow::Result<()> {
    let service = super::locked::LockService {
        authority: "zookeeper",
        locks: "ZooKeeper locks",
        tokens: "tokens are lock nodes' czxids, which every ZooKeeper transaction raises",
        serve_flag: "--zookeeper",
        endpoint: hosts,
    };
    super::locked::run_workers(args, color, folder, service, worker).await
}

fn jar() -> String {
    std::env::var("FENCEWATCH_ZOOKEEPER_JAR")
        .unwrap_or_else(|_| "/usr/share/java/zookeeper.jar".to_owned())
}

/// One standalone server with its data in `folder`, killed when the handle is dropped.
async fn start_zookeeper(folder: &std::path::Path) -> anyhow::Result<(Child, String)> {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .context("no free loopback port")?
        .local_addr()?
        .port();
    let config = folder.join("zoo.cfg");
    std::fs::write(
        &config,
        format!(
            "tickTime=500\ndataDir={}\nclientPort={port}\nclientPortAddress=127.0.0.1\n\
             admin.enableServer=false\nminSessionTimeout=1000\nmaxSessionTimeout=60000\n",
            folder.join("zookeeper").display()
        ),
    )
    .context("failed to write ZooKeeper's configuration")?;
    let jar = jar();
    if !std::path::Path::new(&jar).is_file() {
        return Err(DemoZooKeeperError::NoZooKeeper(
            jar,
            std::io::Error::from(std::io::ErrorKind::NotFound),
        )
        .into());
    }
    let child = Command::new("java")
        .args(["-Xmx256m", "-cp", &jar])
        .arg("org.apache.zookeeper.server.quorum.QuorumPeerMain")
        .arg(&config)
        .current_dir(folder)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .map_err(|error| DemoZooKeeperError::NoZooKeeper(jar.clone(), error))?;
    let hosts = format!("127.0.0.1:{port}");
    let started = Instant::now();
    while started.elapsed() < Duration::from_secs(60) {
        if let Ok(client) = connect(&hosts, Duration::from_secs(5)).await {
            if client.check_stat("/").await.is_ok() {
                return Ok((child, hosts));
            }
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    Err(DemoZooKeeperError::NotReady.into())
}

async fn connect(hosts: &str, session: Duration) -> anyhow::Result<zk::Client> {
    Ok(tokio::time::timeout(
        Duration::from_secs(2),
        zk::Client::connector()
            .with_session_timeout(session)
            .with_fail_eagerly()
            .connect(hosts),
    )
    .await??)
}

/// One simulated worker: takes a resource's lock in a session of its own, writes with its
/// node's czxid, and when its turn to pause comes, pauses: its session ends (as when a pause outlives the
/// session timeout), another takes the lock, and it resumes writing as if nothing happened,
/// which the daemon refuses.
async fn worker(worker: Worker) {
    let Worker {
        id,
        endpoint: hosts,
        daemon,
        resources,
        pauses,
        stop,
    } = worker;
    let owner = format!("worker-{id}");
    let mut turn = id;
    while !*stop.borrow() {
        let resource = &resources[turn % resources.len()];
        turn += 1;
        let Ok(client) = connect(&hosts, Duration::from_secs(2)).await else {
            tokio::time::sleep(Duration::from_millis(300)).await;
            continue;
        };
        let path = format!("/{resource}");
        let Some(token) = take(&client, &path, &owner).await else {
            continue;
        };
        let mut pause = false;
        for step in 0..10 {
            if *stop.borrow() {
                break;
            }
            if !write(&daemon, resource, token, &owner, step).await {
                break;
            }
            pause = step >= 2 && pauses.take(Instant::now());
            if pause {
                break;
            }
            tokio::time::sleep(Duration::from_millis(400)).await;
        }
        // Ending the session deletes the lock node: the next contender holds the lock.
        drop(client);
        if pause {
            tokio::time::sleep(PAUSE).await;
            for late in 0..3 {
                write(&daemon, resource, token, &owner, 100 + late).await;
            }
        }
        tokio::time::sleep(Duration::from_millis(300)).await;
    }
}

/// Takes the lock within 2 s (so that a worker queued behind others still notices `stop`);
/// returns its czxid.
async fn take(client: &zk::Client, path: &str, owner: &str) -> Option<i64> {
    let prefix = zk::LockPrefix::new_curator(path, "lock-").ok()?;
    let options = zk::LockOptions::new(zk::Acls::anyone_all())
        .with_ancestor_options(zk::CreateMode::Persistent.with_acls(zk::Acls::anyone_all()))
        .ok()?;
    let held = tokio::time::timeout(
        Duration::from_secs(2),
        client.lock(prefix, owner.as_bytes(), options),
    )
    .await
    .ok()?
    .ok()?;
    let node = held.lock_path().to_owned();
    // The node stays until the session ends.
    std::mem::forget(held);
    client.check_stat(&node).await.ok()?.map(|stat| stat.czxid)
}

/// One fenced write naming the resource's ZooKeeper lock; returns whether it was accepted.
async fn write(daemon: &DaemonClient, resource: &str, token: i64, owner: &str, step: u32) -> bool {
    let token_text = token.to_string();
    let idempotency_key = format!("{owner}-{token}-{step}");
    let lease = format!("zk:/{resource}");
    let request = WriteRequest {
        token: &token_text,
        idempotency_key: Some(&idempotency_key),
        lease: Some(&lease),
        owner: Some(owner),
        body: format!("total written by {owner} with czxid {token}, step {step}").into_bytes(),
        ..WriteRequest::default()
    };
    daemon
        .write(resource, request)
        .await
        .is_ok_and(|answer| answer.is_success())
}
