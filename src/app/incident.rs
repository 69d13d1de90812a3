//! One incident's report, gathered from the store: the overlap, its generations' audit rows,
//! the grants behind them, and the condensed history of the incident's window.

use crate::domain::incident::{self, Evidence, Folding, IncidentReport};
use crate::domain::lease_history::LeaseEvent;
use crate::domain::prefix::covers_str;
use crate::domain::{AuditEntry, Overlap};
use crate::store::{AuditFilter, AuditWalk, Store, StoreError};
use chrono::{DateTime, Utc};

/// The report of overlap `id`, or `None` if there is no such overlap.
pub async fn report(
    store: &Store,
    id: i64,
    now: DateTime<Utc>,
) -> Result<Option<IncidentReport>, StoreError> {
    let Some(overlap) = store.overlap(id).await? else {
        return Ok(None);
    };
    let (mut report, lease) = facts(store, &overlap, now).await?;
    if overlap.source.is_some() {
        return Ok(Some(report));
    }
    let resource = overlap.resource.as_str();
    let (since, until) = incident::window(&report);
    let in_window = window_rows(store, resource, since, until).await?;
    let events = match &lease {
        Some(lease) => store
            .lease_history(
                std::slice::from_ref(lease),
                Some(since.timestamp_micros()),
                Some(until.timestamp_micros()),
            )
            .await?
            .into_iter()
            .filter_map(|e| typed(&e))
            .collect(),
        None => Vec::new(),
    };
    report.timeline = incident::condense(&in_window, &events, Folding::Alike);
    Ok(Some(report))
}

/// The facts of `overlap` without a timeline, with the lease that granted its stale
/// generation (if the history shows one).
pub async fn facts(
    store: &Store,
    overlap: &Overlap,
    now: DateTime<Utc>,
) -> Result<(IncidentReport, Option<String>), StoreError> {
    // A watched database's rows and leases are its own: the overlap's figures are all there is.
    if overlap.source.is_some() {
        let report = incident::facts(&Evidence {
            overlap,
            writes: &[],
            history: &[],
            now,
        });
        return Ok((report, None));
    }
    let resource = overlap.resource.as_str();
    let mut writes = store.generation_rows(resource, overlap.stale_token).await?;
    if let Some(first) = store
        .first_accepted(resource, overlap.superseding_token)
        .await?
    {
        writes.push(first);
    }
    let (lease, history) = grant_history(store, &writes, overlap).await?;
    let report = incident::facts(&Evidence {
        overlap,
        writes: &writes,
        history: &history,
        now,
    });
    Ok((report, lease))
}

/// The resource's rows between the two times, oldest first.
pub async fn window_rows(
    store: &Store,
    resource: &str,
    since: DateTime<Utc>,
    until: DateTime<Utc>,
) -> Result<Vec<AuditEntry>, StoreError> {
    let mut rows = Vec::new();
    store
        .each_audit_record(
            &AuditFilter {
                resource: Some(resource.to_owned()),
                since_us: Some(since.timestamp_micros()),
                until_us: Some(until.timestamp_micros()),
                ..AuditFilter::default()
            },
            AuditWalk::ALL,
            |r| {
                rows.push(r.entry.clone());
                Ok::<_, StoreError>(())
            },
        )
        .await?;
    Ok(rows)
}

/// The lease (or external lock) that granted the stale generation, with the history of the
/// generations from it to the successor's: the one the stale writes named, else one whose
/// scope covers the resource and that granted that generation.
async fn grant_history(
    store: &Store,
    writes: &[AuditEntry],
    overlap: &Overlap,
) -> Result<(Option<String>, Vec<LeaseEvent>), StoreError> {
    let mut candidates: Vec<String> = writes
        .iter()
        .filter(|w| w.token == Some(overlap.stale_token))
        .filter_map(|w| w.lease.clone())
        .collect();
    candidates.dedup();
    for name in store.lease_names().await? {
        if covers_str(&name, &overlap.resource) && !candidates.contains(&name) {
            candidates.push(name);
        }
    }
    for lease in candidates {
        let history = store
            .generation_history(&lease, overlap.stale_token, overlap.superseding_token)
            .await?;
        if history
            .iter()
            .any(|e| e.token == overlap.stale_token && e.event.begins_generation())
        {
            return Ok((Some(lease), history));
        }
    }
    Ok((None, Vec::new()))
}

/// A stored lease event in its typed form; one of an unknown kind is left out.
fn typed(event: &crate::store::StoredLeaseEvent) -> Option<LeaseEvent> {
    Some(LeaseEvent {
        id: event.id,
        at: event.at,
        event: crate::domain::lease_history::LeaseChange::parse(&event.event)?,
        holder: event.holder.clone(),
        token: event.token,
        expires_at: event.expires_at,
    })
}
