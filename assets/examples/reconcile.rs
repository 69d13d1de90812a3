//! The reconciliation worker of the fencing-token article, against a table fenced by fencewatch:
//! reconcile.py in Rust, with sqlx (a native `PgPool`) and reqwest.
//!
//! It computes each region's total from `accounts` and writes it to `region_totals` (see
//! schema.sql in this folder), in one transaction, every row carrying the worker's generation.
//! The fence's trigger on `region_totals` applies a row only while no newer generation owns the
//! table: a worker that paused after reading while another took over and wrote writes nothing,
//! and says so, however long it was paused.
//!
//! Set up the database as reconcile.py's header says (schema.sql, `fencewatch serve`,
//! `fence install`, `fence protect region_totals … --scope totals --lease reconcile`), then:
//!
//! ```sh
//! export DATABASE_URL=postgres://USER@HOST/shop
//! cargo run --example reconcile                          # takes a generation of lease reconcile
//! cargo run --example reconcile -- --token 8             # a generation from your own authority
//! ```
//!
//! To see the fence stop a paused worker, run the binary itself (under `cargo run` the shell
//! would not see it stop), then a second worker, then `fg`:
//!
//! ```sh
//! cargo build --example reconcile && target/debug/examples/reconcile --ttl 2 --pause-after-read
//! ```
//!
//! Options: `--database URL` (default `$DATABASE_URL`), `--url URL` of the daemon (default
//! `$FENCEWATCH_URL` or `http://127.0.0.1:7420`; `FENCEWATCH_API_KEY` and `FENCEWATCH_CA_CERT`
//! are read as by fencewatch), `--lease NAME` (`reconcile`), `--holder NAME`, `--ttl SECONDS`
//! (30), `--token N`, `--pause-after-read`.
//!
//! Exit codes: `0` the totals were written; `1` the database or the daemon failed
//! (unreachable, an error, the schema missing); `2` bad command line; `3` fenced: a newer
//! generation owns the totals, nothing of this run was written.
//!
//! In a project of your own: `sqlx = { version = "0.8", features = ["runtime-tokio",
//! "postgres"] }`, `reqwest = { version = "0.13", features = ["json"] }` (which brings its own
//! TLS provider: drop the `rustls` line in `main`), `tokio`, `clap` (derive, env), `serde_json`
//! and `thiserror`.

use clap::Parser;
use serde_json::{json, Value};
use sqlx::postgres::{PgPool, PgPoolOptions};
use std::process::ExitCode;
use std::time::Duration;

#[derive(Debug, Parser)]
#[command(about = "A reconciliation worker writing to a table fenced by fencewatch")]
struct Args {
    /// The PostgreSQL database holding `accounts` and `region_totals`.
    #[arg(long, env = "DATABASE_URL", hide_env_values = true)]
    database: String,
    /// The fencewatch daemon that issues the lease's generations.
    #[arg(long, env = "FENCEWATCH_URL", default_value = "http://127.0.0.1:7420")]
    url: String,
    #[arg(long, default_value = "reconcile")]
    lease: String,
    /// This worker's name in the lease and the audit (default: host and process id).
    #[arg(long)]
    holder: Option<String>,
    /// The lease's time to live, in seconds.
    #[arg(long, default_value_t = 30.0)]
    ttl: f64,
    /// A generation to use instead of the lease's.
    #[arg(long, value_parser = clap::value_parser!(i64).range(1..))]
    token: Option<i64>,
    /// Stop this process (SIGSTOP) after reading, as a GC pause or a stalled host would.
    #[arg(long)]
    pause_after_read: bool,
}

#[derive(Debug, thiserror::Error)]
enum Failure {
    #[error(
        "fenced: the update of region {region} with generation {token} affected 0 rows (the row \
         holds generation {held} of {worker}); a newer generation owns lease {lease}: nothing \
         written, stopping"
    )]
    Fenced {
        region: String,
        token: i64,
        held: String,
        worker: String,
        lease: String,
    },
    #[error("the database failed: {0}")]
    Database(#[from] sqlx::Error),
    #[error("the fencewatch daemon at {url} did not answer: {source}")]
    Unreachable { url: String, source: reqwest::Error },
    #[error("acquiring lease {lease}: {status} {detail}")]
    Refused {
        lease: String,
        status: u16,
        detail: String,
    },
    #[error("region_totals has no row for region {0}: insert one")]
    NoRow(String),
    #[error("the CA certificate in FENCEWATCH_CA_CERT: {0}")]
    CaCert(String),
    #[error("could not pause: {0}")]
    Pause(std::io::Error),
}

impl Failure {
    fn exit_code(&self) -> u8 {
        match self {
            Failure::Fenced { .. } => 3,
            _ => 1,
        }
    }
}

/// The daemon's lease authority, over its HTTP API.
struct Daemon {
    http: reqwest::Client,
    url: String,
    api_key: Option<String>,
}

impl Daemon {
    fn new(url: &str) -> Result<Daemon, Failure> {
        let mut builder = reqwest::Client::builder().timeout(Duration::from_secs(10));
        if let Some(path) = std::env::var_os("FENCEWATCH_CA_CERT") {
            let pem = std::fs::read(&path).map_err(|e| Failure::CaCert(e.to_string()))?;
            let roots = reqwest::Certificate::from_pem_bundle(&pem)
                .map_err(|e| Failure::CaCert(e.to_string()))?;
            builder = builder.tls_certs_only(roots);
        }
        Ok(Daemon {
            http: builder
                .build()
                .map_err(|e| Failure::CaCert(e.to_string()))?,
            url: url.trim_end_matches('/').to_owned(),
            api_key: std::env::var("FENCEWATCH_API_KEY").ok(),
        })
    }

    /// POSTs `body` to the lease's `action`; the status and the JSON answer (`null` if none).
    async fn lease_call(
        &self,
        lease: &str,
        action: &str,
        body: Value,
    ) -> Result<(u16, Value), Failure> {
        let name: String = lease
            .bytes()
            .map(|b| match b {
                b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'.' | b'_' | b'~' => {
                    char::from(b).to_string()
                }
                _ => format!("%{b:02X}"),
            })
            .collect();
        let mut request = self
            .http
            .post(format!("{}/v1/leases/{name}/{action}", self.url))
            .json(&body);
        if let Some(key) = &self.api_key {
            request = request.bearer_auth(key);
        }
        let unreachable = |source| Failure::Unreachable {
            url: self.url.clone(),
            source,
        };
        let answer = request.send().await.map_err(unreachable)?;
        let status = answer.status().as_u16();
        let bytes = answer.bytes().await.map_err(unreachable)?;
        let value = serde_json::from_slice(&bytes)
            .unwrap_or_else(|_| Value::String(String::from_utf8_lossy(&bytes).into_owned()));
        Ok((status, value))
    }

    /// A new generation of the lease; waits while another holder has it.
    async fn acquire(&self, args: &Args, holder: &str) -> Result<i64, Failure> {
        let ttl_ms = (args.ttl * 1000.0) as u64;
        let mut waiting = false;
        loop {
            let body = json!({"holder": holder, "ttl_ms": ttl_ms});
            let (status, answer) = self.lease_call(&args.lease, "acquire", body).await?;
            if let (200, Some(token)) = (status, answer["token"].as_i64()) {
                return Ok(token);
            }
            if status == 409 && answer["type"] == "lease-held" {
                if !waiting {
                    println!(
                        "lease {} is held by {} until {}: waiting",
                        args.lease, answer["holder"], answer["expires_at"]
                    );
                    waiting = true;
                }
                tokio::time::sleep(Duration::from_millis(500)).await;
                continue;
            }
            return Err(Failure::Refused {
                lease: args.lease.clone(),
                status,
                detail: answer.get("detail").unwrap_or(&answer).to_string(),
            });
        }
    }

    /// Best effort: a lease superseded meanwhile answers 409, and the TTL ends it anyway.
    async fn release(&self, lease: &str, holder: &str, token: i64) {
        let body = json!({"holder": holder, "token": token});
        let _ = self.lease_call(lease, "release", body).await;
    }
}

/// Stops this process as a GC pause or a stalled host would; SIGCONT (`fg`) resumes it.
fn pause() -> Result<(), Failure> {
    let pid = std::process::id().to_string();
    println!("pausing: resume with fg or kill -CONT {pid}");
    std::process::Command::new("sh")
        .args(["-c", "kill -STOP \"$0\"", &pid])
        .status()
        .map_err(Failure::Pause)?;
    Ok(())
}

/// Reads the inputs and writes every region's total in one transaction, fenced by `token`.
async fn reconcile(pool: &PgPool, args: &Args, holder: &str, token: i64) -> Result<(), Failure> {
    let mut tx = pool.begin().await?;
    let totals: Vec<(String, i64, i64)> = sqlx::query_as(
        "SELECT region, sum(balance_cents)::bigint, count(*) FROM accounts \
         GROUP BY region ORDER BY region",
    )
    .fetch_all(&mut *tx)
    .await?;
    let accounts: i64 = totals.iter().map(|(_, _, count)| count).sum();
    println!("generation {token}: read {accounts} accounts");
    if args.pause_after_read {
        pause()?;
    }
    for (region, total, count) in &totals {
        let written = sqlx::query(
            "UPDATE region_totals SET total_cents = $1, accounts = $2, fence_token = $3, \
             worker = $4, computed_at = now() WHERE region = $5",
        )
        .bind(total)
        .bind(count)
        .bind(token)
        .bind(holder)
        .bind(region)
        .execute(&mut *tx)
        .await?
        .rows_affected();
        if written == 1 {
            println!("{region}: {total} cents over {count} accounts");
            continue;
        }
        // No error: a protected table answers a refused write with zero rows.
        let row: Option<(Option<i64>, Option<String>)> =
            sqlx::query_as("SELECT fence_token, worker FROM region_totals WHERE region = $1")
                .bind(region)
                .fetch_optional(&mut *tx)
                .await?;
        let Some((held, worker)) = row else {
            return Err(Failure::NoRow(region.clone()));
        };
        // Commit, not roll back: the refusal's audit row is part of this transaction. The fence
        // refuses a stale generation's first write to the scope, so nothing else of this run
        // was written.
        tx.commit().await?;
        return Err(Failure::Fenced {
            region: region.clone(),
            token,
            held: held.map_or("none".into(), |t| t.to_string()),
            worker: worker.unwrap_or_else(|| "nobody".into()),
            lease: args.lease.clone(),
        });
    }
    tx.commit().await?;
    Ok(())
}

async fn run(args: &Args) -> Result<i64, Failure> {
    let holder = args.holder.clone().unwrap_or_else(|| {
        let host = std::env::var("HOSTNAME").unwrap_or_else(|_| "reconcile".into());
        format!("{host}-{}", std::process::id())
    });
    let daemon = Daemon::new(&args.url)?;
    let token = match args.token {
        Some(token) => token,
        None => daemon.acquire(args, &holder).await?,
    };
    let outcome = match PgPoolOptions::new()
        .max_connections(1)
        .connect(&args.database)
        .await
    {
        Ok(pool) => {
            let outcome = reconcile(&pool, args, &holder, token).await;
            pool.close().await;
            outcome
        }
        Err(error) => Err(error.into()),
    };
    if args.token.is_none() {
        daemon.release(&args.lease, &holder, token).await;
    }
    outcome.map(|()| token)
}

#[tokio::main]
async fn main() -> ExitCode {
    let args = Args::parse();
    if !(0.001..=86_400.0).contains(&args.ttl) {
        eprintln!("error: --ttl is 0.001 to 86400 seconds");
        return ExitCode::from(2);
    }
    // This crate's reqwest leaves the TLS provider to the application.
    let _ = rustls::crypto::ring::default_provider().install_default();
    match run(&args).await {
        Ok(token) => {
            println!("generation {token}: totals written");
            ExitCode::SUCCESS
        }
        Err(failure) => {
            match failure {
                Failure::Fenced { .. } => eprintln!("{failure}"),
                _ => eprintln!("error: {failure}"),
            }
            ExitCode::from(failure.exit_code())
        }
    }
}
