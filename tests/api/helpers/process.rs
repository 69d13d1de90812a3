//! Real processes: the daemon as users run it, and the programs the tests run beside it.

use super::db::TestDb;
use std::process::Stdio;
use std::time::Duration;
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::{Child, Command};

/// The daemon as a real process, as users run it.
///
/// `Daemon::spawn(&db, &["--flag", "value"])` for the usual one; `Daemon::on(url)` for one on a
/// database URL of the test's own making (through a proxy, say), logging at another level, or
/// with its log kept for the test to read:
///
/// ```ignore
/// let (daemon, log) = Daemon::on(&db.url)
///     .args(&["--schema", "fw"])   // flags after `serve --listen … --database …`
///     .log_level("info")           // `FENCEWATCH_LOG` (warn)
///     .spawn_logged()              // or `spawn()`: no log kept, it goes to the test's stderr
///     .await;
/// ```
pub struct Daemon {
    pub child: Child,
    pub base: String,
}

/// A `Daemon` to be, made by `Daemon::on` and started by `spawn` or `spawn_logged`.
#[must_use = "nothing runs until `spawn` or `spawn_logged`"]
pub struct DaemonBuilder {
    database_url: String,
    args: Vec<String>,
    level: String,
}

impl Daemon {
    /// `fencewatch serve` on `db` with these flags besides the listen address and the database.
    pub async fn spawn(db: &TestDb, extra: &[&str]) -> Daemon {
        Self::on(&db.url).args(extra).spawn().await
    }

    /// A daemon on `database_url`, with what the builder sets; see `Daemon`.
    pub fn on(database_url: &str) -> DaemonBuilder {
        DaemonBuilder {
            database_url: database_url.to_owned(),
            args: Vec::new(),
            level: "warn".to_owned(),
        }
    }

    pub fn signal(&self, name: &str) {
        let pid = self.child.id().expect("running").to_string();
        let status = std::process::Command::new("kill")
            .args([&format!("-{name}"), &pid])
            .status()
            .expect("run kill");
        assert!(status.success());
    }

    pub async fn kill(mut self) {
        self.child.kill().await.expect("SIGKILL");
    }

    /// Sends SIGTERM and returns whether it exited cleanly.
    pub async fn terminate(mut self) -> bool {
        self.signal("TERM");
        tokio::time::timeout(Duration::from_secs(30), self.child.wait())
            .await
            .expect("stops within 30 s of SIGTERM")
            .expect("wait")
            .success()
    }
}

impl DaemonBuilder {
    /// Flags besides the listen address and the database (`--db-max-connections 8`).
    pub fn args(mut self, extra: &[&str]) -> Self {
        self.args.extend(extra.iter().map(|arg| (*arg).to_owned()));
        self
    }

    /// What the daemon logs (`FENCEWATCH_LOG`): `warn` unless set.
    pub fn log_level(mut self, level: &str) -> Self {
        self.level = level.to_owned();
        self
    }

    /// Starts it, its log going straight to the test's stderr, and waits for its address.
    pub async fn spawn(self) -> Daemon {
        self.start(Stdio::inherit()).await
    }

    /// Starts it like `spawn`, with what it logs also kept for the test to read.
    pub async fn spawn_logged(self) -> (Daemon, DaemonLog) {
        let mut daemon = self.start(Stdio::piped()).await;
        let log = DaemonLog::default();
        let stderr = daemon.child.stderr.take().expect("stderr");
        let kept = log.clone();
        tokio::spawn(async move {
            let mut lines = BufReader::new(stderr).lines();
            while let Ok(Some(line)) = lines.next_line().await {
                eprintln!("{line}");
                kept.0.lock().expect("log").push(line);
            }
        });
        (daemon, log)
    }

    async fn start(self, stderr: Stdio) -> Daemon {
        let mut child = Command::new(env!("CARGO_BIN_EXE_fencewatch"))
            .args([
                "serve",
                "--listen",
                "127.0.0.1:0",
                "--database",
                &self.database_url,
                "--db-max-connections",
                "8",
            ])
            .args(&self.args)
            .env("FENCEWATCH_LOG", &self.level)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(stderr)
            .kill_on_drop(true)
            .spawn()
            .expect("start fencewatch serve");
        let stdout = child.stdout.take().expect("stdout");
        let mut lines = BufReader::new(stdout).lines();
        let first = tokio::time::timeout(Duration::from_secs(30), lines.next_line())
            .await
            .expect("the daemon announces its address within 30 s")
            .expect("read stdout")
            .expect("a first line");
        let base = first
            .strip_prefix("listening on ")
            .unwrap_or_else(|| panic!("unexpected first line {first:?}"))
            .to_owned();
        Daemon { child, base }
    }
}

/// What a daemon started by `DaemonBuilder::spawn_logged` has logged so far, a line each.
#[derive(Clone, Default)]
pub struct DaemonLog(std::sync::Arc<std::sync::Mutex<Vec<String>>>);

impl DaemonLog {
    /// The lines that contain every one of `parts`.
    pub fn lines_with(&self, parts: &[&str]) -> Vec<String> {
        self.0
            .lock()
            .expect("log")
            .iter()
            .filter(|line| parts.iter().all(|part| line.contains(part)))
            .cloned()
            .collect()
    }
}

/// not, the test is skipped, saying so, unless `FENCEWATCH_REQUIRE_PEERS=1` makes that a failure.
pub fn peer(path: &str) -> Option<String> {
    let runs = std::process::Command::new(path)
        .arg("--version")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|status| status.success());
    if !runs {
        assert!(
            std::env::var("FENCEWATCH_REQUIRE_PEERS").as_deref() != Ok("1"),
            "FENCEWATCH_REQUIRE_PEERS=1 but {path} is not installed"
        );
        eprintln!("skipping: {path} is not installed");
        return None;
    }
    Some(path.to_owned())
}

/// Runs `fencewatch bench ARGS` (with `--json` among them) to its end, at most `within`, and
/// answers its report; a bench that fails fails the test with its stderr.
pub async fn bench_report(args: &[&str], within: Duration) -> serde_json::Value {
    let output = tokio::time::timeout(
        within,
        Command::new(env!("CARGO_BIN_EXE_fencewatch"))
            .arg("bench")
            .args(args)
            .output(),
    )
    .await
    .expect("the bench ends after its duration")
    .expect("run fencewatch bench");
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    serde_json::from_slice(&output.stdout).expect("the bench's report is JSON")
}

/// Runs `fencewatch ARGS` to its end, logging at `warn`; returns the exit code, stdout and
/// stderr.
pub async fn fencewatch(args: &[&str]) -> (i32, String, String) {
    let output = Command::new(env!("CARGO_BIN_EXE_fencewatch"))
        .args(args)
        .env("FENCEWATCH_LOG", "warn")
        .output()
        .await
        .unwrap();
    (
        output.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&output.stdout).into_owned(),
        String::from_utf8_lossy(&output.stderr).into_owned(),
    )
}
