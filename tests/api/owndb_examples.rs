//! The reconciliation worker users copy (`assets/examples/reconcile.py` with psycopg,
//! `assets/examples/reconcile.rs` with sqlx), each run for real as the article's verification
//! asks: a fresh PostgreSQL database made from `schema.sql`, the fence installed and
//! `region_totals` protected by the CLI as the examples' headers say, a real daemon issuing the
//! lease. The older worker reads, then stops itself (SIGSTOP); the inputs change; the newer one
//! waits for the older's lease to lapse, takes the next generation, writes and commits; the older
//! is resumed and writes its stale totals: zero rows, exit 3 with the fenced message. The table
//! keeps the newer totals and the fence's audit holds both attempts.

use crate::helpers::{audit_of_scope, Backend, Daemon, UserConn, UserDb};
use std::path::{Path, PathBuf};
use std::process::{Output, Stdio};
use std::time::{Duration, Instant};
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::Command;

const SCHEMA: &str = include_str!("../../assets/examples/schema.sql");
const EXAMPLES: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/assets/examples");
const WAIT: Duration = Duration::from_secs(60);

/// The exit code the examples document for a fenced write.
const EXIT_FENCED: i32 = 3;

/// Whether python3 can import psycopg. Missing, the test is skipped, saying so, unless
/// `FENCEWATCH_REQUIRE_PEERS=1` makes that a failure (`.ci/run` installs it).
fn python_with_psycopg() -> bool {
    let found = std::process::Command::new("python3")
        .args(["-c", "import psycopg"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|status| status.success());
    if !found {
        assert!(
            std::env::var("FENCEWATCH_REQUIRE_PEERS").as_deref() != Ok("1"),
            "FENCEWATCH_REQUIRE_PEERS=1 but python3 cannot import psycopg \
             (pip install \"psycopg[binary]\")"
        );
        eprintln!(
            "SKIPPED: python3 cannot import psycopg (pip install \"psycopg[binary]\"); \
             reconcile.py was not run"
        );
    }
    found
}

/// The Rust example's binary, built by `cargo build --example reconcile` into this test's own
/// target directory, profile and features: `cargo test` builds examples, but a run filtered to
/// `--test api` does not. Built once per test process.
fn rust_example() -> PathBuf {
    static BUILT: std::sync::OnceLock<PathBuf> = std::sync::OnceLock::new();
    BUILT
        .get_or_init(|| {
            // This test binary is TARGET/PROFILE/deps/api-HASH.
            let exe = std::env::current_exe().unwrap();
            let profile_dir = exe.parent().and_then(Path::parent).unwrap().to_owned();
            let target_dir = profile_dir.parent().unwrap();
            let profile = match profile_dir.file_name().and_then(|n| n.to_str()).unwrap() {
                "debug" => "dev",
                other => other,
            }
            .to_owned();
            let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
            let mut build = std::process::Command::new(cargo);
            build
                .args(["build", "--quiet", "--example", "reconcile", "--profile"])
                .arg(&profile)
                .arg("--target-dir")
                .arg(target_dir)
                .current_dir(env!("CARGO_MANIFEST_DIR"));
            // What cargo set for this test's run, not for a build: a dependency's build script
            // that watches one (ring's watches CARGO_MANIFEST_DIR) would be rebuilt, and then
            // again by the next plain build.
            for (name, _) in std::env::vars_os() {
                let name = name.to_string_lossy();
                let set_for_the_run = ["CARGO_MANIFEST_", "CARGO_PKG_", "CARGO_BIN_EXE_"]
                    .iter()
                    .any(|prefix| name.starts_with(prefix))
                    || [
                        "CARGO_CRATE_NAME",
                        "CARGO_PRIMARY_PACKAGE",
                        "CARGO_TARGET_TMPDIR",
                    ]
                    .contains(&name.as_ref())
                    || name == "OUT_DIR";
                if set_for_the_run {
                    build.env_remove(name.as_ref());
                }
            }
            let status = build.status().unwrap();
            assert!(status.success(), "cargo build --example reconcile failed");
            profile_dir.join("examples").join("reconcile")
        })
        .clone()
}

#[derive(Debug, Clone, Copy)]
enum Example {
    Python,
    Rust,
}

impl Example {
    fn command(self) -> Command {
        match self {
            Example::Python => {
                let mut command = Command::new("python3");
                command.arg(format!("{EXAMPLES}/reconcile.py"));
                command
            }
            Example::Rust => Command::new(rust_example()),
        }
    }
}

/// `fencewatch ARGS`, which must succeed.
async fn fencewatch_ok(args: &[&str]) {
    let out = Command::new(env!("CARGO_BIN_EXE_fencewatch"))
        .args(args)
        .output()
        .await
        .unwrap();
    assert!(
        out.status.success(),
        "fencewatch {args:?}: {}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

/// A fresh database made as the examples' headers say, with the daemon's store in it.
async fn shop() -> (UserDb, Daemon) {
    let db = UserDb::new(Backend::Postgres).await;
    db.run(SCHEMA).await;
    // Its `leases` table is what `protect --lease` checks generations against.
    let daemon = Daemon::on(&db.url).spawn().await;
    fencewatch_ok(&["fence", "install", "--database", &db.url]).await;
    fencewatch_ok(&[
        "fence",
        "protect",
        "--database",
        &db.url,
        "region_totals",
        "--token-column",
        "fence_token",
        "--scope",
        "totals",
        "--owner-column",
        "worker",
        "--lease",
        "reconcile",
    ])
    .await;
    (db, daemon)
}

/// Whether process `pid` is stopped (state `T` in /proc).
fn stopped(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .ok()
        .and_then(|stat| {
            let (_, after_name) = stat.rsplit_once(')')?;
            after_name.trim_start().chars().next()
        })
        == Some('T')
}

/// A row of `region_totals`: region, total, accounts, generation, worker.
type TotalsRow = (String, i64, i64, Option<i64>, Option<String>);
/// A fence audit row: outcome, token, owner, table.
type AuditRow = (String, Option<i64>, Option<String>, Option<String>);

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

async fn reconcile_run(example: Example) {
    let (db, daemon) = shop().await;
    let common = ["--database", db.url.as_str(), "--url", daemon.base.as_str()];

    // The older worker: a one-second lease, then it reads and stops itself.
    let mut older = example
        .command()
        .args(common)
        .args(["--holder", "older", "--ttl", "1", "--pause-after-read"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let pid = older.id().unwrap();
    let mut lines = BufReader::new(older.stdout.take().unwrap()).lines();
    let mut older_out = Vec::new();
    tokio::time::timeout(WAIT, async {
        while let Some(line) = lines.next_line().await.unwrap() {
            let pausing = line.starts_with("pausing");
            older_out.push(line);
            if pausing {
                return;
            }
        }
        panic!("the older worker ended before pausing: {older_out:?}");
    })
    .await
    .expect("the older worker reads and pauses");
    assert_eq!(
        older_out[0], "generation 1: read 5 accounts",
        "{older_out:?}"
    );
    let deadline = Instant::now() + WAIT;
    while !stopped(pid) {
        assert!(Instant::now() < deadline, "the older worker never stopped");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }

    // While it is paused its inputs change: what it read is stale now.
    db.run("UPDATE accounts SET balance_cents = 0 WHERE id = 1")
        .await;

    // The newer worker waits for the older's lease to lapse, takes generation 2 and commits.
    let newer: Output = tokio::time::timeout(
        WAIT,
        example
            .command()
            .args(common)
            .args(["--holder", "newer"])
            .kill_on_drop(true)
            .output(),
    )
    .await
    .expect("the newer worker ends")
    .unwrap();
    let newer_out = text(&newer.stdout);
    assert_eq!(
        newer.status.code(),
        Some(0),
        "{newer_out}{}",
        text(&newer.stderr)
    );
    assert!(
        newer_out.contains("generation 2: read 5 accounts")
            && newer_out.ends_with("generation 2: totals written\n"),
        "{newer_out}"
    );
    assert!(stopped(pid), "the older worker stayed paused meanwhile");

    // The older one wakes and writes what it read before.
    let resumed = std::process::Command::new("kill")
        .args(["-CONT", &pid.to_string()])
        .status()
        .unwrap();
    assert!(resumed.success());
    let rest = tokio::time::timeout(WAIT, async {
        while let Some(line) = lines.next_line().await.unwrap() {
            older_out.push(line);
        }
        older.wait_with_output().await.unwrap()
    })
    .await
    .expect("the older worker ends once resumed");
    let older_err = text(&rest.stderr);
    assert_eq!(
        rest.status.code(),
        Some(EXIT_FENCED),
        "{older_out:?} {older_err}"
    );
    assert!(
        older_err.starts_with("fenced: the update of region eu with generation 1 affected 0 rows")
            && older_err.contains("holds generation 2 of newer"),
        "{older_err}"
    );
    assert!(
        !older_out.iter().any(|line| line.contains("cents")),
        "the older worker reported no total as written: {older_out:?}"
    );

    // The table keeps the newer totals (account 1 at 0 now).
    let mut conn = db.connect().await;
    let UserConn::Pg(pg) = &mut conn else {
        unreachable!("a PostgreSQL database");
    };
    let rows: Vec<TotalsRow> = sqlx::query_as(
        "SELECT region, total_cents, accounts, fence_token, worker FROM region_totals \
         ORDER BY region",
    )
    .fetch_all(&mut *pg)
    .await
    .unwrap();
    let newer_row = |region: &str, total: i64, accounts: i64| {
        (
            region.to_owned(),
            total,
            accounts,
            Some(2),
            Some("newer".to_owned()),
        )
    };
    assert_eq!(
        rows,
        [newer_row("eu", 3050 + 990, 3), newer_row("us", 41500, 2)]
    );
    conn.close().await;

    // The fence's audit holds both attempts: the newer's two rows, the older's refusal.
    let fence = db.fence().await;
    let audit: Vec<AuditRow> = audit_of_scope(&fence, "totals")
        .await
        .into_iter()
        .map(|row| (row.outcome, row.token, row.owner, row.table_name))
        .collect();
    let row = |outcome: &str, token: i64, owner: &str| {
        (
            outcome.to_owned(),
            Some(token),
            Some(owner.to_owned()),
            Some("public.region_totals".to_owned()),
        )
    };
    assert_eq!(
        audit,
        [
            row("accepted", 2, "newer"),
            row("accepted", 2, "newer"),
            row("superseded", 1, "older"),
        ]
    );
    assert!(fence.verify().await.unwrap().intact());
    fence.close().await;
    drop(daemon);
}

#[cfg_attr(
    not(fencewatch_pg),
    ignore = "needs PostgreSQL: set FENCEWATCH_TEST_PG"
)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_python_reconciliation_worker_is_fenced_after_a_pause() {
    if !python_with_psycopg() {
        return;
    }
    reconcile_run(Example::Python).await;
}

#[cfg_attr(
    not(fencewatch_pg),
    ignore = "needs PostgreSQL: set FENCEWATCH_TEST_PG"
)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_rust_reconciliation_worker_is_fenced_after_a_pause() {
    // Built before the clock of any lease starts.
    tokio::task::spawn_blocking(rust_example).await.unwrap();
    reconcile_run(Example::Rust).await;
}
