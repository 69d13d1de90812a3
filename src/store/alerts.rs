//! Alert state, written only by the elected evaluator and fenced by its lease token.

use super::batch::rows::to_json;
use super::error::corrupt;
use super::native::Native;
use super::native::{on_db, NativeRow};
use super::{Store, StoreError};
use crate::domain::alert::{AlertInstance, AlertState};
use crate::domain::Outcome;
use serde::Serialize;

/// An alert instance as stored.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoredAlert {
    pub rule: String,
    /// The watched database whose rows the instance counts (`serve --watch`); `""` for this
    /// daemon's own.
    pub source: String,
    /// `""` for a rule over all resources, else the resource.
    pub instance: String,
    pub alert: AlertInstance,
    /// The count that was compared with the threshold at the last change.
    pub value: i64,
    pub updated_at_us: i64,
}

const COLUMNS: &str =
    "rule, source, instance, state, since_us, fired_at_us, last_true_us, value, updated_at_us";

/// A change of one alert instance, from the state it was in.
#[derive(Debug, Clone)]
pub struct AlertChange {
    pub alert: StoredAlert,
    pub from: AlertState,
}

/// A row of `alert_states`, by column name.
#[derive(Serialize)]
struct AlertStateRow<'a> {
    rule: &'a str,
    source: &'a str,
    instance: &'a str,
    state: &'a str,
    since_us: i64,
    fired_at_us: Option<i64>,
    last_true_us: Option<i64>,
    value: i64,
    fence_token: i64,
    updated_at_us: i64,
}

impl<'a> AlertStateRow<'a> {
    fn new(alert: &'a StoredAlert, fence_token: i64) -> Self {
        Self {
            rule: &alert.rule,
            source: &alert.source,
            instance: &alert.instance,
            state: alert.alert.state.as_str(),
            since_us: alert.alert.since_us,
            fired_at_us: alert.alert.fired_at_us,
            last_true_us: alert.alert.last_true_us,
            value: alert.value,
            fence_token,
            updated_at_us: alert.updated_at_us,
        }
    }
}

/// A row of `alert_transitions`, by column name.
#[derive(Serialize)]
struct AlertTransitionRow<'a> {
    at_us: i64,
    rule: &'a str,
    source: &'a str,
    instance: &'a str,
    from_state: &'a str,
    to_state: &'a str,
    value: i64,
    fence_token: i64,
}

/// Only a row last written with a token no higher than the writer's changes.
macro_rules! fenced_upsert {
    () => {
        " ON CONFLICT (rule, source, instance) DO UPDATE SET state = excluded.state, \
         since_us = excluded.since_us, fired_at_us = excluded.fired_at_us, \
         last_true_us = excluded.last_true_us, value = excluded.value, \
         fence_token = excluded.fence_token, updated_at_us = excluded.updated_at_us \
         WHERE alert_states.fence_token <= excluded.fence_token"
    };
}

const SQLITE_PUT_STATES: &str = concat!(
    "INSERT INTO alert_states (rule, source, instance, state, since_us, fired_at_us, \
     last_true_us, value, fence_token, updated_at_us) \
     SELECT j.value ->> 'rule', j.value ->> 'source', j.value ->> 'instance', \
       j.value ->> 'state', \
       j.value ->> 'since_us', j.value ->> 'fired_at_us', j.value ->> 'last_true_us', \
       j.value ->> 'value', j.value ->> 'fence_token', j.value ->> 'updated_at_us' \
     FROM json_each($1) AS j WHERE true",
    fenced_upsert!()
);
const POSTGRES_PUT_STATES: &str = concat!(
    "INSERT INTO alert_states (rule, source, instance, state, since_us, fired_at_us, \
     last_true_us, value, fence_token, updated_at_us) \
     SELECT v.rule, v.source, v.instance, v.state, v.since_us, v.fired_at_us, v.last_true_us, v.value, \
       v.fence_token, v.updated_at_us \
     FROM jsonb_populate_recordset(NULL::alert_states, $1::jsonb) AS v",
    fenced_upsert!()
);
const SQLITE_RECORD_TRANSITIONS: &str = "INSERT INTO alert_transitions (at_us, rule, source, \
     instance, from_state, to_state, value, fence_token) \
     SELECT j.value ->> 'at_us', j.value ->> 'rule', j.value ->> 'source', j.value ->> 'instance', \
       j.value ->> 'from_state', j.value ->> 'to_state', j.value ->> 'value', \
       j.value ->> 'fence_token' \
     FROM json_each($1) AS j";
const POSTGRES_RECORD_TRANSITIONS: &str = "INSERT INTO alert_transitions (at_us, rule, \
     source, instance, from_state, to_state, value, fence_token) \
     SELECT v.at_us, v.rule, v.source, v.instance, v.from_state, v.to_state, v.value, v.fence_token \
     FROM jsonb_populate_recordset(NULL::alert_transitions, $1::jsonb) AS v";

impl Store {
    pub async fn alert_states(&self) -> Result<Vec<StoredAlert>, StoreError> {
        let sql = format!("SELECT {COLUMNS} FROM alert_states ORDER BY rule, source, instance");
        on_db!(self.reader(), pool => sqlx::query(&sql).fetch_all(pool).await?.iter().map(stored_alert).collect())
    }

    pub async fn alerts_changed_since(
        &self,
        since_us: i64,
    ) -> Result<Vec<StoredAlert>, StoreError> {
        let sql = format!(
            "SELECT {COLUMNS} FROM alert_states WHERE updated_at_us >= $1 ORDER BY updated_at_us"
        );
        on_db!(self.reader(), pool => sqlx::query(&sql)
            .bind(since_us).fetch_all(pool).await?.iter().map(stored_alert).collect())
    }

    /// Stores a changed alert (and its transition, if its state changed), fenced: see
    /// `put_alert_states`.
    pub async fn put_alert_state(
        &self,
        alert: &StoredAlert,
        from: AlertState,
        token: i64,
    ) -> Result<bool, StoreError> {
        let change = AlertChange {
            alert: alert.clone(),
            from,
        };
        self.put_alert_states(std::slice::from_ref(&change), token)
            .await
    }

    /// Stores one evaluation's changed alerts and the transitions among them in one
    /// transaction, fenced: nothing is written unless `token` is at least the token every row
    /// was last written with. Returns whether it was written; `false` means a newer evaluator
    /// has taken over. One commit for the evaluation, not one per instance: under a stale-owner
    /// spike every resource's instance changes on every evaluation (docs/performance.md).
    pub async fn put_alert_states(
        &self,
        changes: &[AlertChange],
        token: i64,
    ) -> Result<bool, StoreError> {
        if changes.is_empty() {
            return Ok(true);
        }
        let states: Vec<AlertStateRow<'_>> = changes
            .iter()
            .map(|change| AlertStateRow::new(&change.alert, token))
            .collect();
        let transitions: Vec<AlertTransitionRow<'_>> = changes
            .iter()
            .filter(|change| change.from != change.alert.alert.state)
            .map(|change| AlertTransitionRow {
                at_us: change.alert.updated_at_us,
                rule: &change.alert.rule,
                source: &change.alert.source,
                instance: &change.alert.instance,
                from_state: change.from.as_str(),
                to_state: change.alert.alert.state.as_str(),
                value: change.alert.value,
                fence_token: token,
            })
            .collect();
        let (put_states, record_transitions) = match self.writer() {
            Native::Sqlite(_) => (SQLITE_PUT_STATES, SQLITE_RECORD_TRANSITIONS),
            Native::Postgres(_) => (POSTGRES_PUT_STATES, POSTGRES_RECORD_TRANSITIONS),
        };
        let mut tx = self.writer().begin().await?;
        let written = on_db!(tx.conn(), conn => sqlx::query(put_states)
            .bind(to_json(&states)?).execute(conn).await?.rows_affected());
        if written != u64::try_from(states.len()).unwrap_or(u64::MAX) {
            tx.rollback().await?;
            return Ok(false);
        }
        if !transitions.is_empty() {
            on_db!(tx.conn(), conn => sqlx::query(record_transitions)
                .bind(to_json(&transitions)?).execute(conn).await?.rows_affected());
        }
        tx.commit().await?;
        Ok(true)
    }

    /// Rows with one of `outcomes` since `since_us`, counted per source and resource: this
    /// daemon's audit (source `""`) and the counts of watched databases' rows
    /// (`watched_counts`, by each row's second).
    pub async fn rejection_counts(
        &self,
        outcomes: &[Outcome],
        since_us: i64,
    ) -> Result<Vec<RejectionCount>, StoreError> {
        let placeholders: Vec<String> =
            (0..outcomes.len()).map(|i| format!("${}", i + 2)).collect();
        let named = if placeholders.is_empty() {
            "NULL".to_owned()
        } else {
            placeholders.join(", ")
        };
        // The outcome index holds only the rarer outcomes (migration 24): written out, the
        // condition lets the planner use it, which bound values alone do not.
        let rarer = match outcomes.contains(&Outcome::Accepted) {
            true => "",
            false => " AND outcome <> 'accepted'",
        };
        let sql = format!(
            "SELECT CAST('' AS TEXT) AS source, resource, COUNT(*) AS n FROM audit \
               WHERE at_us >= $1 AND outcome IN ({named}){rarer} GROUP BY resource \
             UNION ALL \
             SELECT source, resource, CAST(SUM(n) AS BIGINT) AS n FROM watched_counts \
               WHERE second_us >= $1 AND outcome IN ({named}) GROUP BY source, resource"
        );
        let rows: Vec<(String, String, i64)> = on_db!(self.reader(), pool => {
            let mut query = sqlx::query_as(&sql).bind(since_us);
            for outcome in outcomes {
                query = query.bind(outcome.as_str());
            }
            query.fetch_all(pool).await?
        });
        Ok(rows
            .into_iter()
            .map(|(source, resource, count)| RejectionCount {
                source,
                resource,
                count,
            })
            .collect())
    }
}

/// Rows of some outcomes in a window, for one resource of one source.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RejectionCount {
    /// `""`: this daemon's own audit.
    pub source: String,
    pub resource: String,
    pub count: i64,
}

fn stored_alert<R: NativeRow>(row: &R) -> Result<StoredAlert, StoreError> {
    let state: String = row.try_get("state")?;
    Ok(StoredAlert {
        rule: row.try_get("rule")?,
        source: row.try_get("source")?,
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
