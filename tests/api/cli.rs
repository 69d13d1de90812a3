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
    let reply = Reply::from(reqwest::get(format!("{base}/readyz")).await.unwrap()).await;
    assert_eq!(reply.status, 200);
    child.kill().await.unwrap();
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
