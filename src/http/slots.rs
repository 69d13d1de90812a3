//! Connection slots under overload. `--max-connections` bounds the connections served at once;
//! beyond it a client waits in the kernel's backlog until one closes. Clients that hold a slot
//! without sending anything (a body that stalls, a request's headers trickling, a kept-alive
//! connection left idle) would keep everyone else waiting until their own timeouts end them
//! (`--body-read-timeout`, `--header-timeout`: seconds). So, as Envoy's overload manager
//! shortens its timeouts under pressure: when every slot is taken and a new client is waiting,
//! the connection that has waited longest on its client, past a short grace, is cut to make room.
//! A connection serving a request (its handler at work, or its answer being sent) is never cut.
//!
//! What a connection is doing is kept in its `Activity`: when it last received a byte, how many
//! requests it is serving, and how many of those are waiting for body bytes. `Metered` (its
//! socket), `Watched` (its service), `WatchedBody` (a request's body) and `Served` (an answer's
//! body) keep it up to date.

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
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
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
    /// When it last received a byte, began or finished answering a request: milliseconds since
    /// `epoch`.
    progress_ms: AtomicU64,
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

    fn touch(&self) {
        self.progress_ms.store(self.now_ms(), Ordering::Relaxed);
    }

    /// How long it has waited on its client without progress, if it is not serving anything
    /// but waiting on it: idle, in a request's headers, in a TLS handshake, or in a body.
    fn stalled_for(&self, now_ms: u64) -> Option<u64> {
        if self.cut.load(Ordering::Relaxed) {
            return None;
        }
        let serving = self.serving.load(Ordering::Relaxed);
        let awaiting = self.awaiting_body.load(Ordering::Relaxed);
        (serving <= awaiting)
            .then(|| now_ms.saturating_sub(self.progress_ms.load(Ordering::Relaxed)))
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
            progress_ms: AtomicU64::new(0),
            serving: AtomicUsize::new(0),
            awaiting_body: AtomicUsize::new(0),
            cut: AtomicBool::new(false),
            cut_notice: Notify::new(),
        });
        activity.touch();
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
            .filter_map(|activity| activity.stalled_for(now_ms).map(|idle| (idle, activity)))
            .filter(|(idle, _)| *idle >= grace_ms)
            .max_by_key(|(idle, _)| *idle);
        let Some((idle, activity)) = longest else {
            return false;
        };
        activity.cut.store(true, Ordering::Relaxed);
        activity.cut_notice.notify_one();
        tracing::debug!(
            stalled_ms = idle,
            "every connection slot is taken: cut the connection stalled longest"
        );
        true
    }
}

/// A connection's socket, noting when bytes arrive.
pub(super) struct Metered<T> {
    inner: T,
    activity: Arc<Activity>,
}

impl<T> Metered<T> {
    pub(super) fn new(inner: T, activity: Arc<Activity>) -> Self {
        Self { inner, activity }
    }
}

impl<T: AsyncRead + Unpin> AsyncRead for Metered<T> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        let before = buf.filled().len();
        let polled = Pin::new(&mut self.inner).poll_read(cx, buf);
        if matches!(polled, Poll::Ready(Ok(()))) && buf.filled().len() > before {
            self.activity.touch();
        }
        polled
    }
}

impl<T: AsyncWrite + Unpin> AsyncWrite for Metered<T> {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<std::io::Result<usize>> {
        Pin::new(&mut self.inner).poll_write(cx, buf)
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[std::io::IoSlice<'_>],
    ) -> Poll<std::io::Result<usize>> {
        Pin::new(&mut self.inner).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.inner).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.inner).poll_shutdown(cx)
    }
}

/// A request being served, from the handler's call until its answer's body is done or dropped.
struct Serving(Arc<Activity>);

impl Serving {
    fn start(activity: Arc<Activity>) -> Self {
        activity.serving.fetch_add(1, Ordering::Relaxed);
        activity.touch();
        Self(activity)
    }
}

impl Drop for Serving {
    fn drop(&mut self) {
        // Idle from now: its wait for the next request starts here.
        self.0.touch();
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

    #[test]
    fn a_connection_within_its_grace_is_left_alone() {
        let slots = Slots::new(Duration::from_secs(60));
        let _idle = slots.register();
        assert!(!slots.cut_longest_stalled());
    }
}
