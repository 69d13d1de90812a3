//! `fencewatch serve`: open the store, bind, announce the address, serve until a signal.

use crate::app::retention::{claim_retention, RetentionFlags, RetentionTasks};
use crate::app::service::{FenceService, Limits, Wiring};
use crate::app::witness::{Signer, WitnessTask};
use crate::authority::Authorities;
use crate::cli::{LeaseScopeArg, ServeArgs};
use crate::domain::source::{split_watch_arg, SourceName};
use crate::domain::{LeasePolicy, LeaseScope};
use crate::http::auth::ApiKeys;
use crate::http::hosts::AllowedHosts;
use crate::http::origin::AllowedOrigins;
use crate::http::{self, Access, AppState};
use crate::live::alerts::AlertConfig;
use crate::live::watch::WatchTarget;
use crate::live::{Live, LiveConfig};
use crate::metrics::Metrics;
use crate::owndb::source_name_of;
use crate::redact::redact_url;
use crate::store::{Store, StoreError, StoreOptions};
use crate::tls;
use anyhow::Context;
use std::io::Write;
use std::sync::Arc;
use tokio::net::TcpListener;

/// The composition root, in dependency order: the metrics, the live side (tail, overlaps,
/// alerts) over the store, then the service publishing to it and counting into the metrics;
/// returns what the router serves. `serve`, the demo and the tests all start a daemon through
/// here.
pub async fn start(
    store: Store,
    limits: Limits,
    authorities: Authorities,
    live: LiveConfig,
    access: Access,
) -> Result<AppState, StoreError> {
    let metrics = match store.has_wal_file() {
        true => Metrics::with_wal_file(),
        false => Metrics::new(),
    };
    let live = Live::start(store.clone(), live, metrics.clone()).await?;
    let service = FenceService::start(
        store,
        limits,
        Wiring {
            feed: Some(live.feed()),
            metrics,
            authorities,
        },
    );
    Ok(AppState::new(service, live, access))
}

pub async fn run(args: ServeArgs) -> anyhow::Result<()> {
    let api_keys = args
        .api_key_file
        .as_deref()
        .map(ApiKeys::load)
        .transpose()?
        .map(Arc::new);
    let allowed_origins = AllowedOrigins::parse(&args.allow_origins)?;
    let allowed_hosts = AllowedHosts::new(&args.allowed_hosts, &args.listen)?;
    let tls = match (&args.tls_cert, &args.tls_key) {
        (Some(cert), Some(key)) => Some(tls::server_config(cert, key)?),
        _ => None,
    };
    let scheme = if tls.is_some() { "https" } else { "http" };
    let store = Store::open(
        &args.database,
        &StoreOptions {
            max_connections: args.db_max_connections,
            db_timeout: args.db_timeout,
            schema: args.schema.clone(),
            ..StoreOptions::default()
        },
    )
    .await
    .context("failed to open the database")?;
    let signing_key = args
        .audit_signing_key
        .as_deref()
        .map(crate::commands::audit::keys::signing_key)
        .transpose()?
        .map(Arc::new);
    let store = match &signing_key {
        Some(key) => store.with_audit_signer(key.clone()),
        None => store,
    };
    let retention = RetentionFlags {
        idempotency: args.idempotency_retention,
        audit: args.audit_retention,
        set: args.set_retention,
    };
    claim_retention(&store, &retention)
        .await
        .context("failed to store or read the database's retention")?;
    let limits = Limits {
        max_value_bytes: args.max_value_bytes,
        body_read_timeout: args.body_read_timeout,
        db_timeout: args.db_timeout,
        leases: LeasePolicy {
            scope: match args.lease_scope {
                LeaseScopeArg::Any => LeaseScope::Any,
                LeaseScopeArg::Prefix => LeaseScope::Prefix,
            },
            strict: args.strict_leases,
            require_lease: args.require_lease,
        },
    };
    let mut authorities = Authorities::default();
    if !args.etcd.is_empty() {
        authorities = authorities.with_etcd(args.etcd.clone(), args.db_timeout)?;
    }
    if !args.zookeeper.is_empty() {
        authorities = authorities.with_zookeeper(args.zookeeper.clone(), args.db_timeout)?;
    }
    if authorities.configured() {
        let etcd: Vec<String> = args.etcd.iter().map(|url| redact_url(url)).collect();
        let zookeeper = &args.zookeeper;
        // A daemon whose lock service is down still starts (its own leases work); /readyz says so.
        for (kind, answered) in authorities.each_ready().await {
            let flag = kind.flag();
            match answered {
                Ok(()) => tracing::info!(?etcd, ?zookeeper, "{flag} answers"),
                Err(error) => tracing::error!(
                    ?etcd, ?zookeeper, %error,
                    "{flag} does not answer; writes naming its locks get 503 until it does"
                ),
            }
        }
    }
    let listener = TcpListener::bind(&args.listen)
        .await
        .with_context(|| format!("failed to listen on {}", args.listen))?;
    let address = listener
        .local_addr()
        .context("failed to read the bound address")?;
    let alerts = match &args.config {
        Some(path) => AlertConfig::load(path)?,
        None => AlertConfig::default(),
    };
    let max_subscribers = match subscriber_cap(args.max_subscribers, args.max_connections) {
        SubscriberCap::AsGiven(cap) => cap,
        SubscriberCap::Lowered {
            to,
            max_connections,
        } => {
            tracing::warn!(
                "--max-subscribers {} is more than half of --max-connections {max_connections}, \
                 lowered to {to}: subscribers hold their connection for as long as they follow \
                 and are never cut to make room (raise --max-connections to serve more)",
                args.max_subscribers
            );
            to
        }
    };
    let live = LiveConfig {
        overlap_quiet: args.overlap_quiet,
        max_subscribers,
        alerts: Arc::new(alerts),
        external_url: format!("{scheme}://{address}"),
        watch: watch_targets(&args.watch)?,
        db_timeout: args.db_timeout,
    };
    let access = Access {
        api_keys,
        allowed_origins,
        allowed_hosts,
    };
    let state = start(store.clone(), limits, authorities, live, access)
        .await
        .context("failed to start the live side")?;
    let signals = ShutdownSignals::install()?;
    // Bind first, then announce: with port 0 the caller learns the real port from this line.
    let mut stdout = std::io::stdout().lock();
    writeln!(stdout, "listening on {scheme}://{address}").context("failed to write to stdout")?;
    stdout.flush().context("failed to write to stdout")?;
    drop(stdout);
    let http_workers = tokio::runtime::Handle::current().metrics().num_workers();
    tracing::info!(%address, backend = store.backend().name(), http_workers, "serving");

    let retention = RetentionTasks::spawn(store.clone());
    let witness = match signing_key {
        Some(key) => {
            let mut signer = Signer::new(store.clone(), key);
            signer
                .resume(args.witness_file.as_deref())
                .await
                .context("failed to read the last signed checkpoint")?;
            Some(WitnessTask::spawn(
                signer,
                args.witness_file.clone(),
                args.witness_interval,
                state.live.metrics().witness(),
            ))
        }
        None => None,
    };
    let live = state.live.clone();
    let service = state.service.clone();
    let app = http::router(state);
    let stopping = async move {
        signals.received().await;
        live.stop_streams();
    };
    let limits = http::ServeLimits {
        max_connections: args.max_connections.max(1),
        header_read_timeout: args.header_timeout,
        ..http::ServeLimits::default()
    };
    let served = http::serve_with(listener, tls, app, limits, stopping).await;
    // What was refused since the last interval's rows were written.
    if let Err(error) = service.flush_refusals().await {
        tracing::warn!(%error, "failed to write the last refusals");
    }
    drop(retention);
    if let Some(witness) = witness {
        witness.finish().await;
    }
    store.close().await;
    tracing::info!("stopped");
    served.context("the server failed")
}

/// How many live event subscribers a daemon serves at once.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SubscriberCap {
    /// `--max-subscribers` as given (at least 1).
    AsGiven(usize),
    /// Lowered to half of `--max-connections`.
    Lowered { to: usize, max_connections: usize },
}

/// `--max-subscribers`, at most half of `--max-connections`. A subscriber (`/v1/events`) is a
/// request served for as long as it follows, and a connection serving a request is never cut to
/// make room (`http::slots`): subscribers up to the connection cap would leave no slot for
/// anyone else, `/healthz` included. With one connection, none.
pub fn subscriber_cap(max_subscribers: usize, max_connections: usize) -> SubscriberCap {
    let max_connections = max_connections.max(1);
    let half = max_connections / 2;
    let wanted = max_subscribers.max(1);
    if wanted <= half {
        SubscriberCap::AsGiven(wanted)
    } else {
        SubscriberCap::Lowered {
            to: half,
            max_connections,
        }
    }
}

/// The databases of `--watch [NAME=]URL`, each named: as given, or as the database calls
/// itself. Two with one name are refused (their rows would mix), naming neither URL's password.
pub fn watch_targets(args: &[String]) -> anyhow::Result<Vec<WatchTarget>> {
    let mut targets: Vec<WatchTarget> = Vec::with_capacity(args.len());
    for arg in args {
        let (name, url) = split_watch_arg(arg).map_err(|e| anyhow::anyhow!("--watch: {e}"))?;
        let name = match name {
            Some(name) => name,
            None => SourceName::derived(&source_name_of(url).ok_or_else(|| {
                anyhow::anyhow!(
                    "--watch {}: use postgres://… or sqlite://PATH",
                    redact_url(url)
                )
            })?),
        };
        if let Some(other) = targets.iter().find(|t| t.name == name) {
            anyhow::bail!(
                "--watch: {} and {} are both named {name}; name them apart with NAME=URL",
                redact_url(&other.url),
                redact_url(url)
            );
        }
        targets.push(WatchTarget {
            name,
            url: url.to_owned(),
        });
    }
    Ok(targets)
}

/// SIGINT and SIGTERM, listened for from the moment this is made: a signal that arrives right
/// after the address is announced must stop the daemon cleanly, not kill it.
struct ShutdownSignals {
    #[cfg(unix)]
    interrupt: tokio::signal::unix::Signal,
    #[cfg(unix)]
    terminate: tokio::signal::unix::Signal,
}

impl ShutdownSignals {
    fn install() -> anyhow::Result<Self> {
        #[cfg(unix)]
        {
            use tokio::signal::unix::{signal, SignalKind};
            Ok(Self {
                interrupt: signal(SignalKind::interrupt())
                    .context("failed to listen for SIGINT")?,
                terminate: signal(SignalKind::terminate())
                    .context("failed to listen for SIGTERM")?,
            })
        }
        #[cfg(not(unix))]
        Ok(Self {})
    }

    /// Completes on SIGINT or SIGTERM.
    async fn received(mut self) {
        #[cfg(unix)]
        tokio::select! {
            _ = self.interrupt.recv() => {}
            _ = self.terminate.recv() => {}
        }
        #[cfg(not(unix))]
        let _ = tokio::signal::ctrl_c().await;
        tracing::info!("shutting down: finishing in-flight requests");
    }
}

#[cfg(test)]
mod tests {
    use super::{subscriber_cap, watch_targets, SubscriberCap};

    #[test]
    fn subscribers_get_at_most_half_the_connections() {
        assert_eq!(subscriber_cap(256, 1024), SubscriberCap::AsGiven(256));
        assert_eq!(subscriber_cap(512, 1024), SubscriberCap::AsGiven(512));
        assert_eq!(subscriber_cap(0, 1024), SubscriberCap::AsGiven(1));
        assert_eq!(
            subscriber_cap(513, 1024),
            SubscriberCap::Lowered {
                to: 512,
                max_connections: 1024
            }
        );
        assert_eq!(
            subscriber_cap(256, 5),
            SubscriberCap::Lowered {
                to: 2,
                max_connections: 5
            }
        );
        assert_eq!(
            subscriber_cap(1, 1),
            SubscriberCap::Lowered {
                to: 0,
                max_connections: 1
            }
        );
        assert_eq!(
            subscriber_cap(1, 0),
            SubscriberCap::Lowered {
                to: 0,
                max_connections: 1
            }
        );
    }

    #[test]
    fn watched_databases_are_named_and_two_of_one_name_refused() {
        let targets = watch_targets(&[
            "postgres://app:pw@db.internal/orders".into(),
            "sqlite:///srv/data/billing.db".into(),
            "eu=postgres://app:pw@db-eu.internal/orders".into(),
        ])
        .unwrap();
        let names: Vec<&str> = targets.iter().map(|t| t.name.as_str()).collect();
        assert_eq!(names, ["orders", "billing", "eu"]);
        assert_eq!(targets[2].url, "postgres://app:pw@db-eu.internal/orders");
        assert!(
            !format!("{targets:?}").contains(":pw@"),
            "Debug hides passwords"
        );
        let error = watch_targets(&[
            "postgres://app:pw@a/orders".into(),
            "postgres://app:pw@b/orders".into(),
        ])
        .unwrap_err()
        .to_string();
        assert!(error.contains("both named orders"), "{error}");
        assert!(!error.contains(":pw@"), "{error}");
        assert!(watch_targets(&["mysql://x/y".into()]).is_err());
        assert!(watch_targets(&["bad name=sqlite://x.db".into()]).is_err());
    }
}
