//! `fencewatch serve` as users start it: environment variables, the first line, bad options.

use crate::helpers::Reply;
use std::process::Stdio;
use std::time::Duration;
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::Command;

#[tokio::test]
async fn serve_takes_its_settings_from_the_environment_and_creates_the_database() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("nested.db");
    let mut child = Command::new(env!("CARGO_BIN_EXE_fencewatch"))
        .arg("serve")
        .env("FENCEWATCH_LISTEN", "127.0.0.1:0")
        .env(
            "FENCEWATCH_DATABASE_URL",
            format!("sqlite://{}", file.display()),
        )
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let first = tokio::time::timeout(Duration::from_secs(30), lines.next_line())
        .await
        .unwrap()
        .unwrap()
        .unwrap();
    let base = first
        .strip_prefix("listening on ")
        .expect("the first line announces the address");
    assert!(
        base.starts_with("http://127.0.0.1:") && !base.ends_with(":0"),
        "{base}"
    );
    assert!(file.exists(), "the SQLite file is created on first start");
    // reqwest is built without a crypto provider of its own: a test run alone needs one.
    fencewatch::tls::install_crypto_provider();
    let reply = Reply::from(reqwest::get(format!("{base}/readyz")).await.unwrap()).await;
    assert_eq!(reply.status, 200);
    child.kill().await.unwrap();
}

/// The number of HTTP workers the daemon logs when it starts serving, read from its runtime.
async fn serving_http_workers(extra: &[&str]) -> usize {
    let dir = tempfile::tempdir().unwrap();
    let database = format!("sqlite://{}", dir.path().join("workers.db").display());
    let mut child = Command::new(env!("CARGO_BIN_EXE_fencewatch"))
        .args(["serve", "--listen", "127.0.0.1:0", "--database", &database])
        .args(extra)
        .env("FENCEWATCH_LOG", "info")
        .env("NO_COLOR", "1")
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(child.stderr.take().unwrap()).lines();
    let serving = tokio::time::timeout(Duration::from_secs(30), async {
        while let Some(line) = lines.next_line().await.unwrap() {
            if line.contains("serving") {
                return line;
            }
        }
        panic!("the daemon ended without serving");
    })
    .await
    .unwrap();
    child.kill().await.unwrap();
    // NO_COLOR keeps the fields plain: `http_workers=N`.
    serving
        .split_whitespace()
        .find_map(|field| field.strip_prefix("http_workers="))
        .unwrap_or_else(|| panic!("no http_workers in {serving:?}"))
        .parse()
        .unwrap()
}

/// On SQLite the runtime leaves a core to the write path's own two threads unless told
/// otherwise; `--http-workers` sets it, and zero is refused.
#[tokio::test]
async fn serve_runs_as_many_http_workers_as_it_says() {
    let cores = std::thread::available_parallelism().unwrap().get();
    assert_eq!(serving_http_workers(&[]).await, (cores - 1).max(1));
    assert_eq!(serving_http_workers(&["--http-workers", "3"]).await, 3);
    let refused = Command::new(env!("CARGO_BIN_EXE_fencewatch"))
        .args(["serve", "--listen", "127.0.0.1:0", "--http-workers", "0"])
        .output()
        .await
        .unwrap();
    assert!(!refused.status.success());
    let stderr = String::from_utf8_lossy(&refused.stderr);
    assert!(stderr.contains("--http-workers"), "{stderr}");
}

#[tokio::test]
async fn a_bad_database_url_is_a_clear_error() {
    let output = Command::new(env!("CARGO_BIN_EXE_fencewatch"))
        .args([
            "serve",
            "--listen",
            "127.0.0.1:0",
            "--database",
            "mysql://nobody@localhost/x",
        ])
        .output()
        .await
        .unwrap();
    assert!(!output.status.success());
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("unsupported database URL") && stderr.contains("sqlite://PATH"),
        "{stderr}"
    );
    assert!(
        output.stdout.is_empty(),
        "nothing is announced when the daemon cannot start"
    );
}

/// Runs the CLI against `base` with `stdin`; returns (exit code, stdout, stderr).
async fn fencewatch(base: &str, args: &[&str], stdin: &str) -> (i32, String, String) {
    use tokio::io::AsyncWriteExt;
    let mut child = Command::new(env!("CARGO_BIN_EXE_fencewatch"))
        .args(args)
        .args(["--url", base])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut input = child.stdin.take().unwrap();
    input.write_all(stdin.as_bytes()).await.unwrap();
    drop(input);
    let output = child.wait_with_output().await.unwrap();
    (
        output.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&output.stdout).trim().to_owned(),
        String::from_utf8_lossy(&output.stderr).trim().to_owned(),
    )
}

/// The worker loop of the README, with the CLI: acquire → write with the token → renew; a
/// replacement takes over; the old worker's write is refused; every kind of answer has its
/// exit code.
#[rstest::rstest]
#[case::sqlite(crate::helpers::Backend::Sqlite)]
#[cfg_attr(
    not(fencewatch_pg),
    ignore = "needs PostgreSQL: set FENCEWATCH_TEST_PG"
)]
#[case::postgres(crate::helpers::Backend::Postgres)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_worker_loop_with_the_cli(#[case] backend: crate::helpers::Backend) {
    let db = crate::test_db!(backend);
    let daemon = crate::helpers::Daemon::spawn(&db, &[]).await;
    let base_url = daemon.base.clone();
    let base = base_url.as_str();

    let (code, token, _) = fencewatch(
        base,
        &[
            "lease",
            "acquire",
            "jobs",
            "--holder",
            "w1",
            "--ttl",
            "60s",
            "--token-only",
        ],
        "",
    )
    .await;
    assert_eq!((code, token.as_str()), (0, "1"));
    let (code, out, _) = fencewatch(
        base,
        &[
            "write",
            "jobs/totals",
            "--token",
            "1",
            "--lease",
            "jobs",
            "--owner",
            "w1",
            "--idempotency-key",
            "op-1",
        ],
        "total=10",
    )
    .await;
    assert_eq!(code, 0, "{out}");
    assert_eq!(
        serde_json::from_str::<serde_json::Value>(&out).unwrap()["outcome"],
        "accepted"
    );
    let (code, out, _) = fencewatch(
        base,
        &[
            "lease", "renew", "jobs", "--holder", "w1", "--token", "1", "--ttl", "90s",
        ],
        "",
    )
    .await;
    assert_eq!(code, 0, "{out}");

    // Someone else cannot take it while it is held.
    let (code, _, err) = fencewatch(
        base,
        &["lease", "acquire", "jobs", "--holder", "w2", "--ttl", "60s"],
        "",
    )
    .await;
    assert_eq!(code, 6, "{err}");
    assert!(err.contains("lease-held"), "{err}");

    // w1 pauses past its lease (here: releases it); w2 takes over with generation 2.
    assert_eq!(
        fencewatch(
            base,
            &["lease", "release", "jobs", "--holder", "w1", "--token", "1"],
            ""
        )
        .await
        .0,
        0
    );
    let (code, token, _) = fencewatch(
        base,
        &[
            "lease",
            "acquire",
            "jobs",
            "--holder",
            "w2",
            "--ttl",
            "60s",
            "--token-only",
        ],
        "",
    )
    .await;
    assert_eq!((code, token.as_str()), (0, "2"));

    // The old worker resumes: renew and write both fail, each with its own code.
    assert_eq!(
        fencewatch(
            base,
            &["lease", "renew", "jobs", "--holder", "w1", "--token", "1"],
            ""
        )
        .await
        .0,
        6
    );
    let (code, _, err) = fencewatch(
        base,
        &["write", "jobs/other", "--token", "1", "--lease", "jobs"],
        "stale",
    )
    .await;
    assert_eq!(
        code, 3,
        "superseded even on a resource that never saw 2: {err}"
    );
    assert!(err.contains("superseded"), "{err}");
    // Other answers.
    assert_eq!(
        fencewatch(
            base,
            &["write", "jobs/totals", "--token", "5", "--lease", "jobs"],
            "forged"
        )
        .await
        .0,
        7
    );
    assert_eq!(
        fencewatch(
            base,
            &["write", "jobs/totals", "--token", "2", "--if-match", "0"],
            "x"
        )
        .await
        .0,
        4
    );
    assert_eq!(
        fencewatch(
            base,
            &[
                "write",
                "jobs/totals",
                "--token",
                "1",
                "--idempotency-key",
                "op-1"
            ],
            "other"
        )
        .await
        .0,
        5
    );
    assert_eq!(
        fencewatch(base, &["write", "jobs/totals", "--token", "abc"], "x")
            .await
            .0,
        8
    );
    assert_eq!(fencewatch(base, &["lease", "show", "nope"], "").await.0, 9);
    let (code, out, _) = fencewatch(base, &["lease", "show", "jobs"], "").await;
    assert_eq!(code, 0);
    let shown: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(
        (
            shown["holder"].as_str(),
            shown["token"].as_i64(),
            shown["state"].as_str()
        ),
        (Some("w2"), Some(2), Some("held"))
    );
    // The new holder writes; the value is its.
    assert_eq!(
        fencewatch(
            base,
            &["write", "jobs/totals", "--token", "2", "--lease", "jobs"],
            "total=12"
        )
        .await
        .0,
        0
    );
    fencewatch::tls::install_crypto_provider();
    let value = Reply::from(
        reqwest::get(format!("{base}/v1/resources/jobs/totals"))
            .await
            .unwrap(),
    )
    .await;
    assert_eq!(value.body, b"total=12");
    daemon.kill().await;

    // Nobody listening, and a bad command line.
    assert_eq!(
        fencewatch("http://127.0.0.1:9", &["lease", "show", "jobs"], "")
            .await
            .0,
        1
    );
    assert_eq!(fencewatch(base, &["write", "k"], "").await.0, 2);
}

/// Shell completions and the manual page come from the same command-line definition.
#[tokio::test]
async fn completions_and_the_manual_page() {
    let run = |args: &'static [&'static str]| async move {
        let output = Command::new(env!("CARGO_BIN_EXE_fencewatch"))
            .args(args)
            .output()
            .await
            .unwrap();
        assert!(output.status.success(), "{args:?}");
        String::from_utf8(output.stdout).unwrap()
    };
    assert!(run(&["completions", "bash"])
        .await
        .contains("_fencewatch()"));
    assert!(run(&["completions", "zsh"])
        .await
        .starts_with("#compdef fencewatch"));
    assert!(run(&["completions", "fish"])
        .await
        .contains("complete -c fencewatch"));
    let man = run(&["man"]).await;
    assert!(man.contains(".TH fencewatch 1"), "{man}");
    assert!(man.contains("serve"), "the subcommands are listed");
}

/// Logs redirected to a file carry no colour codes; `--log-format json` gives one JSON object a
/// line.
#[tokio::test]
async fn logs_are_plain_off_a_terminal_and_json_on_request() {
    let dir = tempfile::tempdir().unwrap();
    for (format, db) in [("text", "a.db"), ("json", "b.db")] {
        let url = format!("sqlite://{}", dir.path().join(db).display());
        let mut child = Command::new(env!("CARGO_BIN_EXE_fencewatch"))
            .args(["serve", "--listen", "127.0.0.1:0", "--database", &url])
            .args(["--log-format", format])
            .env_remove("FENCEWATCH_LOG")
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .unwrap();
        let stdout = child.stdout.take().unwrap();
        let mut lines = BufReader::new(stdout).lines();
        let first = lines.next_line().await.unwrap().unwrap();
        assert!(first.starts_with("listening on http://"), "{first}");
        let pid = child.id().unwrap().to_string();
        std::process::Command::new("kill")
            .args(["-TERM", &pid])
            .status()
            .unwrap();
        let output = child.wait_with_output().await.unwrap();
        assert!(output.status.success());
        let stderr = String::from_utf8(output.stderr).unwrap();
        assert!(stderr.contains("serving"), "{stderr}");
        assert!(!stderr.contains('\u{1b}'), "no escape codes: {stderr:?}");
        if format == "json" {
            for line in stderr.lines() {
                let entry: serde_json::Value = serde_json::from_str(line)
                    .unwrap_or_else(|e| panic!("{line:?} is not JSON: {e}"));
                assert!(entry["level"].is_string(), "{line}");
            }
        }
    }
}

/// A daemon stopped with SIGTERM leaves its SQLite file whole on its own: the WAL is copied in
/// and removed, so that the file can be copied, kept or mailed without its `-wal` beside it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_clean_stop_leaves_no_sqlite_wal_behind() {
    let db = crate::helpers::TestDb::new(crate::helpers::Backend::Sqlite).await;
    let daemon = crate::helpers::Daemon::spawn(&db, &[]).await;
    let client = crate::helpers::http_client();
    for token in 1..=200 {
        let reply = crate::helpers::Put::new(
            &client,
            format!("{}/v1/resources/wal/{}", daemon.base, token % 20),
        )
        .token(token)
        .body("x".repeat(2000))
        .send()
        .await;
        assert!(reply.status.is_success());
    }
    let file = db.url.strip_prefix("sqlite://").unwrap().to_owned();
    let wal = std::path::PathBuf::from(format!("{file}-wal"));
    assert!(wal.exists(), "the running daemon writes through a WAL");
    assert!(daemon.terminate().await);
    let left = std::fs::metadata(&wal).map_or(0, |m| m.len());
    assert_eq!(left, 0, "{} bytes of WAL left behind", left);
    // Everything acknowledged is in the file itself, read as if no WAL could exist.
    use sqlx::Connection;
    let mut conn = sqlx::SqliteConnection::connect(&format!("sqlite://{file}?immutable=1"))
        .await
        .unwrap();
    let rows: i64 = sqlx::query_scalar("SELECT count(*) FROM audit")
        .fetch_one(&mut conn)
        .await
        .unwrap();
    assert_eq!(rows, 200);
    conn.close().await.ok();
}

/// `fencewatch audit log | head`: a reader that goes away is not an error. Each command that
/// prints a list stops quietly with exit 0, whether the reader closed before the first line or
/// after it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn list_commands_stop_quietly_when_their_reader_goes_away() {
    let db = crate::helpers::TestDb::new(crate::helpers::Backend::Sqlite).await;
    let daemon = crate::helpers::Daemon::spawn(&db, &[]).await;
    let client = crate::helpers::http_client();
    for token in [2, 1, 3, 1] {
        let put = crate::helpers::Put::new(&client, format!("{}/v1/resources/piped", daemon.base));
        put.token(token).body("x").send().await;
    }
    assert!(daemon.terminate().await);
    let database = ["--database", db.url.as_str()];
    let commands: [&[&str]; 8] = [
        &["audit", "log"],
        &["audit", "timeline", "piped"],
        &["audit", "export", "--format", "csv"],
        &["audit", "incidents"],
        &["audit", "verify"],
        &["audit", "summary", "--since", "1d"],
        &["completions", "bash"],
        &["man"],
    ];
    for command in commands {
        let (reader, writer) = std::io::pipe().unwrap();
        // Closed before the command starts: its first write meets a pipe with no reader.
        drop(reader);
        let mut run = Command::new(env!("CARGO_BIN_EXE_fencewatch"));
        run.args(command);
        if command[0] == "audit" {
            run.args(database);
        }
        // Spawned, not `output()`: that would capture stdout in a pipe of its own.
        let output = run
            .stdout(Stdio::from(writer))
            .stderr(Stdio::piped())
            .spawn()
            .unwrap()
            .wait_with_output()
            .await
            .unwrap();
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert_eq!(output.status.code(), Some(0), "{command:?}: {stderr}");
        assert!(stderr.is_empty(), "{command:?}: {stderr}");
    }
}
