//! `audit timeline`: one resource's writes and the history of its leases, interleaved, with who
//! held which generation when and any stale write that got through.

use super::time;
use crate::domain::Outcome;
use crate::store::{AuditFilter, AuditWalk, Store, StoredLeaseEvent};
use chrono::DateTime;
use serde::Serialize;
use serde_json::{json, Value};
use std::io::Write;
use std::process::ExitCode;

/// Which part of the resource's history to show.
pub(super) enum Window {
    /// An incident's window: from shortly before the stale owner's last activity to shortly
    /// after its last refusal.
    Around(i64),
    /// Between two times, in microseconds; either end open.
    Between(Option<i64>, Option<i64>),
    /// From the resource's `n`-th newest audit row on: a history of months is not read whole
    /// to show its end.
    Latest(u64),
}

pub(super) async fn run(
    store: &Store,
    resource: &str,
    window: Window,
    json: bool,
) -> anyhow::Result<ExitCode> {
    let (since_us, until_us) = match window {
        Window::Around(id) => {
            let incident = store
                .overlap(id)
                .await?
                .ok_or_else(|| anyhow::anyhow!("no incident {id}"))?;
            if incident.resource != resource {
                anyhow::bail!(
                    "incident {id} is of resource {:?}, not {resource:?}: \
                     use `audit timeline {:?} --around {id}`",
                    incident.resource,
                    incident.resource
                );
            }
            let (facts, _) =
                crate::app::incident::facts(store, &incident, chrono::Utc::now()).await?;
            let (since, until) = crate::domain::incident::window(&facts);
            (
                Some(since.timestamp_micros()),
                Some(until.timestamp_micros()),
            )
        }
        Window::Between(since_us, until_us) => (since_us, until_us),
        Window::Latest(n) => (store.nth_newest_at(resource, n).await?, None),
    };
    let timeline = timeline(store, resource, since_us, until_us).await?;
    let mut out = std::io::stdout().lock();
    if json {
        writeln!(out, "{}", serde_json::to_string(&timeline)?)?;
    } else {
        print_timeline(&mut out, &timeline)?;
    }
    Ok(ExitCode::SUCCESS)
}

/// Who held a lease's generation, from when until when.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Holding {
    pub lease: String,
    pub token: i64,
    pub holder: String,
    pub from: String,
    /// When the grant ended (released, expired as observed, or superseded); `None` if current.
    /// For an external lock's holder not seen superseded, when it was last seen holding.
    pub until: Option<String>,
    pub ended_by: Option<String>,
}

#[derive(Debug, Clone, Serialize)]
pub struct Timeline {
    pub resource: String,
    pub since: Option<String>,
    pub until: Option<String>,
    pub leases: Vec<String>,
    pub holders: Vec<Holding>,
    /// Writes and lease events interleaved in time order.
    pub entries: Vec<Value>,
    /// Accepted writes whose generation the lease authority had already superseded: the stale
    /// writes that got through (possible only without `Fencing-Lease`).
    pub accepted_while_superseded: Vec<i64>,
    /// Rejected attempts: audit id, outcome, token, operation, owner.
    pub rejected: Vec<Value>,
}

/// The resource's writes and the history of the leases that touch it, interleaved, with the
/// value's revision and hash before and after each accepted write.
pub async fn timeline(
    store: &Store,
    resource: &str,
    since_us: Option<i64>,
    until_us: Option<i64>,
) -> anyhow::Result<Timeline> {
    let mut records = Vec::new();
    // Only the window's rows are read: the value before its first write is the last one
    // accepted before it.
    store
        .each_audit_record(
            &AuditFilter {
                resource: Some(resource.to_owned()),
                since_us,
                until_us,
                ..AuditFilter::default()
            },
            AuditWalk::ALL,
            |r| {
                records.push(r.clone());
                Ok::<_, crate::store::StoreError>(())
            },
        )
        .await?;
    // Leases named by the writes, and leases whose scope covers the resource.
    let mut leases: Vec<String> = records
        .iter()
        .filter_map(|r| r.entry.lease.clone())
        .collect();
    for name in store.lease_names().await? {
        if crate::domain::prefix::covers_str(&name, resource) {
            leases.push(name);
        }
    }
    leases.sort();
    leases.dedup();
    let history = store.lease_history(&leases, None, None).await?;
    let holders = holdings(&history);

    let in_window = |us: i64| since_us.is_none_or(|s| us >= s) && until_us.is_none_or(|u| us <= u);
    let mut entries: Vec<(i64, i64, Value)> = Vec::new();
    let mut accepted_while_superseded = Vec::new();
    let mut rejected = Vec::new();
    let mut before: (i64, Option<String>) = match since_us {
        Some(since) => store
            .last_accepted_before(resource, since)
            .await?
            .map_or((0, None), |e| (e.revision, e.body_sha256)),
        None => (0, None),
    };
    for record in &records {
        let e = &record.entry;
        let at = e.at.timestamp_micros();
        let mut row = serde_json::to_value(record)?;
        row["kind"] = "write".into();
        if e.outcome == Outcome::Accepted {
            row["revision_before"] = before.0.into();
            row["value_sha256_before"] = before.1.clone().into();
            row["revision_after"] = e.revision.into();
            row["value_sha256_after"] = e.body_sha256.clone().into();
            // The newest generation any related lease had issued when this write landed.
            let current = history
                .iter()
                .filter(|ev| {
                    (ev.event == "acquired" || ev.event == "observed")
                        && ev.at <= e.at
                        && (e.lease.is_none() || e.lease.as_deref() == Some(ev.lease.as_str()))
                })
                .map(|ev| ev.token)
                .max();
            if let (Some(current), Some(token)) = (current, e.token) {
                row["lease_generation_at_write"] = current.into();
                if token < current {
                    accepted_while_superseded.push(e.id);
                }
            }
            before = (e.revision, e.body_sha256.clone());
        } else if e.outcome == Outcome::Reset {
            // An operator's reset of the fence: no attempt was refused, and its row says it.
        } else if in_window(at) {
            rejected.push(json!({
                "audit_id": e.id, "at": time(&e.at), "outcome": e.outcome.as_str(), "token": e.token,
                "highest_token": e.highest_token, "idempotency_key": e.idempotency_key, "owner": e.owner,
            }));
        }
        if in_window(at) {
            entries.push((at, 1, row));
        }
    }
    for event in &history {
        let at = event.at.timestamp_micros();
        if in_window(at) {
            let mut row = serde_json::to_value(event)?;
            row["kind"] = "lease".into();
            entries.push((at, 0, row));
        }
    }
    entries.sort_by_key(|(at, kind, row)| (*at, *kind, row["id"].as_i64()));
    let accepted_while_superseded: Vec<i64> = accepted_while_superseded
        .into_iter()
        .filter(|id| {
            records
                .iter()
                .any(|r| r.entry.id == *id && in_window(r.entry.at.timestamp_micros()))
        })
        .collect();
    let format = |us: Option<i64>| {
        us.and_then(DateTime::from_timestamp_micros)
            .map(|t| time(&t))
    };
    Ok(Timeline {
        resource: resource.to_owned(),
        since: format(since_us),
        until: format(until_us),
        leases,
        holders,
        entries: fold_renewals(entries.into_iter().map(|(_, _, row)| row)),
        accepted_while_superseded,
        rejected,
    })
}

/// Folds each run of one grant's renewals (writes between them included) into its first, with
/// `count` and `last_at` (the last renewal's time) and `expires_at` as the last one set it: a
/// holder renews several times a second, and one line each would bury the writes.
fn fold_renewals(entries: impl Iterator<Item = Value>) -> Vec<Value> {
    let mut out: Vec<Value> = Vec::new();
    for entry in entries {
        let renewal = entry["kind"] == "lease" && entry["event"] == "renewed";
        // Writes between two renewals do not break the run; another event of the lease does.
        let last_of_lease = out
            .iter_mut()
            .rev()
            .find(|line| line["kind"] == "lease" && line["lease"] == entry["lease"]);
        if let Some(last) = last_of_lease {
            if renewal && last["event"] == "renewed" && last["token"] == entry["token"] {
                let count = last["count"].as_u64().unwrap_or(1) + 1;
                last["count"] = count.into();
                last["last_at"] = entry["at"].clone();
                last["expires_at"] = entry["expires_at"].clone();
                continue;
            }
        }
        out.push(entry);
    }
    out
}

/// How a holding of an external lock ends that no later generation was seen to supersede.
const LAST_SEEN: &str = "last seen holding";

/// Turns a lease's events into who held which generation when.
pub fn holdings(events: &[StoredLeaseEvent]) -> Vec<Holding> {
    let mut holdings: Vec<Holding> = Vec::new();
    for event in events {
        match event.event.as_str() {
            // An external lock's holder as writes saw it: open until a later generation is
            // seen; the last one's end is the lock service's, so it only says when it was
            // last seen holding.
            kind @ ("acquired" | "observed") => {
                if let Some(open) = holdings.iter_mut().rev().find(|h| {
                    h.lease == event.lease
                        && h.token < event.token
                        && (h.until.is_none() || h.ended_by.as_deref() == Some(LAST_SEEN))
                }) {
                    open.until = Some(time(&event.at));
                    open.ended_by = Some(format!("superseded by generation {}", event.token));
                }
                let observed = kind == "observed";
                holdings.push(Holding {
                    lease: event.lease.clone(),
                    token: event.token,
                    holder: event.holder.clone(),
                    from: time(&event.at),
                    until: observed.then(|| time(&event.expires_at)),
                    ended_by: observed.then(|| LAST_SEEN.to_owned()),
                });
            }
            "released" | "expired" => {
                if let Some(open) = holdings
                    .iter_mut()
                    .rev()
                    .find(|h| h.lease == event.lease && h.token == event.token && h.until.is_none())
                {
                    let end = if event.event == "expired" {
                        event.expires_at
                    } else {
                        event.at
                    };
                    open.until = Some(time(&end));
                    open.ended_by = Some(event.event.clone());
                }
            }
            _ => {}
        }
    }
    holdings
}

fn print_timeline(out: &mut impl Write, timeline: &Timeline) -> std::io::Result<()> {
    writeln!(
        out,
        "timeline of {} ({} entries)",
        timeline.resource,
        timeline.entries.len()
    )?;
    for holding in &timeline.holders {
        writeln!(
            out,
            "  lease {} generation {} held by {} from {} until {}{}",
            holding.lease,
            holding.token,
            holding.holder,
            holding.from,
            holding.until.as_deref().unwrap_or("now"),
            holding
                .ended_by
                .as_ref()
                .map(|e| format!(" ({e})"))
                .unwrap_or_default()
        )?;
    }
    for entry in &timeline.entries {
        let text = |key: &str| match &entry[key] {
            Value::Null => "-".to_owned(),
            Value::String(s) => s.clone(),
            other => other.to_string(),
        };
        if entry["kind"] == "lease" {
            let event = match entry["count"].as_u64() {
                Some(count) => format!("{} ×{count}", text("event")),
                None => text("event"),
            };
            let until = match entry["last_at"].as_str() {
                Some(last) => format!(" (to {last})"),
                None => String::new(),
            };
            writeln!(
                out,
                "{}  LEASE {:<9} {} generation {} by {}{until}",
                text("at"),
                event,
                text("lease"),
                text("token"),
                text("holder")
            )?;
        } else if entry["outcome"] == "reset" {
            writeln!(
                out,
                "{}  RESET          highest set to {} by {}: {}",
                text("at"),
                text("highest_token"),
                text("owner"),
                text("detail")
            )?;
        } else if entry["outcome"] == "accepted" {
            writeln!(
                out,
                "{}  WRITE accepted  gen {} by {}: revision {} -> {}, value {} -> {}",
                text("at"),
                text("token"),
                text("owner"),
                text("revision_before"),
                text("revision_after"),
                short(&text("value_sha256_before")),
                short(&text("value_sha256_after"))
            )?;
        } else {
            writeln!(
                out,
                "{}  WRITE {:<9} gen {} by {} (highest {}): {}",
                text("at"),
                text("outcome"),
                text("token"),
                text("owner"),
                text("highest_token"),
                text("detail")
            )?;
        }
    }
    if timeline.accepted_while_superseded.is_empty() {
        writeln!(out, "no write of a superseded generation was accepted")?;
    } else {
        writeln!(
            out,
            "ACCEPTED WHILE SUPERSEDED: audit rows {:?}",
            timeline.accepted_while_superseded
        )?;
    }
    Ok(())
}

fn short(hash: &str) -> String {
    hash.get(..12).unwrap_or(hash).to_owned()
}
