//! ZooKeeper locks (kazoo's `Lock(path)`, Curator's `InterProcessMutex(path)`): the contenders
//! are ephemeral sequential children of the lock's znode, the holder is the one with the lowest
//! sequence number, and its generation is the child's czxid, which (unlike the sequence number)
//! never restarts when the lock's node is deleted and created again.

use super::AuthorityError;
use crate::domain::authority::{ExternalLock, LockHolder, LockObservation};
use std::time::Duration;
use tokio::sync::Mutex;
use zookeeper_client as zk;

/// How the daemon connects: the session outlives a slow answer, and a new one is made after
/// any failure (a server restarted on older data refuses a session that saw newer zxids).
const SESSION_TIMEOUT: Duration = Duration::from_secs(10);

/// The longest holder name kept from the lock node's data (kazoo's identifier, Curator's address).
const NAME_LIMIT: usize = 80;

/// The daemon's ZooKeeper authority.
pub(super) struct ZooKeeper {
    /// `HOST:PORT[,HOST:PORT…]`, ZooKeeper's connect string.
    cluster: String,
    timeout: Duration,
    client: Mutex<Option<zk::Client>>,
}

/// The sequence number a sequential node's name ends with: ZooKeeper appends ten digits.
pub fn sequence_of(child: &str) -> Option<i64> {
    let digits = child.get(child.len().checked_sub(10)?..)?;
    if !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    digits.parse().ok()
}

/// The readable name a lock client left in its node, if any.
fn holder_name(data: &[u8]) -> Option<String> {
    let text = std::str::from_utf8(data).ok()?.trim();
    if text.is_empty() || text.chars().any(char::is_control) {
        return None;
    }
    Some(text.chars().take(NAME_LIMIT).collect())
}

impl ZooKeeper {
    pub(super) fn new(cluster: Vec<String>, timeout: Duration) -> Result<Self, AuthorityError> {
        if cluster.is_empty() || cluster.iter().any(|host| host.trim().is_empty()) {
            return Err(AuthorityError::BadEndpoint(
                "--zookeeper needs HOST:PORT[,HOST:PORT…]".to_owned(),
            ));
        }
        Ok(Self {
            cluster: cluster.join(","),
            timeout,
            client: Mutex::new(None),
        })
    }

    async fn within<T>(
        &self,
        operation: impl std::future::Future<Output = Result<T, zk::Error>>,
    ) -> Result<T, AuthorityError> {
        match tokio::time::timeout(self.timeout, operation).await {
            Err(_) => Err(AuthorityError::Timeout(self.timeout)),
            Ok(result) => result.map_err(AuthorityError::ZooKeeper),
        }
    }

    async fn client(&self) -> Result<zk::Client, AuthorityError> {
        let mut slot = self.client.lock().await;
        if let Some(client) = slot.as_ref() {
            if !client.state().is_terminated() {
                return Ok(client.clone());
            }
        }
        let connector = zk::Client::connector()
            .with_session_timeout(SESSION_TIMEOUT)
            .with_connection_timeout(self.timeout)
            .with_fail_eagerly();
        let client = self.within(connector.connect(&self.cluster)).await?;
        *slot = Some(client.clone());
        Ok(client)
    }

    /// Forgets the session after a failure, so that the next read starts a new one.
    async fn forget(&self) {
        *self.client.lock().await = None;
    }

    pub(super) async fn observe(
        &self,
        lock: &ExternalLock,
    ) -> Result<LockObservation, AuthorityError> {
        let observed = self.read(lock).await;
        if observed.is_err() {
            self.forget().await;
        }
        observed
    }

    /// `sync` first, so that the server answering has applied every write the leader had
    /// committed: a lagging follower cannot vouch for a holder that was superseded.
    async fn read(&self, lock: &ExternalLock) -> Result<LockObservation, AuthorityError> {
        let client = self.client().await?;
        let path = lock.name();
        // A holder's node may go between listing and reading it: list again (bounded).
        for _ in 0..3 {
            self.within(client.sync(path)).await?;
            let (children, parent) = match self.within(client.get_children(path)).await {
                Err(AuthorityError::ZooKeeper(zk::Error::NoNode)) => {
                    return Ok(LockObservation {
                        holder: None,
                        revision: self.ancestor_revision(&client, path).await?,
                    })
                }
                other => other?,
            };
            let lowest = children
                .iter()
                .filter_map(|child| sequence_of(child).map(|sequence| (sequence, child)))
                .min();
            let Some((_, child)) = lowest else {
                return Ok(LockObservation {
                    holder: None,
                    revision: parent.pzxid,
                });
            };
            let key = format!("{}/{child}", path.trim_end_matches('/'));
            match self.within(client.get_data(&key)).await {
                Err(AuthorityError::ZooKeeper(zk::Error::NoNode)) => continue,
                Err(error) => return Err(error),
                Ok((data, stat)) => {
                    return Ok(LockObservation {
                        holder: Some(LockHolder {
                            key,
                            generation: stat.czxid,
                            name: holder_name(&data),
                        }),
                        revision: parent.pzxid.max(stat.czxid),
                    })
                }
            }
        }
        Err(AuthorityError::Unsettled)
    }

    /// The lock's node does not exist (never made, or a container node reaped when empty): the
    /// counter is the nearest ancestor's pzxid, which the node's deletion advanced past every
    /// czxid it ever had below it, and which a ZooKeeper on older data has not reached.
    async fn ancestor_revision(
        &self,
        client: &zk::Client,
        path: &str,
    ) -> Result<i64, AuthorityError> {
        let mut current = path.trim_end_matches('/');
        loop {
            let parent = match current.rfind('/') {
                Some(0) | None => "/",
                Some(at) => &current[..at],
            };
            if let Some(stat) = self.within(client.check_stat(parent)).await? {
                return Ok(stat.pzxid);
            }
            if parent == "/" {
                return Ok(0);
            }
            current = parent;
        }
    }

    pub(super) async fn status(&self) -> Result<(), AuthorityError> {
        let client = self.client().await?;
        let answered = self.within(client.check_stat("/")).await.map(|_| ());
        if answered.is_err() {
            self.forget().await;
        }
        answered
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sequences_of_the_usual_lock_clients() {
        // kazoo's Lock, Curator's InterProcessMutex, the Java recipe's WriteLock.
        assert_eq!(sequence_of("4f1c2b__lock__0000000003"), Some(3));
        assert_eq!(sequence_of("_c_2a9e-lock-0000000012"), Some(12));
        assert_eq!(sequence_of("x-72057594037927936-0000000001"), Some(1));
        assert_eq!(sequence_of("lock-2147483647"), Some(2_147_483_647));
        assert_eq!(sequence_of("lock-123"), None, "not ten digits");
        assert_eq!(sequence_of("not-a-contender"), None);
        assert_eq!(sequence_of(""), None);
    }

    #[test]
    fn holder_names() {
        assert_eq!(holder_name(b"worker-1"), Some("worker-1".to_owned()));
        assert_eq!(holder_name(b"  10.0.0.7 \n"), Some("10.0.0.7".to_owned()));
        assert_eq!(holder_name(b""), None);
        assert_eq!(holder_name(b"\xff\xfe"), None);
        assert_eq!(holder_name(b"a\x07b"), None);
        assert_eq!(holder_name(&[b'a'; 200]).map(|n| n.len()), Some(NAME_LIMIT));
    }
}
