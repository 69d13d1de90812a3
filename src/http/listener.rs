//! The accept loop: hyper's HTTP/1.1 server under the limits that keep idle, slow or numerous
//! clients from exhausting the daemon (`axum::serve` exposes none of them). When every slot is
//! taken, stalled connections make room for new ones (`slots`).

use super::slots::{Slots, Watched};
use axum::Router;
use hyper::server::conn::http1;
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::server::graceful::GracefulShutdown;
use std::future::Future;
use std::sync::Arc;
use std::time::Duration;
use tokio::net::TcpListener;
use tokio::sync::{Semaphore, TryAcquireError};

/// How often a client waiting for a slot looks again for a stalled connection to cut.
const MAKE_ROOM_EVERY: Duration = Duration::from_millis(50);

#[derive(Debug, Clone, Copy)]
pub struct ServeLimits {
    /// Connections served at once; a further one waits until one closes or, when one of them is
    /// stalled, is cut to make room.
    pub max_connections: usize,
    /// How long a client may take to send a request's headers, and how long a kept-alive
    /// connection may sit idle before its next request: slowloris clients are cut off. A TLS
    /// handshake gets as long.
    pub header_read_timeout: Duration,
    /// When every slot is taken and a client waits for one: how long a connection may have
    /// waited on its client (idle, in headers or a handshake, or for its body, however its
    /// bytes drip in) before it is cut to make room. A connection serving a request is never
    /// cut.
    pub overload_grace: Duration,
}

impl Default for ServeLimits {
    fn default() -> Self {
        Self {
            max_connections: 1024,
            header_read_timeout: Duration::from_secs(10),
            overload_grace: Duration::from_millis(500),
        }
    }
}

/// Serves `app` until `shutdown` completes, then stops accepting, closes every connection not
/// being served (idle, or waiting on its client for headers or a body) and lets the others
/// finish their request.
pub async fn serve(
    listener: TcpListener,
    app: Router,
    limits: ServeLimits,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    serve_with(listener, None, app, limits, shutdown).await
}

/// `serve`, over TLS when `tls` is given: HTTPS only, a plain HTTP client gets no answer.
pub async fn serve_with(
    listener: TcpListener,
    tls: Option<Arc<rustls::ServerConfig>>,
    app: Router,
    limits: ServeLimits,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    let tls = tls.map(tokio_rustls::TlsAcceptor::from);
    let permits = Arc::new(Semaphore::new(limits.max_connections.max(1)));
    let slots = Slots::new(limits.overload_grace);
    let graceful = GracefulShutdown::new();
    let mut http = http1::Builder::new();
    http.timer(TokioTimer::new())
        .header_read_timeout(limits.header_read_timeout);
    tokio::pin!(shutdown);
    loop {
        let (stream, peer) = tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok(accepted) => accepted,
                Err(error) => {
                    // Out of file descriptors and the like: wait a moment rather than spin.
                    tracing::warn!(%error, "failed to accept a connection");
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    continue;
                }
            },
            () = &mut shutdown => break,
        };
        // A slot for it. With every slot taken, this one connection waits here (the next ones
        // in the kernel's backlog) while stalled connections are cut to make room.
        let permit = match permits.clone().try_acquire_owned() {
            Ok(permit) => permit,
            Err(TryAcquireError::Closed) => break,
            Err(TryAcquireError::NoPermits) => loop {
                slots.cut_longest_stalled();
                tokio::select! {
                    permit = permits.clone().acquire_owned() => match permit {
                        Ok(permit) => break permit,
                        Err(_) => return finish(listener, graceful, &slots).await,
                    },
                    () = tokio::time::sleep(MAKE_ROOM_EVERY) => {}
                    () = &mut shutdown => return finish(listener, graceful, &slots).await,
                }
            },
        };
        if let Err(error) = stream.set_nodelay(true) {
            tracing::debug!(%error, "failed to set TCP_NODELAY");
        }
        let registration = slots.register();
        let activity = registration.activity.clone();
        let service = Watched::new(app.clone(), activity.clone(), peer);
        let Some(acceptor) = tls.clone() else {
            let connection = graceful.watch(http.serve_connection(TokioIo::new(stream), service));
            tokio::spawn(async move {
                tokio::select! {
                    ended = connection => if let Err(error) = ended {
                        tracing::debug!(%error, "connection ended with an error");
                    },
                    () = activity.cut() => {}
                }
                drop(registration);
                drop(permit);
            });
            continue;
        };
        // The handshake runs in the connection's task, so a slow one holds up nobody else.
        let http = http.clone();
        let watcher = graceful.watcher();
        let handshake_timeout = limits.header_read_timeout;
        tokio::spawn(async move {
            let served = async {
                match tokio::time::timeout(handshake_timeout, acceptor.accept(stream)).await {
                    Ok(Ok(stream)) => {
                        let connection = http.serve_connection(TokioIo::new(stream), service);
                        if let Err(error) = watcher.watch(connection).await {
                            tracing::debug!(%error, "connection ended with an error");
                        }
                    }
                    Ok(Err(error)) => tracing::debug!(%error, "TLS handshake failed"),
                    Err(_) => tracing::debug!("TLS handshake timed out"),
                }
            };
            tokio::select! {
                () = served => {}
                () = activity.cut() => {}
            }
            drop(registration);
            drop(permit);
        });
    }
    finish(listener, graceful, &slots).await
}

/// Stops accepting, closes the connections not being served and lets the others finish their
/// request. A connection whose request is answered goes idle and is closed in its turn; one
/// whose handler starts waiting for body bytes meanwhile is cut at the next look.
async fn finish(
    listener: TcpListener,
    graceful: GracefulShutdown,
    slots: &Slots,
) -> std::io::Result<()> {
    drop(listener);
    let drained = graceful.shutdown();
    tokio::pin!(drained);
    loop {
        let cut = slots.cut_all_waiting();
        if cut > 0 {
            tracing::debug!(cut, "shutting down: closed connections not being served");
        }
        tokio::select! {
            () = &mut drained => return Ok(()),
            () = tokio::time::sleep(MAKE_ROOM_EVERY) => {}
        }
    }
}
