//! Reading locks of external authorities (`serve --etcd`), for writes that name one as their
//! `Fencing-Lease`. The read happens before the write's transaction (the lock service is not
//! part of it); the rules are `domain::authority`'s.

#[cfg(feature = "etcd")]
use crate::domain::authority::LockHolder;
use crate::domain::authority::{AuthorityKind, ExternalLock, LockObservation};
#[cfg(feature = "etcd")]
use etcd_client::{Client, ConnectOptions, GetOptions, SortOrder, SortTarget};
use std::time::Duration;
#[cfg(feature = "etcd")]
use tokio::sync::Mutex;

#[derive(Debug, thiserror::Error)]
pub enum AuthorityError {
    #[error("no {0} authority is configured (serve --etcd)")]
    NotConfigured(&'static str),
    #[error("etcd did not answer within {}", humantime::format_duration(*.0))]
    Timeout(Duration),
    #[cfg(feature = "etcd")]
    #[error("etcd is unavailable: {0}")]
    Unavailable(#[from] etcd_client::Error),
    #[error("this fencewatch was built without the etcd authority: build it with --features etcd")]
    NotBuilt,
    #[error("etcd answered without a header")]
    NoHeader,
}

/// The external authorities a daemon is configured with. One variant per service, so that each
/// keeps its own client; ZooKeeper and Kubernetes Leases would be further fields.
#[derive(Default)]
pub struct Authorities {
    etcd: Option<Etcd>,
}

impl Authorities {
    pub fn with_etcd(endpoints: Vec<String>, timeout: Duration) -> Result<Self, AuthorityError> {
        #[cfg(feature = "etcd")]
        return Ok(Self {
            etcd: Some(Etcd {
                endpoints,
                timeout,
                client: Mutex::new(None),
            }),
        });
        #[cfg(not(feature = "etcd"))]
        {
            let _ = (endpoints, timeout);
            Err(AuthorityError::NotBuilt)
        }
    }

    pub fn has(&self, kind: AuthorityKind) -> bool {
        match kind {
            AuthorityKind::Etcd => self.etcd.is_some(),
        }
    }

    pub fn configured(&self) -> bool {
        self.etcd.is_some()
    }

    pub async fn observe(&self, lock: &ExternalLock) -> Result<LockObservation, AuthorityError> {
        match lock.kind {
            AuthorityKind::Etcd => match &self.etcd {
                Some(etcd) => etcd.observe(lock).await,
                None => Err(AuthorityError::NotConfigured("etcd")),
            },
        }
    }

    /// Whether every configured authority answers now (`/readyz`).
    pub async fn ready(&self) -> Result<(), AuthorityError> {
        if let Some(etcd) = &self.etcd {
            etcd.status().await?;
        }
        Ok(())
    }
}

#[cfg(not(feature = "etcd"))]
struct Etcd;

#[cfg(not(feature = "etcd"))]
impl Etcd {
    async fn observe(&self, _lock: &ExternalLock) -> Result<LockObservation, AuthorityError> {
        Err(AuthorityError::NotBuilt)
    }

    async fn status(&self) -> Result<(), AuthorityError> {
        Err(AuthorityError::NotBuilt)
    }
}

#[cfg(feature = "etcd")]
struct Etcd {
    endpoints: Vec<String>,
    /// For connecting and for each read: etcd not answering in time fails the write.
    timeout: Duration,
    /// Connected on first use, so that a daemon whose etcd is down still starts.
    client: Mutex<Option<Client>>,
}

#[cfg(feature = "etcd")]
impl Etcd {
    async fn client(&self) -> Result<Client, AuthorityError> {
        let mut slot = self.client.lock().await;
        if let Some(client) = slot.as_ref() {
            return Ok(client.clone());
        }
        let options = ConnectOptions::new()
            .with_connect_timeout(self.timeout)
            .with_timeout(self.timeout);
        let client = tokio::time::timeout(
            self.timeout,
            Client::connect(&self.endpoints, Some(options)),
        )
        .await
        .map_err(|_| AuthorityError::Timeout(self.timeout))??;
        *slot = Some(client.clone());
        Ok(client)
    }

    async fn within<T>(
        &self,
        operation: impl std::future::Future<Output = Result<T, etcd_client::Error>>,
    ) -> Result<T, AuthorityError> {
        Ok(tokio::time::timeout(self.timeout, operation)
            .await
            .map_err(|_| AuthorityError::Timeout(self.timeout))??)
    }

    /// The key under `PREFIX/` with the lowest create revision is the holder.
    async fn observe(&self, lock: &ExternalLock) -> Result<LockObservation, AuthorityError> {
        let mut kv = self.client().await?.kv_client();
        let options = GetOptions::new()
            .with_prefix()
            .with_sort(SortTarget::Create, SortOrder::Ascend)
            .with_limit(1);
        let response = self
            .within(kv.get(lock.key_prefix(), Some(options)))
            .await?;
        let revision = response
            .header()
            .map(|header| header.revision())
            .ok_or(AuthorityError::NoHeader)?;
        let holder = response.kvs().first().map(|kv| LockHolder {
            key: String::from_utf8_lossy(kv.key()).into_owned(),
            generation: kv.create_revision(),
        });
        Ok(LockObservation { holder, revision })
    }

    async fn status(&self) -> Result<(), AuthorityError> {
        let mut maintenance = self.client().await?.maintenance_client();
        self.within(maintenance.status()).await.map(|_| ())
    }
}
