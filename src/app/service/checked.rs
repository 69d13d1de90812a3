//! Writes that name an external lock (`Fencing-Lease: etcd:PREFIX`): the lock read before the
//! write's transaction, checked against what was recorded, and what is still decided when the
//! lock service does not answer.

use super::FenceService;
use crate::authority::AuthorityError;
use crate::domain::authority::{self, Anomaly, AuthorityView, ExternalLock, Progress};
use crate::domain::{Decision, FencedWrite, WriteResult};
use crate::store::{RegressedLock, StoreError};

/// Why a write naming an external lock could not be decided.
#[derive(Debug, thiserror::Error)]
pub enum WriteError {
    #[error(transparent)]
    Store(#[from] StoreError),
    /// The write names an authority this daemon is not configured with (`400`).
    #[error("{0}")]
    NoAuthority(AuthorityError),
    /// The lock service did not answer in time: nothing is accepted unchecked (`503`).
    #[error("{lock} could not be checked: {source}")]
    AuthorityUnavailable {
        lock: String,
        source: AuthorityError,
    },
    /// The lock service answered below what was recorded (`503`, `AuthorityRegressed`).
    #[error(
        "{lock} went backwards: it answered with generation {observed}, but generation \
         {recorded} was seen holding it; a restored or replaced lock service is not obeyed"
    )]
    AuthorityRegressed {
        lock: String,
        recorded: i64,
        observed: i64,
    },
}
impl FenceService {
    /// The one door for fenced writes: when a write names an external lock, the lock is read
    /// first (within the database timeout) and judged in the write's transaction.
    pub async fn write(&self, write: &FencedWrite) -> Result<WriteResult, WriteError> {
        let lock = write
            .lease
            .as_ref()
            .and_then(ExternalLock::from_lease)
            .and_then(Result::ok);
        if let Some(lock) = lock {
            if !self.authorities.has(lock.kind) {
                return Err(WriteError::NoAuthority(AuthorityError::NotConfigured(
                    lock.kind.flag(),
                )));
            }
            // Read before asking the service: what was committed before the question is what a
            // healthy service's answer can never be below.
            let recorded = self.bounded(self.store.authority_floor(&lock)).await?;
            let observation = match self.authorities.observe(&lock).await {
                Ok(observation) => observation,
                Err(source) => return self.write_unchecked(write, lock, source).await,
            };
            let observed_at_us = self.store.clock().now_us();
            if let Progress::Regressed { recorded, observed } =
                authority::progress(recorded, &observation)
            {
                self.metrics
                    .authority_anomalies
                    .get_or_create(&crate::metrics::KindLabels {
                        kind: Anomaly::Regressed.as_str(),
                    })
                    .inc();
                tracing::error!(
                    lock = %lock.lease_name(),
                    recorded,
                    observed,
                    "the external lock service went backwards; its answers are refused"
                );
                if let Err(error) = self
                    .bounded(
                        self.store
                            .record_regression(&lock, RegressedLock { recorded, observed }),
                    )
                    .await
                {
                    tracing::warn!(%error, "failed to record the lock service's regression");
                }
                return Err(WriteError::AuthorityRegressed {
                    lock: lock.lease_name(),
                    recorded,
                    observed,
                });
            }
            // Only a write that names a lock is copied, to carry what etcd said.
            let mut checked = write.clone();
            checked.authority = Some(AuthorityView {
                lock,
                observation,
                observed_at_us,
            });
            return self.count_anomaly(self.commit(&checked).await?);
        }
        self.count_anomaly(self.commit(write).await?)
    }

    /// The lock service did not answer. Only what its answer could not change is decided: the
    /// replay of an operation recorded with this token and body, and under `--lease-scope
    /// prefix` a write outside the lock's resources (the batch's order: replay, then scope).
    /// Such a write goes to the batch without a view of the lock, where an `etcd:` lease, which
    /// this daemon never grants, can be replayed or refused but never accepted. Anything else,
    /// or a batch deciding otherwise than foreseen (the operation pruned meanwhile), is 503.
    async fn write_unchecked(
        &self,
        write: &FencedWrite,
        lock: ExternalLock,
        source: AuthorityError,
    ) -> Result<WriteResult, WriteError> {
        let unavailable = |source: AuthorityError| WriteError::AuthorityUnavailable {
            lock: lock.lease_name(),
            source,
        };
        let scope = self.limits.leases.scope;
        let out_of_scope = !lock.in_scope(scope, &write.key)
            && !write
                .lease
                .as_ref()
                .is_some_and(|lease| scope.allows(lease, &write.key));
        let replayable = match write.operation() {
            Some((resource, key)) => {
                self.bounded(self.store.would_replay(
                    resource,
                    key,
                    write.token.get(),
                    write.body_sha256(),
                ))
                .await?
            }
            None => false,
        };
        if write.authority.is_some() || !(replayable || out_of_scope) {
            return Err(unavailable(source));
        }
        let result = self.commit(write).await?;
        let foreseen = match &result.decision {
            Decision::Replay(_) => true,
            Decision::OutOfScope | Decision::IdempotencyKeyReuse { .. } => out_of_scope,
            _ => false,
        };
        if !foreseen {
            tracing::warn!(
                lock = %lock.lease_name(),
                outcome = result.entry.outcome.as_str(),
                "a write decided while its lock service was silent was not the replay foreseen"
            );
            return Err(unavailable(source));
        }
        self.count_anomaly(result)
    }

    fn count_anomaly(&self, result: WriteResult) -> Result<WriteResult, WriteError> {
        if let Some(anomaly) = result.anomaly {
            self.metrics
                .authority_anomalies
                .get_or_create(&crate::metrics::KindLabels {
                    kind: anomaly.as_str(),
                })
                .inc();
        }
        Ok(result)
    }
}
