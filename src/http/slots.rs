//! Connection slots under overload. `--max-connections` bounds the connections served at once;
//! beyond it a client waits in the kernel's backlog until one closes. Clients that hold a slot
//! without being served (a body that stalls or drips, a request's headers trickling, a
//! kept-alive connection left idle) would keep everyone else waiting until their own timeouts
//! end them (`--body-read-timeout`, `--header-timeout`: seconds). So, as Envoy's overload
//! manager shortens its timeouts under pressure: when every slot is taken and a new client is
//! waiting, the connection that has waited longest on its client, past a short grace, is cut to
//! make room. A connection serving a request (its handler at work, or its answer being sent) is
//! never cut.
//!
//! A connection's wait is counted from when it last began to wait on its client: when it opened,
//! when its last answer ended (idle, then the next request's headers), or when its current
//! request's handler was called (its body). Not from its last byte: a client dripping one body
//! byte at a time, each within the grace, would otherwise never look stalled and could hold
//! every slot until the body read timeout.
//!
//! On shutdown every connection not being served is cut at once (`cut_all_waiting`) instead of
//! being waited for up to its timeouts; requests being served finish.
//!
//! What a connection is doing is kept in its `Activity`: since when it has waited, how many
//! requests it is serving, and how many of those are waiting for body bytes. `Watched` (its
//! service), `WatchedBody` (a request's body) and `Served` (an answer's body) keep it up to
//! date.

use axum::body::{Body, Bytes};
use axum::extract::ConnectInfo;
use axum::Router;
use hyper::body::{Frame, Incoming, SizeHint};
use hyper_util::service::TowerToHyperService;
use std::collections::HashMap;
use std::convert::Infallible;
use std::future::Future;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::{Duration, Instant};
use tokio::sync::Notify;

/// The open connections, for finding one to cut when every slot is taken.
pub(super) struct Slots {
    epoch: Instant,
    grace: Duration,
    next_id: AtomicU64,
    open: Mutex<HashMap<u64, Arc<Activity>>>,
}

/// What one connection is doing.
pub(super) struct Activity {
    epoch: Instant,
    /// When it began to wait on its client: opened, its last answer ended, or its current
    /// request's handler was called. Milliseconds since `epoch`.
    waiting_since_ms: AtomicU64,
    /// Requests being served, from the handler's call to the answer's last byte.
    serving: AtomicUsize,
    /// Of those, the ones whose handler waits for body bytes.
    awaiting_body: AtomicUsize,
    cut: AtomicBool,
    cut_notice: Notify,
}

impl Activity {
    fn now_ms(&self) -> u64 {
        u64::try_from(self.epoch.elapsed().as_millis()).unwrap_or(u64::MAX)
    }

    /// Starts the wait on its client from now.
    fn start_waiting(&self) {
        self.waiting_since_ms
            .store(self.now_ms(), Ordering::Relaxed);
    }

    /// How long it has waited on its client, if it is not serving anything but waiting on it:
    /// idle, in a request's headers, in a TLS handshake, or in a body; bytes arriving meanwhile
    /// do not count as being served.
    fn waiting_for(&self, now_ms: u64) -> Option<u64> {
        if self.cut.load(Ordering::Relaxed) {
            return None;
        }
        let serving = self.serving.load(Ordering::Relaxed);
        let awaiting = self.awaiting_body.load(Ordering::Relaxed);
        (serving <= awaiting)
            .then(|| now_ms.saturating_sub(self.waiting_since_ms.load(Ordering::Relaxed)))
    }

    fn cut_now(&self) {
        self.cut.store(true, Ordering::Relaxed);
        self.cut_notice.notify_one();
    }

    /// Completes when the connection has been cut to make room.
    pub(super) async fn cut(&self) {
        self.cut_notice.notified().await;
    }
}

/// A connection's place among the open ones, given up when it ends.
pub(super) struct Registration {
    slots: Arc<Slots>,
    id: u64,
    pub(super) activity: Arc<Activity>,
}

impl Drop for Registration {
    fn drop(&mut self) {
        self.slots.lock().remove(&self.id);
    }
}

impl Slots {
    /// `grace`: how long a connection may wait on its client, without a byte, before it may be
    /// cut to make room.
    pub(super) fn new(grace: Duration) -> Arc<Self> {
        Arc::new(Self {
            epoch: Instant::now(),
            grace,
            next_id: AtomicU64::new(0),
            open: Mutex::new(HashMap::new()),
        })
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<u64, Arc<Activity>>> {
        self.open
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    pub(super) fn register(self: &Arc<Self>) -> Registration {
        let activity = Arc::new(Activity {
            epoch: self.epoch,
            waiting_since_ms: AtomicU64::new(0),
            serving: AtomicUsize::new(0),
            awaiting_body: AtomicUsize::new(0),
            cut: AtomicBool::new(false),
            cut_notice: Notify::new(),
        });
        activity.start_waiting();
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        self.lock().insert(id, activity.clone());
        Registration {
            slots: self.clone(),
            id,
            activity,
        }
    }

    /// Cuts the connection that has waited longest on its client, if one has waited past the
    /// grace and none cut before is still closing. Returns whether it cut one.
    pub(super) fn cut_longest_stalled(&self) -> bool {
        let open = self.lock();
        if open
            .values()
            .any(|activity| activity.cut.load(Ordering::Relaxed))
        {
            // One is already making room.
            return false;
        }
        let now_ms = u64::try_from(self.epoch.elapsed().as_millis()).unwrap_or(u64::MAX);
        let grace_ms = u64::try_from(self.grace.as_millis()).unwrap_or(u64::MAX);
        let longest = open
            .values()
            .filter_map(|activity| activity.waiting_for(now_ms).map(|wait| (wait, activity)))
            .filter(|(wait, _)| *wait >= grace_ms)
            .max_by_key(|(wait, _)| *wait);
        let Some((wait, activity)) = longest else {
            return false;
        };
        activity.cut_now();
        tracing::debug!(
            waiting_ms = wait,
            "every connection slot is taken: cut the connection that waited longest on its client"
        );
        true
    }

    /// Cuts every connection that is not serving a request (idle, in its headers or a
    /// handshake, or waiting for body bytes), whatever its wait: on shutdown. Returns how many.
    pub(super) fn cut_all_waiting(&self) -> usize {
        let open = self.lock();
        let now_ms = u64::try_from(self.epoch.elapsed().as_millis()).unwrap_or(u64::MAX);
        let mut cut = 0;
        for activity in open.values() {
            if activity.waiting_for(now_ms).is_some() {
                activity.cut_now();
                cut += 1;
            }
        }
        cut
    }
}

/// A request being served, from the handler's call until its answer's body is done or dropped.
struct Serving(Arc<Activity>);

impl Serving {
    fn start(activity: Arc<Activity>) -> Self {
        activity.serving.fetch_add(1, Ordering::Relaxed);
        // Should its handler wait for body bytes, that wait starts here.
        activity.start_waiting();
        Self(activity)
    }
}

impl Drop for Serving {
    fn drop(&mut self) {
        // Idle from now: its wait for the next request starts here.
        self.0.start_waiting();
        self.0.serving.fetch_sub(1, Ordering::Relaxed);
    }
}

/// The router as one connection's service: each request carries the client's address (as
/// axum's `ConnectInfo`), and what it is doing is noted in the connection's `Activity`.
#[derive(Clone)]
pub(super) struct Watched {
    app: TowerToHyperService<Router>,
    activity: Arc<Activity>,
    peer: SocketAddr,
}

impl Watched {
    pub(super) fn new(app: Router, activity: Arc<Activity>, peer: SocketAddr) -> Self {
        Self {
            app: TowerToHyperService::new(app),
            activity,
            peer,
        }
    }
}

impl hyper::service::Service<hyper::Request<Incoming>> for Watched {
    type Response = hyper::Response<Served>;
    type Error = Infallible;
    type Future = Pin<Box<dyn Future<Output = Result<Self::Response, Infallible>> + Send>>;

    fn call(&self, request: hyper::Request<Incoming>) -> Self::Future {
        let serving = Serving::start(self.activity.clone());
        let activity = self.activity.clone();
        let mut request = request.map(|inner| {
            Body::new(WatchedBody {
                inner,
                activity,
                waiting: false,
            })
        });
        request.extensions_mut().insert(ConnectInfo(self.peer));
        let answer = hyper::service::Service::call(&self.app, request);
        Box::pin(async move {
            let response = answer.await?;
            Ok(response.map(|inner| Served {
                inner,
                _serving: serving,
            }))
        })
    }
}

/// A request's body, noting while its handler waits for bytes.
struct WatchedBody {
    inner: Incoming,
    activity: Arc<Activity>,
    waiting: bool,
}

impl WatchedBody {
    fn set_waiting(&mut self, waiting: bool) {
        if self.waiting != waiting {
            self.waiting = waiting;
            if waiting {
                self.activity.awaiting_body.fetch_add(1, Ordering::Relaxed);
            } else {
                self.activity.awaiting_body.fetch_sub(1, Ordering::Relaxed);
            }
        }
    }
}

impl hyper::body::Body for WatchedBody {
    type Data = Bytes;
    type Error = hyper::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, hyper::Error>>> {
        let polled = Pin::new(&mut self.inner).poll_frame(cx);
        self.set_waiting(polled.is_pending());
        polled
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.inner.size_hint()
    }
}

impl Drop for WatchedBody {
    fn drop(&mut self) {
        self.set_waiting(false);
    }
}

/// An answer's body: its request is served until the last byte is sent or the body dropped.
pub(super) struct Served {
    inner: Body,
    _serving: Serving,
}

impl hyper::body::Body for Served {
    type Data = Bytes;
    type Error = axum::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, axum::Error>>> {
        Pin::new(&mut self.inner).poll_frame(cx)
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.inner.size_hint()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_a_connection_waiting_on_its_client_past_the_grace_is_cut() {
        let slots = Slots::new(Duration::ZERO);
        let idle = slots.register();
        let serving = slots.register();
        let in_body = slots.register();
        let _working = Serving::start(serving.activity.clone());
        let _reading = Serving::start(in_body.activity.clone());
        in_body
            .activity
            .awaiting_body
            .fetch_add(1, Ordering::Relaxed);
        std::thread::sleep(Duration::from_millis(5));
        // The idle one and the one waiting for its body are candidates; the one serving is not.
        assert!(slots.cut_longest_stalled());
        let cut: Vec<bool> = [&idle, &serving, &in_body]
            .iter()
            .map(|r| r.activity.cut.load(Ordering::Relaxed))
            .collect();
        assert!(!cut[1], "a connection serving a request is never cut");
        assert_eq!(cut.iter().filter(|c| **c).count(), 1);
        // While the cut one is still open, nobody else is cut.
        assert!(!slots.cut_longest_stalled());
        let (first, second) = if cut[0] {
            (idle, in_body)
        } else {
            (in_body, idle)
        };
        drop(first);
        assert!(slots.cut_longest_stalled());
        assert!(second.activity.cut.load(Ordering::Relaxed));
        drop(second);
        assert!(!slots.cut_longest_stalled(), "only a serving one is left");
    }

    /// Bytes arriving do not reset a connection's wait: a dripping body still waits from its
    /// request's start, and is cut before a connection that began waiting later.
    #[test]
    fn a_dripping_body_waits_from_its_request_start() {
        let slots = Slots::new(Duration::from_millis(20));
        let dripping = slots.register();
        let _request = Serving::start(dripping.activity.clone());
        dripping
            .activity
            .awaiting_body
            .fetch_add(1, Ordering::Relaxed);
        std::thread::sleep(Duration::from_millis(30));
        let idle = slots.register();
        // Its bytes keep arriving: nothing here moves its wait.
        std::thread::sleep(Duration::from_millis(30));
        assert!(slots.cut_longest_stalled());
        assert!(dripping.activity.cut.load(Ordering::Relaxed));
        assert!(!idle.activity.cut.load(Ordering::Relaxed));
    }

    #[test]
    fn on_shutdown_every_connection_not_serving_is_cut_at_once() {
        let slots = Slots::new(Duration::from_secs(60));
        let idle = slots.register();
        let serving = slots.register();
        let in_body = slots.register();
        let _working = Serving::start(serving.activity.clone());
        let _reading = Serving::start(in_body.activity.clone());
        in_body
            .activity
            .awaiting_body
            .fetch_add(1, Ordering::Relaxed);
        assert_eq!(slots.cut_all_waiting(), 2);
        assert!(idle.activity.cut.load(Ordering::Relaxed));
        assert!(in_body.activity.cut.load(Ordering::Relaxed));
        assert!(!serving.activity.cut.load(Ordering::Relaxed));
        assert_eq!(slots.cut_all_waiting(), 0, "none is cut twice");
    }

    #[test]
    fn a_connection_within_its_grace_is_left_alone() {
        let slots = Slots::new(Duration::from_secs(60));
        let _idle = slots.register();
        assert!(!slots.cut_longest_stalled());
    }
}
