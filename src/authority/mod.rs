//! Reading locks of external authorities (`serve --etcd`, `serve --zookeeper`), for writes that
//! name one as their `Fencing-Lease`. The read happens before the write's transaction (the lock
//! service is not part of it); the rules are `domain::authority`'s, the same for every service.
//!
//! One module per service, each with `observe` (who holds a lock now, and the service's counter)
//! and `status` (`/readyz`); `Service` dispatches to them. docs/architecture.md, "External
//! authorities", says how to add one.

pub mod etcd;
pub mod zookeeper;

use crate::domain::authority::{AuthorityKind, ExternalLock, LockObservation};
use std::collections::BTreeMap;
use std::time::Duration;

#[derive(Debug, thiserror::Error)]
pub enum AuthorityError {
    #[error("no {0} authority is configured (serve --{0})")]
    NotConfigured(&'static str),
    #[error("the lock service did not answer within {}", humantime::format_duration(*.0))]
    Timeout(Duration),
    #[error(transparent)]
    Etcd(etcd::EtcdError),
    #[error("ZooKeeper is unavailable: {0}")]
    ZooKeeper(#[source] zookeeper_client::Error),
    #[error("the lock's holder kept changing while it was read")]
    Unsettled,
    #[error("{0}")]
    BadEndpoint(String),
}

/// One configured lock service.
enum Service {
    Etcd(etcd::Etcd),
    ZooKeeper(zookeeper::ZooKeeper),
}

impl Service {
    async fn observe(&self, lock: &ExternalLock) -> Result<LockObservation, AuthorityError> {
        match self {
            Service::Etcd(etcd) => etcd.observe(lock).await,
            Service::ZooKeeper(zookeeper) => zookeeper.observe(lock).await,
        }
    }

    async fn status(&self) -> Result<(), AuthorityError> {
        match self {
            Service::Etcd(etcd) => etcd.status().await,
            Service::ZooKeeper(zookeeper) => zookeeper.status().await,
        }
    }
}

/// The external authorities a daemon is configured with, at most one per kind.
#[derive(Default)]
pub struct Authorities {
    services: BTreeMap<AuthorityKind, Service>,
}

impl Authorities {
    /// `endpoints` are `http://HOST:PORT` URLs; every etcd call is bounded by `timeout`.
    pub fn with_etcd(
        mut self,
        endpoints: Vec<String>,
        timeout: Duration,
    ) -> Result<Self, AuthorityError> {
        let etcd = etcd::Etcd::new(endpoints, timeout)?;
        self.services
            .insert(AuthorityKind::Etcd, Service::Etcd(etcd));
        Ok(self)
    }

    /// `cluster` are `HOST:PORT`s; every ZooKeeper call is bounded by `timeout`.
    pub fn with_zookeeper(
        mut self,
        cluster: Vec<String>,
        timeout: Duration,
    ) -> Result<Self, AuthorityError> {
        let zookeeper = zookeeper::ZooKeeper::new(cluster, timeout)?;
        self.services
            .insert(AuthorityKind::ZooKeeper, Service::ZooKeeper(zookeeper));
        Ok(self)
    }

    pub fn has(&self, kind: AuthorityKind) -> bool {
        self.services.contains_key(&kind)
    }

    pub fn configured(&self) -> bool {
        !self.services.is_empty()
    }

    pub async fn observe(&self, lock: &ExternalLock) -> Result<LockObservation, AuthorityError> {
        match self.services.get(&lock.kind) {
            Some(service) => service.observe(lock).await,
            None => Err(AuthorityError::NotConfigured(lock.kind.flag())),
        }
    }

    /// Whether every configured authority answers now (`/readyz`).
    pub async fn ready(&self) -> Result<(), AuthorityError> {
        for service in self.services.values() {
            service.status().await?;
        }
        Ok(())
    }

    /// Each configured authority and whether it answers now (for the daemon's start-up log).
    pub async fn each_ready(&self) -> Vec<(AuthorityKind, Result<(), AuthorityError>)> {
        let mut answers = Vec::new();
        for (kind, service) in &self.services {
            answers.push((*kind, service.status().await));
        }
        answers
    }
}
