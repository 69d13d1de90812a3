//! A batch's run on PostgreSQL: on what this daemon knows where it can, else observed, decided
//! and applied in a transaction on one of the batch sessions, again while a concurrent commit
//! changed what it was decided on.

use super::dialect::Application;
use super::dialect::{Closing, Opening};
use super::postgres::{self, DecidedOn, Postgres};
use super::shared::ObservedLeases;
use super::{plan, Attempt, Decider, Segment, MAX_OBSERVATIONS};
use crate::domain::{FencedWrite, LeasePolicy};
use crate::store::engine::PostgresEngine;
use crate::store::tx::begin_audited_on;
use crate::store::StoreError;
use plan::chained::Chained;
use sqlx::PgConnection;
use std::collections::{BTreeSet, HashMap};
use std::sync::atomic::{AtomicU32, Ordering};

impl PostgresEngine {
    /// PostgreSQL: first, where it can, the batch decided on what this daemon knows and applied
    /// in one statement; then observed in a transaction, decided and applied. A resource found
    /// changed when the batch locks it means a concurrent batch committed after what the
    /// decision was made on; the batch is rolled back and decided again. The audit ids a
    /// rolled-back run drew will never be used, and are returned as such.
    pub(super) async fn try_apply_batch(
        &self,
        decider: &Decider<'_>,
        writes: &[FencedWrite],
        policy: LeasePolicy,
        observations: &AtomicU32,
    ) -> Result<Attempt, StoreError> {
        let sessions = self
            .batch_sessions
            .as_ref()
            .ok_or_else(|| crate::store::error::corrupt("a read-only store was asked to write"))?;
        let mut session = sessions.take().await?;
        let attempt = self
            .apply_on(&mut session, decider, writes, policy, observations)
            .await;
        session.finish(&attempt);
        attempt
    }

    async fn apply_on(
        &self,
        conn: &mut PgConnection,
        decider: &Decider<'_>,
        writes: &[FencedWrite],
        policy: LeasePolicy,
        observations: &AtomicU32,
    ) -> Result<Attempt, StoreError> {
        let mut dead_ids = Vec::new();
        match self
            .try_apply_known(conn, decider, writes, policy, observations)
            .await?
        {
            OnKnown::Applied(attempt) => return Ok(attempt),
            OnKnown::Changed { drawn_ids } => dead_ids = drawn_ids,
            OnKnown::NotKnown => {}
        }
        let dialect = Postgres { known: &self.known };
        let mut runs = 0;
        'run: loop {
            runs += 1;
            let seen = observations.fetch_add(1, Ordering::Relaxed) + 1;
            if runs > MAX_OBSERVATIONS {
                return Err(StoreError::Contention { attempts: seen });
            }
            let mut tx = begin_audited_on(conn).await?;
            let mut results = Vec::with_capacity(writes.len());
            for segment in plan::segments(writes) {
                let applied = decider
                    .apply_segment(
                        &dialect,
                        &mut *tx,
                        segment,
                        policy,
                        Opening::Within,
                        Closing::Within,
                    )
                    .await;
                match applied {
                    Ok(Segment::Applied {
                        results: mut applied,
                        ..
                    }) => results.append(&mut applied),
                    Ok(Segment::Changed { drawn_ids }) => {
                        tx.rollback().await?;
                        self.forget(writes);
                        dead_ids.extend(results.iter().map(|result| result.entry.id));
                        dead_ids.extend(drawn_ids);
                        continue 'run;
                    }
                    Err(error) => {
                        self.forget(writes);
                        return Err(error);
                    }
                }
            }
            if let Err(error) = tx.commit().await {
                self.forget(writes);
                return Err(error.into());
            }
            return Ok(Attempt {
                results,
                durability: None,
                dead_ids,
            });
        }
    }

    /// PostgreSQL: the batch decided on the state of its resources as this daemon's own commits
    /// left it, without reading it, and applied and committed by one statement that checks
    /// that state (`postgres`). Only for a batch of one segment (no operation repeated) that
    /// names no lease, since a lease is the authority's state, not the resource's.
    async fn try_apply_known(
        &self,
        conn: &mut PgConnection,
        decider: &Decider<'_>,
        writes: &[FencedWrite],
        policy: LeasePolicy,
        observations: &AtomicU32,
    ) -> Result<OnKnown, StoreError> {
        let eligible = writes
            .iter()
            .all(|write| write.lease.is_none() && write.authority.is_none())
            && plan::segments(writes).len() == 1;
        let keys: BTreeSet<&str> = writes.iter().map(|w| w.key.as_str()).collect();
        let known = match eligible {
            true => self.known.all_of(&keys),
            false => None,
        };
        let Some(known) = known else {
            return Ok(OnKnown::NotKnown);
        };
        observations.fetch_add(1, Ordering::Relaxed);
        let no_leases = ObservedLeases {
            records: HashMap::new(),
            now_us: 0,
        };
        let decided = plan::decide_in_order(
            writes,
            &keys,
            policy,
            &plan::Observations {
                resources: &known,
                operations: &HashMap::new(),
                leases: &no_leases,
            },
            &mut HashMap::new(),
            decider.clock,
        )?;
        decider.decided().await;
        let chained = Chained::new(&decided, &keys, &known, Vec::new())?;
        let plan = chained.plan(&decided, &known)?;
        // Known before the statement is sent, not after it commits: a batch formed meanwhile is
        // decided on this one's outcome, and its statement, waiting on this one's row locks,
        // finds exactly that once this one commits (or nothing as it knew, should this fail).
        self.known.remember(&plan.changes);
        let applied = postgres::apply(conn, &plan, DecidedOn::Known { writes }).await;
        match applied {
            Ok(Application::Applied { ids, .. }) => {
                let mut results = decided.into_results(ids);
                for result in &mut results {
                    result.decided_on_known_state = true;
                }
                Ok(OnKnown::Applied(Attempt {
                    results,
                    durability: None,
                    dead_ids: Vec::new(),
                }))
            }
            Ok(Application::Changed { drawn_ids }) => {
                self.forget(writes);
                Ok(OnKnown::Changed { drawn_ids })
            }
            Err(error) => {
                self.forget(writes);
                Err(error)
            }
        }
    }

    fn forget(&self, writes: &[FencedWrite]) {
        self.known.forget(writes.iter().map(|w| w.key.as_str()));
    }
}

/// What became of a batch decided on what this daemon knows.
enum OnKnown {
    Applied(Attempt),
    /// Something was not as known: nothing was applied, and the ids drawn are dead.
    Changed {
        drawn_ids: Vec<i64>,
    },
    /// Not all of its resources are known, or it is not a batch for that path.
    NotKnown,
}
