//! Alert state, written only by the elected evaluator and fenced by its lease token.

use super::error::corrupt;
use super::{Store, StoreError};
use crate::domain::alert::{AlertInstance, AlertState};
use crate::domain::Outcome;
use sqlx::any::AnyRow;
use sqlx::Row;

/// An alert instance as stored.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoredAlert {
    pub rule: String,
    /// `""` for a rule over all resources, else the resource.
    pub instance: String,
    pub alert: AlertInstance,
    /// The count that was compared with the threshold at the last change.
    pub value: i64,
    pub updated_at_us: i64,
}

const COLUMNS: &str =
    "rule, instance, state, since_us, fired_at_us, last_true_us, value, updated_at_us";

impl Store {
    pub async fn alert_states(&self) -> Result<Vec<StoredAlert>, StoreError> {
        let sql = format!("SELECT {COLUMNS} FROM alert_states ORDER BY rule, instance");
        let rows = sqlx::query(&sql).fetch_all(&self.reader).await?;
        rows.iter().map(stored_alert).collect()
    }

    pub async fn alerts_changed_since(
        &self,
        since_us: i64,
    ) -> Result<Vec<StoredAlert>, StoreError> {
        let sql = format!(
            "SELECT {COLUMNS} FROM alert_states WHERE updated_at_us >= $1 ORDER BY updated_at_us"
        );
        let rows = sqlx::query(&sql)
            .bind(since_us)
            .fetch_all(&self.reader)
            .await?;
        rows.iter().map(stored_alert).collect()
    }

    /// Stores a changed alert (and its transition, if its state changed), fenced: nothing is written unless `token` is
    /// at least the token the row was last written with. Returns whether it was written; `false`
    /// means a newer evaluator has taken over.
    pub async fn put_alert_state(
        &self,
        alert: &StoredAlert,
        from: AlertState,
        token: i64,
    ) -> Result<bool, StoreError> {
        let mut tx = self.writer.begin().await?;
        let written = sqlx::query(
            "INSERT INTO alert_states (rule, instance, state, since_us, fired_at_us, last_true_us, \
             value, fence_token, updated_at_us) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9) \
             ON CONFLICT (rule, instance) DO UPDATE SET state = excluded.state, \
             since_us = excluded.since_us, fired_at_us = excluded.fired_at_us, \
             last_true_us = excluded.last_true_us, value = excluded.value, \
             fence_token = excluded.fence_token, updated_at_us = excluded.updated_at_us \
             WHERE alert_states.fence_token <= excluded.fence_token",
        )
        .bind(alert.rule.as_str())
        .bind(alert.instance.as_str())
        .bind(alert.alert.state.as_str())
        .bind(alert.alert.since_us)
        .bind(alert.alert.fired_at_us)
        .bind(alert.alert.last_true_us)
        .bind(alert.value)
        .bind(token)
        .bind(alert.updated_at_us)
        .execute(&mut *tx)
        .await?;
        if written.rows_affected() != 1 {
            return Ok(false);
        }
        if from == alert.alert.state {
            tx.commit().await?;
            return Ok(true);
        }
        sqlx::query(
            "INSERT INTO alert_transitions (at_us, rule, instance, from_state, to_state, value, fence_token) \
             VALUES ($1, $2, $3, $4, $5, $6, $7)",
        )
        .bind(alert.updated_at_us)
        .bind(alert.rule.as_str())
        .bind(alert.instance.as_str())
        .bind(from.as_str())
        .bind(alert.alert.state.as_str())
        .bind(alert.value)
        .bind(token)
        .execute(&mut *tx)
        .await?;
        tx.commit().await?;
        Ok(true)
    }

    /// Audit rows with one of `outcomes` since `since_us`, counted per resource.
    pub async fn rejection_counts(
        &self,
        outcomes: &[Outcome],
        since_us: i64,
    ) -> Result<Vec<(String, i64)>, StoreError> {
        let placeholders: Vec<String> =
            (0..outcomes.len()).map(|i| format!("${}", i + 2)).collect();
        let sql = format!(
            "SELECT resource, COUNT(*) AS n FROM audit WHERE at_us >= $1 AND outcome IN ({}) \
             GROUP BY resource",
            if placeholders.is_empty() {
                "NULL".to_owned()
            } else {
                placeholders.join(", ")
            }
        );
        let mut query = sqlx::query(&sql).bind(since_us);
        for outcome in outcomes {
            query = query.bind(outcome.as_str());
        }
        let rows = query.fetch_all(&self.reader).await?;
        rows.iter()
            .map(|row| Ok((row.try_get("resource")?, row.try_get("n")?)))
            .collect()
    }
}

fn stored_alert(row: &AnyRow) -> Result<StoredAlert, StoreError> {
    let state: String = row.try_get("state")?;
    Ok(StoredAlert {
        rule: row.try_get("rule")?,
        instance: row.try_get("instance")?,
        alert: AlertInstance {
            state: AlertState::parse(&state)
                .ok_or_else(|| corrupt(format!("unknown alert state {state:?}")))?,
            since_us: row.try_get("since_us")?,
            fired_at_us: row.try_get("fired_at_us")?,
            last_true_us: row.try_get("last_true_us")?,
        },
        value: row.try_get("value")?,
        updated_at_us: row.try_get("updated_at_us")?,
    })
}
