//! PostgreSQL's own ceiling for the same workload, measured in the same run: `pgbench` (the
//! program PostgreSQL ships) sends the fenced write and its audit row as one autocommit
//! statement per write over as many connections, with the same resources, stale share and
//! durability (`synchronous_commit` as the server has it). Its tables are the bench's own,
//! created before and dropped after.

use super::tally::{summarise, Tally};
use super::{BenchOptions, PathResult};
use anyhow::{bail, Context};
use std::path::Path;
use std::process::Stdio;
use std::time::Duration;

const RESOURCES: &str = "fencewatch_pgbench_resources";
const AUDIT: &str = "fencewatch_pgbench_audit";

/// The one statement per write: the conditional update of the resource (the fence) and the
/// audit row of the attempt, accepted or superseded.
fn script(options: &BenchOptions) -> String {
    let stale_per_million = (options.stale_fraction * 1_000_000.0).round() as i64;
    format!(
        "\\set r random(1, {resources})\n\
         \\set s random(1, 1000000)\n\
         \\set t case when :s <= {stale_per_million} then 999 else 1000 end\n\
         WITH fenced AS (UPDATE {RESOURCES} SET token = :t, revision = revision + 1, \
         value = 'value from pgbench' WHERE key = :r AND token <= :t RETURNING revision) \
         INSERT INTO {AUDIT} (at_us, resource, token, outcome, revision) \
         SELECT (extract(epoch FROM clock_timestamp()) * 1000000)::bigint, :r, :t, \
         CASE WHEN fenced.revision IS NULL THEN 'superseded' ELSE 'accepted' END, \
         coalesce(fenced.revision, 0) FROM (SELECT 1) AS one LEFT JOIN fenced ON true;\n",
        resources = options.resources.max(1),
    )
}

/// Runs `pgbench` against `url` with the bench's clients, resources and stale share.
pub(super) async fn run(
    url: &str,
    options: &BenchOptions,
    folder: &Path,
) -> anyhow::Result<PathResult> {
    psql(url, &setup(options)).await?;
    // Not in a transaction block, so not in the same command.
    psql(url, &format!("VACUUM ANALYZE {RESOURCES}")).await?;
    let outcome = run_pgbench(url, options, folder).await;
    let counts = psql(
        url,
        &format!(
            "SELECT count(*) FILTER (WHERE outcome = 'accepted'), \
             count(*) FILTER (WHERE outcome = 'superseded') FROM {AUDIT}"
        ),
    )
    .await;
    psql(url, &format!("DROP TABLE {RESOURCES}, {AUDIT}")).await?;
    let (mut result, elapsed_tallies) = outcome?;
    let counts = counts?;
    let mut parts = counts.trim().split('|').map(str::parse::<u64>);
    if let (Some(Ok(accepted)), Some(Ok(rejected))) = (parts.next(), parts.next()) {
        result.accepted = accepted;
        result.rejected = rejected;
    }
    result.errors = elapsed_tallies;
    Ok(result)
}

fn setup(options: &BenchOptions) -> String {
    format!(
        "DROP TABLE IF EXISTS {RESOURCES}, {AUDIT}; \
         CREATE TABLE {RESOURCES} (key integer PRIMARY KEY, token bigint NOT NULL, \
         revision bigint NOT NULL, value text NOT NULL); \
         CREATE TABLE {AUDIT} (id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY, \
         at_us bigint NOT NULL, resource integer NOT NULL, token bigint NOT NULL, \
         outcome text NOT NULL, revision bigint NOT NULL); \
         CREATE INDEX ON {AUDIT} (resource, id); \
         INSERT INTO {RESOURCES} SELECT k, 1000, 1, 'seed' FROM generate_series(1, {}) AS k",
        options.resources.max(1)
    )
}

/// The run itself; its per-transaction log gives the latencies. Returns the result and the
/// number of failed transactions pgbench reported.
async fn run_pgbench(
    url: &str,
    options: &BenchOptions,
    folder: &Path,
) -> anyhow::Result<(PathResult, u64)> {
    let script_path = folder.join("fenced-write.sql");
    tokio::fs::write(&script_path, script(options))
        .await
        .context("cannot write the pgbench script")?;
    let log_prefix = folder.join("pgbench-log");
    let clients = options.connections.max(1);
    let seconds = options.duration.as_secs().max(1);
    let output = tokio::process::Command::new("pgbench")
        .args(["--no-vacuum", "--protocol=prepared", "--log"])
        .arg(format!("--log-prefix={}", log_prefix.display()))
        .arg(format!("--client={clients}"))
        .arg(format!("--jobs={}", clients.min(2)))
        .arg(format!("--time={seconds}"))
        .arg(format!("--file={}", script_path.display()))
        .arg(url)
        .stdin(Stdio::null())
        .output()
        .await
        .context(
            "cannot run pgbench (PostgreSQL's client programs, e.g. Debian's postgresql-client)",
        )?;
    if !output.status.success() {
        bail!(
            "pgbench failed: {}",
            String::from_utf8_lossy(&output.stderr).trim()
        );
    }
    let stdout = String::from_utf8_lossy(&output.stdout);
    let failed = stdout
        .lines()
        .find_map(|line| line.trim().strip_prefix("number of failed transactions: "))
        .and_then(|rest| rest.split_whitespace().next())
        .and_then(|n| n.parse().ok())
        .unwrap_or(0);
    let mut tally = Tally::new()?;
    let mut entries = tokio::fs::read_dir(folder).await?;
    while let Some(entry) = entries.next_entry().await? {
        let name = entry.file_name();
        if !name.to_string_lossy().starts_with("pgbench-log") {
            continue;
        }
        let log = tokio::fs::read_to_string(entry.path()).await?;
        for line in log.lines() {
            // client_id transaction_no time script_no time_epoch time_us: `time` in µs.
            if let Some(Ok(micros)) = line.split_whitespace().nth(2).map(str::parse::<u64>) {
                tally.record(Duration::from_micros(micros), false);
            }
        }
    }
    let result = summarise(
        "pgbench",
        clients,
        vec![tally],
        Duration::from_secs(seconds),
    )?;
    Ok((result, failed))
}

/// One `psql` command, its unaligned output.
async fn psql(url: &str, sql: &str) -> anyhow::Result<String> {
    let output = tokio::process::Command::new("psql")
        .args(["-qAtX", "-v", "ON_ERROR_STOP=1", "-c", sql, url])
        .env("PGOPTIONS", "-c client_min_messages=warning")
        .stdin(Stdio::null())
        .output()
        .await
        .context("cannot run psql")?;
    if !output.status.success() {
        bail!(
            "psql failed: {}",
            String::from_utf8_lossy(&output.stderr).trim()
        );
    }
    Ok(String::from_utf8_lossy(&output.stdout).into_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_script_fences_and_audits_in_one_statement_with_the_stale_share() {
        let options = BenchOptions {
            url: None,
            ca_cert: None,
            database: None,
            connections: 1,
            resources: 1000,
            stale_fraction: 0.05,
            idempotency_keys: false,
            duration: Duration::from_secs(1),
            baseline: true,
            http: true,
            json: false,
            readers: 0,
            subscribers: 0,
            etcd: None,
            zookeeper: None,
            witness_interval: None,
            fill: None,
        };
        let text = script(&options);
        assert!(text.contains("random(1, 1000)\n"), "{text}");
        assert!(text.contains("when :s <= 50000 then 999"), "{text}");
        // One SQL statement: the pgbench meta-commands, then a single line ending with `;`.
        let sql: Vec<&str> = text.lines().filter(|l| !l.starts_with('\\')).collect();
        assert_eq!(sql.len(), 1);
        assert!(sql[0].starts_with("WITH fenced AS (UPDATE") && sql[0].ends_with(';'));
    }
}
