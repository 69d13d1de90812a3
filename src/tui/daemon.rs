//! The dashboard's side of the daemon client: the stream's updates as the model's messages,
//! and the timeline's pages read from the audit.

use super::model::timeline::{Anchor, Fetch, LeaseFetch, Page, LEASE_EVENTS, PAGE};
use super::model::Msg;
use super::Effects;
use crate::api::events::WriteEvent;
use crate::api::monitoring::AuditPage;
use crate::client::{AuditRequest, ClientError, DaemonClient, StreamUpdate};
use std::sync::Arc;
use tokio::sync::mpsc;

impl From<StreamUpdate> for Msg {
    fn from(update: StreamUpdate) -> Self {
        match update {
            StreamUpdate::Connected { replayed_from } => Msg::Connected { replayed_from },
            StreamUpdate::Attached(attach) => Msg::Attached(Box::new(attach)),
            StreamUpdate::Event(event) => Msg::Event(event),
            StreamUpdate::Disconnected {
                attempt,
                retry_in,
                error,
            } => Msg::Disconnected {
                attempt,
                retry_in,
                error,
            },
        }
    }
}

impl Effects for DaemonClient {
    fn fetch_timeline(&self, resource: String, fetch: Fetch, to_model: mpsc::Sender<Msg>) {
        let client = self.clone();
        tokio::spawn(async move {
            match timeline_page(&client, &resource, fetch).await {
                Ok(page) => {
                    let _ = to_model.send(Msg::Timeline { resource, page }).await;
                }
                Err(error) => tracing::debug!(%error, "cannot load the timeline"),
            }
        });
    }

    fn fetch_lease_history(
        &self,
        resource: String,
        fetch: LeaseFetch,
        to_model: mpsc::Sender<Msg>,
    ) {
        let client = self.clone();
        tokio::spawn(async move {
            match client
                .lease_history(&fetch.lease, fetch.until, LEASE_EVENTS)
                .await
            {
                Ok(history) => {
                    let events = history.events;
                    let _ = to_model
                        .send(Msg::LeaseHistory {
                            resource,
                            fetch,
                            events,
                        })
                        .await;
                }
                // A lease never acquired, or an etcd lock no write has seen held: no column.
                Err(error) => tracing::debug!(%error, "cannot load the lease's history"),
            }
        });
    }

    fn fetch_report(&self, id: i64, to_model: mpsc::Sender<Msg>) {
        let client = self.clone();
        tokio::spawn(async move {
            match client.incident_report(id).await {
                Ok(report) => {
                    let report = Box::new(report);
                    let _ = to_model.send(Msg::Report { id, report }).await;
                }
                // A daemon from before reports: the timeline without its header.
                Err(error) => tracing::debug!(%error, "cannot load the incident's report"),
            }
        });
    }
}

/// Rows of `resource`'s timeline, as the model asked.
async fn timeline_page(
    client: &DaemonClient,
    resource: &str,
    fetch: Fetch,
) -> Result<Page, ClientError> {
    let rows = |before: Option<i64>, after: Option<i64>, limit: u32| async move {
        let query = AuditRequest {
            resource: Some(resource),
            before,
            after,
            limit: Some(limit),
        };
        client.audit(query).await.map(oldest_first)
    };
    let full = |rows: &[Arc<WriteEvent>], limit: u32| rows.len() >= limit as usize;
    let page = |rows, fetch, at_start, at_end| Page {
        rows,
        fetch,
        at_start,
        at_end,
        focus: None,
    };
    match fetch {
        Fetch::Around(ref anchor) => {
            let (start, wanted) = match anchor {
                Anchor::Write { id } => (Some(*id), None),
                Anchor::Overlap {
                    first_seen,
                    stale_token,
                    ..
                } => (
                    client.first_at_or_after(resource, *first_seen).await?,
                    Some(*stale_token),
                ),
            };
            let Some(start) = start else {
                return Ok(page(Vec::new(), fetch, true, true));
            };
            let half = PAGE / 2;
            let mut older = rows(Some(start), None, half).await?;
            let newer = rows(None, Some(start - 1), PAGE).await?;
            // The overlap's first stale write: its generation refused, at or after `start`.
            let focus = newer
                .iter()
                .find(|r| {
                    wanted.is_none_or(|token| r.token == Some(token))
                        && (wanted.is_none() || r.outcome.is_rejection())
                })
                .map_or(start, |r| r.id);
            let (at_start, at_end) = (!full(&older, half), !full(&newer, PAGE));
            older.extend(newer);
            Ok(Page {
                focus: Some(focus),
                ..page(older, fetch, at_start, at_end)
            })
        }
        Fetch::Before(id) => {
            let rows = rows(Some(id), None, PAGE).await?;
            let at_start = !full(&rows, PAGE);
            Ok(page(rows, fetch, at_start, false))
        }
        Fetch::After(id) => {
            let rows = rows(None, Some(id), PAGE).await?;
            let at_end = !full(&rows, PAGE);
            Ok(page(rows, fetch, id == 0, at_end))
        }
        Fetch::Newest => {
            let rows = rows(None, None, PAGE).await?;
            let at_start = !full(&rows, PAGE);
            Ok(page(rows, fetch, at_start, true))
        }
    }
}

/// The audit's page, oldest first as the timeline shows it.
fn oldest_first(page: AuditPage) -> Vec<Arc<WriteEvent>> {
    page.entries.into_iter().rev().map(Arc::new).collect()
}
