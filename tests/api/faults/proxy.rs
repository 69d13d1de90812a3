//! A TCP proxy in front of PostgreSQL that the tests cut or stall.

use tokio::sync::watch;

/// `host:port` of a PostgreSQL URL.
pub(crate) fn upstream_of(url: &str) -> String {
    let url = reqwest::Url::parse(url).unwrap();
    format!("{}:{}", url.host_str().unwrap(), url.port().unwrap_or(5432))
}

/// The same database URL, through `proxy`.
pub(crate) fn proxied_url(url: &str, proxy: &Proxy) -> String {
    let mut url = reqwest::Url::parse(url).unwrap();
    url.set_host(Some("127.0.0.1")).unwrap();
    url.set_port(Some(proxy.address.port())).unwrap();
    url.to_string()
}

/// A TCP proxy in front of the real PostgreSQL server that can be cut (every connection
/// dropped, new ones refused) or stalled (bytes held, nothing closed, as when a network or a
/// server stops answering without saying so) and restored: the server going away and coming
/// back, as the daemon sees it, without disturbing other tests that share the server.
pub(crate) struct Proxy {
    pub(super) address: std::net::SocketAddr,
    pub(super) up: std::sync::Arc<std::sync::atomic::AtomicBool>,
    /// Whether the links opened since the last `abandon_links` may carry bytes.
    pub(super) flowing: std::sync::Arc<std::sync::Mutex<watch::Sender<bool>>>,
    /// The switches of links stalled for good, kept: a dropped one would end its links.
    pub(super) abandoned: std::sync::Mutex<Vec<watch::Sender<bool>>>,
    pub(super) links: std::sync::Arc<std::sync::Mutex<Vec<tokio::task::AbortHandle>>>,
}

impl Proxy {
    pub(crate) async fn start(upstream: String) -> Proxy {
        use std::sync::atomic::Ordering;
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let address = listener.local_addr().unwrap();
        let up = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(true));
        let links = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
        let flowing = std::sync::Arc::new(std::sync::Mutex::new(watch::Sender::new(true)));
        let (accept_up, accept_links, accept_flowing) =
            (up.clone(), links.clone(), flowing.clone());
        tokio::spawn(async move {
            while let Ok((client, _)) = listener.accept().await {
                if !accept_up.load(Ordering::SeqCst) {
                    continue; // dropped: the connection is refused as it opens
                }
                let upstream = upstream.clone();
                let flowing = accept_flowing.lock().unwrap().subscribe();
                let link = tokio::spawn(async move {
                    if let Ok(server) = tokio::net::TcpStream::connect(upstream).await {
                        let (client_in, client_out) = client.into_split();
                        let (server_in, server_out) = server.into_split();
                        tokio::join!(
                            pump(client_in, server_out, flowing.clone()),
                            pump(server_in, client_out, flowing)
                        );
                    }
                });
                accept_links.lock().unwrap().push(link.abort_handle());
            }
        });
        Proxy {
            address,
            up,
            flowing,
            abandoned: std::sync::Mutex::new(Vec::new()),
            links,
        }
    }

    pub(crate) fn cut(&self) {
        self.up.store(false, std::sync::atomic::Ordering::SeqCst);
        for link in self.links.lock().unwrap().drain(..) {
            link.abort();
        }
    }

    pub(super) fn stall(&self) {
        self.flowing.lock().unwrap().send_replace(false);
    }

    /// Stalls every link open now for good, while new ones work: the server behind them gone
    /// without a word, and another reachable at the same address.
    pub(super) fn abandon_links(&self) {
        let mut flowing = self.flowing.lock().unwrap();
        flowing.send_replace(false);
        let stalled = std::mem::replace(&mut *flowing, watch::Sender::new(true));
        self.abandoned.lock().unwrap().push(stalled);
    }

    pub(crate) fn restore(&self) {
        self.up.store(true, std::sync::atomic::Ordering::SeqCst);
        self.flowing.lock().unwrap().send_replace(true);
    }
}

/// Copies bytes one way, holding them while the link is stalled.
pub(super) async fn pump(
    mut from: tokio::net::tcp::OwnedReadHalf,
    mut to: tokio::net::tcp::OwnedWriteHalf,
    mut flowing: watch::Receiver<bool>,
) {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let mut buffer = vec![0; 16 * 1024];
    loop {
        // An end of the stream is held like bytes: a stalled link tells nothing.
        let read = from.read(&mut buffer).await.unwrap_or(0);
        if flowing.wait_for(|flowing| *flowing).await.is_err()
            || read == 0
            || to.write_all(&buffer[..read]).await.is_err()
        {
            break;
        }
    }
    let _ = to.shutdown().await;
}
