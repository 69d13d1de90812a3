//! The accept loop: hyper's HTTP/1.1 server under the limits that keep idle, slow or numerous
//! clients from exhausting the daemon (`axum::serve` exposes none of them).

use axum::Router;
use hyper::server::conn::http1;
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::server::graceful::GracefulShutdown;
use hyper_util::service::TowerToHyperService;
use std::future::Future;
use std::sync::Arc;
use std::time::Duration;
use tokio::net::TcpListener;
use tokio::sync::Semaphore;

#[derive(Debug, Clone, Copy)]
pub struct ServeLimits {
    /// Connections served at once; further ones wait in the kernel's backlog.
    pub max_connections: usize,
    /// How long a client may take to send a request's headers, and how long a kept-alive
    /// connection may sit idle before its next request: slowloris clients are cut off. A TLS
    /// handshake gets as long.
    pub header_read_timeout: Duration,
}

impl Default for ServeLimits {
    fn default() -> Self {
        Self {
            max_connections: 1024,
            header_read_timeout: Duration::from_secs(10),
        }
    }
}

/// Serves `app` until `shutdown` completes, then stops accepting and lets every open
/// connection finish its request.
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
    let graceful = GracefulShutdown::new();
    let mut http = http1::Builder::new();
    http.timer(TokioTimer::new())
        .header_read_timeout(limits.header_read_timeout);
    tokio::pin!(shutdown);
    loop {
        // Take a connection slot before accepting, so that beyond the cap clients queue in the
        // backlog instead of being accepted and starved.
        let permit = tokio::select! {
            permit = permits.clone().acquire_owned() => match permit {
                Ok(permit) => permit,
                Err(_) => break,
            },
            () = &mut shutdown => break,
        };
        let stream = tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok((stream, _peer)) => stream,
                Err(error) => {
                    // Out of file descriptors and the like: wait a moment rather than spin.
                    tracing::warn!(%error, "failed to accept a connection");
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    continue;
                }
            },
            () = &mut shutdown => break,
        };
        if let Err(error) = stream.set_nodelay(true) {
            tracing::debug!(%error, "failed to set TCP_NODELAY");
        }
        let service = TowerToHyperService::new(app.clone());
        let Some(acceptor) = tls.clone() else {
            let connection = graceful.watch(http.serve_connection(TokioIo::new(stream), service));
            tokio::spawn(async move {
                if let Err(error) = connection.await {
                    tracing::debug!(%error, "connection ended with an error");
                }
                drop(permit);
            });
            continue;
        };
        // The handshake runs in the connection's task, so a slow one holds up nobody else.
        let http = http.clone();
        let watcher = graceful.watcher();
        let handshake_timeout = limits.header_read_timeout;
        tokio::spawn(async move {
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
            drop(permit);
        });
    }
    drop(listener);
    graceful.shutdown().await;
    Ok(())
}
