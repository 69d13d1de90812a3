//! `assets/examples/worker.sh`, the README's worker loop, run for real with `sh` against a real
//! daemon: every batch of its folder is applied exactly once, in order, through a write that
//! never reached the daemon and one whose answer was lost on the way back (a relay between the
//! two cuts them); a batch the daemon refuses as it is, or a lease lost to a newer owner, stops
//! the worker with the batch still in its folder, and the next worker applies it. docs/api.md's
//! excerpt of the loop is the script's own lines.

use crate::helpers::{audit_of, http_client, Backend, Daemon};
use crate::test_db;
use rstest::rstest;
use std::collections::HashMap;
use std::path::Path;
use std::process::{Output, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::process::Command;
use tokio::sync::Notify;

const SCRIPT: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/assets/examples/worker.sh");
const WAIT: Duration = Duration::from_secs(60);

/// What the relay does to the PUT of a given number (from 1, in the order the PUTs arrive).
#[derive(Clone)]
enum Fault {
    /// Closed before anything reaches the daemon: the write is not applied.
    Refuse,
    /// Passed on and decided (the daemon answers after its commit); the answer is dropped.
    LoseAnswer,
    /// Held until `Relay::release`, then passed on.
    Hold,
}

/// A TCP relay in front of the daemon that cuts given PUTs, as a network would, and passes the
/// rest as they are.
struct Relay {
    url: String,
    puts: Arc<AtomicUsize>,
    held: Arc<Notify>,
    release: Arc<Notify>,
}

impl Relay {
    async fn start(daemon: &str, faults: HashMap<usize, Fault>) -> Relay {
        let upstream = daemon.trim_start_matches("http://").to_owned();
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        let puts = Arc::new(AtomicUsize::new(0));
        let (held, release) = (Arc::new(Notify::new()), Arc::new(Notify::new()));
        let faults = Arc::new(faults);
        let relay = Relay {
            url,
            puts: puts.clone(),
            held: held.clone(),
            release: release.clone(),
        };
        tokio::spawn(async move {
            while let Ok((client, _)) = listener.accept().await {
                let (upstream, puts, faults) = (upstream.clone(), puts.clone(), faults.clone());
                let (held, release) = (held.clone(), release.clone());
                tokio::spawn(async move {
                    let _ = relay_one(client, &upstream, &puts, &faults, &held, &release).await;
                });
            }
        });
        relay
    }

    /// Until the PUT to hold has arrived.
    async fn held(&self) {
        tokio::time::timeout(WAIT, self.held.notified())
            .await
            .expect("the PUT to hold arrives");
    }

    /// Passes the held PUT on.
    fn release(&self) {
        self.release.notify_one();
    }

    fn puts(&self) -> usize {
        self.puts.load(Ordering::SeqCst)
    }
}

async fn relay_one(
    mut client: TcpStream,
    upstream: &str,
    puts: &AtomicUsize,
    faults: &HashMap<usize, Fault>,
    held: &Notify,
    release: &Notify,
) -> std::io::Result<()> {
    // The request line comes in the first segment: enough to tell a PUT.
    let mut first = vec![0; 64 * 1024];
    let read = client.read(&mut first).await?;
    first.truncate(read);
    let fault = if first.starts_with(b"PUT ") {
        faults
            .get(&(puts.fetch_add(1, Ordering::SeqCst) + 1))
            .cloned()
    } else {
        None
    };
    match fault {
        Some(Fault::Refuse) => return Ok(()),
        Some(Fault::Hold) => {
            held.notify_one();
            release.notified().await;
        }
        _ => {}
    }
    let mut server = TcpStream::connect(upstream).await?;
    server.write_all(&first).await?;
    if let Some(Fault::LoseAnswer) = fault {
        let (mut client_in, _client_out) = client.split();
        let (mut server_in, mut server_out) = server.split();
        let mut answer = [0; 1];
        // The rest of the request goes on until the daemon starts answering; then both close.
        tokio::select! {
            _ = tokio::io::copy(&mut client_in, &mut server_out) => {}
            _ = server_in.read_exact(&mut answer) => {}
        }
        return Ok(());
    }
    tokio::io::copy_bidirectional(&mut client, &mut server).await?;
    Ok(())
}

/// A folder of batches `0001`, `0002`, … holding `bodies`.
fn spool(bodies: &[&str]) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    for (n, body) in bodies.iter().enumerate() {
        std::fs::write(dir.path().join(format!("{:04}", n + 1)), body).unwrap();
    }
    dir
}

fn left_in(spool: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(spool)
        .unwrap()
        .map(|entry| entry.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

/// `sh worker.sh SPOOL jobs jobs/totals` as `owner`, talking to `url`, with this build's
/// `fencewatch` first on the PATH.
fn worker(spool: &Path, url: &str, owner: &str, ttl: &str) -> Command {
    let bin = Path::new(env!("CARGO_BIN_EXE_fencewatch"))
        .parent()
        .unwrap();
    let path = format!(
        "{}:{}",
        bin.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let mut command = Command::new("sh");
    command
        .arg(SCRIPT)
        .arg(spool)
        .args(["jobs", "jobs/totals"])
        .env("PATH", path)
        .env("FENCEWATCH_URL", url)
        .env("FENCEWATCH_OWNER", owner)
        .env("FENCEWATCH_TTL", ttl)
        .env_remove("FENCEWATCH_API_KEY")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true);
    command
}

async fn finished(command: &mut Command) -> Output {
    tokio::time::timeout(WAIT, command.output())
        .await
        .expect("the worker ends")
        .unwrap()
}

fn stderr(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

/// The audit of jobs/totals as (outcome, idempotency key, token, owner), oldest first.
async fn audit(base: &str) -> Vec<(String, String, i64, String)> {
    audit_of(&http_client(), base, "jobs/totals")
        .await
        .into_iter()
        .map(|row| {
            (
                row["outcome"].as_str().unwrap().to_owned(),
                row["idempotency_key"]
                    .as_str()
                    .unwrap_or_default()
                    .to_owned(),
                row["token"].as_i64().unwrap(),
                row["owner"].as_str().unwrap_or_default().to_owned(),
            )
        })
        .collect()
}

fn row(outcome: &str, batch: &str, token: i64, owner: &str) -> (String, String, i64, String) {
    (
        outcome.into(),
        format!("batch-{batch}"),
        token,
        owner.into(),
    )
}

async fn value(base: &str) -> String {
    http_client()
        .get(format!("{base}/v1/resources/jobs/totals"))
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap()
}

/// A write that never reached the daemon is tried again, not skipped (the loop this replaced
/// went on to the next batch); one applied whose answer was lost is replayed, not applied twice.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_batch_is_applied_once_through_a_refused_write_and_a_lost_answer() {
    let db = test_db!(Backend::Sqlite);
    let daemon = Daemon::spawn(&db, &[]).await;
    let relay = Relay::start(
        &daemon.base,
        HashMap::from([(2, Fault::Refuse), (4, Fault::LoseAnswer)]),
    )
    .await;
    let batches = spool(&["total=10", "total=20", "total=30", "total=40", "total=50"]);

    let out = finished(&mut worker(batches.path(), &relay.url, "w1", "10s")).await;
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(left_in(batches.path()).is_empty());
    // 0002 twice (refused, then applied), 0003 twice (applied, then replayed).
    assert_eq!(relay.puts(), 7);
    assert_eq!(
        audit(&daemon.base).await,
        [
            row("accepted", "0001", 1, "w1"),
            row("accepted", "0002", 1, "w1"),
            row("accepted", "0003", 1, "w1"),
            row("replayed", "0003", 1, "w1"),
            row("accepted", "0004", 1, "w1"),
            row("accepted", "0005", 1, "w1"),
        ]
    );
    assert_eq!(value(&daemon.base).await, "total=50");
}

/// A batch the daemon refuses as it is (too large: 8; its key already used for another body: 5)
/// stops the worker: the batch and those after it stay in the folder, none is skipped.
#[rstest]
#[case::too_large(8)]
#[case::key_used_for_another_request(5)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_batch_refused_as_it_is_stops_the_worker_and_stays(#[case] code: i32) {
    let db = test_db!(Backend::Sqlite);
    let daemon = Daemon::spawn(&db, &["--max-value-bytes", "64"]).await;
    let big = "x".repeat(100);
    let second = if code == 8 { big.as_str() } else { "total=20" };
    let batches = spool(&["total=10", second, "total=30"]);
    if code == 5 {
        // Another request already used batch 0002's key.
        let put = http_client()
            .put(format!("{}/v1/resources/jobs/totals", daemon.base))
            .header("Fencing-Token", "1")
            .header("Idempotency-Key", "batch-0002")
            .body("something else")
            .send()
            .await
            .unwrap();
        assert_eq!(put.status(), 201);
    }

    let out = finished(&mut worker(batches.path(), &daemon.base, "w1", "10s")).await;
    assert_eq!(out.status.code(), Some(code), "{}", stderr(&out));
    assert!(
        stderr(&out).contains(&format!(
            "worker: batch 0002 refused (exit {code}); it stays in"
        )),
        "{}",
        stderr(&out)
    );
    assert_eq!(left_in(batches.path()), ["0002", "0003"]);
    let applied: Vec<String> = audit(&daemon.base)
        .await
        .into_iter()
        .filter(|(outcome, _, _, owner)| outcome == "accepted" && owner == "w1")
        .map(|(_, key, _, _)| key)
        .collect();
    assert_eq!(applied, ["batch-0001"]);
}

/// A worker paused in a write past its lease, while another owner took the lease, is refused:
/// it stops with exit 3 and its batches stay; the next worker applies them.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_worker_that_lost_its_lease_stops_and_the_next_applies_its_batches() {
    let db = test_db!(Backend::Sqlite);
    let daemon = Daemon::spawn(&db, &[]).await;
    let relay = Relay::start(&daemon.base, HashMap::from([(2, Fault::Hold)])).await;
    let batches = spool(&["total=10", "total=20", "total=30"]);

    let first = worker(batches.path(), &relay.url, "w1", "1s")
        .spawn()
        .unwrap();
    relay.held().await;
    // w1's write of 0002 is in flight; its one-second lease lapses and w2 takes the next
    // generation.
    let bin = env!("CARGO_BIN_EXE_fencewatch");
    let deadline = tokio::time::Instant::now() + WAIT;
    loop {
        let out = Command::new(bin)
            .args(["lease", "acquire", "jobs", "--holder", "w2", "--ttl", "60s"])
            .args(["--token-only", "--url", &daemon.base])
            .output()
            .await
            .unwrap();
        if out.status.success() {
            assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), "2");
            break;
        }
        assert_eq!(out.status.code(), Some(6), "{}", stderr(&out));
        assert!(
            tokio::time::Instant::now() < deadline,
            "w1's lease never lapsed"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    relay.release();
    let out = tokio::time::timeout(WAIT, first.wait_with_output())
        .await
        .expect("w1 ends")
        .unwrap();
    assert_eq!(out.status.code(), Some(3), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("worker: lost jobs (exit 3); batch 0002 stays in"),
        "{}",
        stderr(&out)
    );
    assert_eq!(left_in(batches.path()), ["0002", "0003"]);

    // The next worker (w2 again: the holder may acquire anew) takes generation 3 and goes on.
    let out = finished(&mut worker(batches.path(), &daemon.base, "w2", "10s")).await;
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(left_in(batches.path()).is_empty());
    assert_eq!(
        audit(&daemon.base).await,
        [
            row("accepted", "0001", 1, "w1"),
            row("superseded", "0002", 1, "w1"),
            row("accepted", "0002", 3, "w2"),
            row("accepted", "0003", 3, "w2"),
        ]
    );
    assert_eq!(value(&daemon.base).await, "total=30");
}

/// The lines `doc` shows of the loop in its section `heading`: from the line that acquires the
/// lease to the end of that code block.
fn shown_loop(doc: &str, heading: &str) -> Vec<String> {
    let section = &doc[doc
        .find(heading)
        .unwrap_or_else(|| panic!("no {heading:?}"))..];
    let start = section
        .find("\ntoken=$(fencewatch lease acquire")
        .unwrap_or_else(|| panic!("no worker loop after {heading:?}"))
        + 1;
    let end = section[start..].find("```").expect("the block's end") + start;
    section[start..end].lines().map(str::to_owned).collect()
}

/// What docs/api.md shows of the loop is the script's, line for line: the copy a reader sees is
/// the one these tests run (the README runs the script itself).
#[test]
fn the_docs_show_the_scripts_own_loop() {
    let script = std::fs::read_to_string(SCRIPT).unwrap();
    let script_lines: Vec<&str> = script.lines().collect();
    let (doc, heading) = ("docs/api.md", "#### A worker loop");
    let text = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join(doc)).unwrap();
    let excerpt = shown_loop(&text, heading);
    let at = script_lines
        .iter()
        .position(|line| *line == excerpt[0])
        .unwrap();
    assert!(excerpt.len() > 10, "{doc}: {excerpt:?}");
    assert_eq!(
        excerpt,
        script_lines[at..(at + excerpt.len()).min(script_lines.len())],
        "{doc}'s loop differs from worker.sh"
    );
}
