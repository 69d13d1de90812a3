//! The README's shell blocks, pasted in order into one fresh shell, do what their comments say.
//!
//! Two lines are swapped for this machine's, and only these: the release build (the binary under
//! test is put on the PATH instead of building another) and the scratch database's URL.

use crate::helpers::{Backend, UserDb};
use std::path::Path;
use std::process::Stdio;
use std::time::Duration;

const BUILD: &str = r#"cargo build --release && export PATH="$PWD/target/release:$PATH"   # fencewatch on this shell's PATH"#;

/// The sections whose blocks a newcomer pastes, in the README's order.
const PASTED: [&str; 3] = ["Try it", "Fence your own tables", "A worker loop"];

/// Blocks that are not pasted here: the first screen's and the Tests section's `cargo` commands,
/// which are what CI (`.ci/run`) itself runs.
const RUN_BY_CI: [&str; 2] = ["fencewatch", "Tests"];

struct Block {
    section: String,
    text: String,
}

fn shell_blocks(readme: &str) -> Vec<Block> {
    let mut blocks = Vec::new();
    let mut section = String::new();
    let mut lines = readme.lines();
    while let Some(line) = lines.next() {
        if let Some(heading) = line.strip_prefix("## ").or(line.strip_prefix("# ")) {
            section = heading.trim().to_owned();
        } else if line.trim() == "```sh" {
            let text: Vec<&str> = lines.by_ref().take_while(|l| l.trim() != "```").collect();
            blocks.push(Block {
                section: section.clone(),
                text: text.join("\n"),
            });
        }
    }
    blocks
}

/// The output of each pasted block, in order.
fn outputs_by_block(transcript: &str, count: usize) -> Vec<String> {
    let mut parts: Vec<String> = transcript
        .split("=== block ===\n")
        .map(str::to_owned)
        .collect();
    parts.remove(0);
    assert_eq!(parts.len(), count, "{transcript}");
    parts
}

#[cfg_attr(not(fencewatch_pg), ignore = "needs FENCEWATCH_TEST_PG")]
#[tokio::test]
async fn every_block_of_the_readme_runs_as_pasted_in_order() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let readme = std::fs::read_to_string(root.join("README.md")).unwrap();
    let blocks = shell_blocks(&readme);
    // Every shell block is either pasted here or one of CI's own commands: a new block cannot
    // go untested by accident.
    for block in &blocks {
        assert!(
            PASTED.contains(&block.section.as_str()) || RUN_BY_CI.contains(&block.section.as_str()),
            "a shell block under {:?} that no test runs",
            block.section
        );
    }
    let pasted: Vec<&Block> = blocks
        .iter()
        .filter(|b| PASTED.contains(&b.section.as_str()))
        .collect();
    assert_eq!(pasted.len(), 4, "Try it (2), own tables, worker loop");

    // A port of its own would be the test's invention: the README's daemon listens on 7420.
    assert!(
        std::net::TcpListener::bind("127.0.0.1:7420").is_ok(),
        "port 7420 is taken: the README's daemon could not listen"
    );
    let shop = UserDb::new(Backend::Postgres).await;
    let binary_dir = Path::new(env!("CARGO_BIN_EXE_fencewatch"))
        .parent()
        .unwrap();
    let mut script = String::new();
    for block in &pasted {
        script.push_str("echo '=== block ==='\n");
        let mut text = block.text.clone();
        if text.contains(BUILD) {
            text = text.replace(
                BUILD,
                &format!("export PATH=\"{}:$PATH\"", binary_dir.display()),
            );
        }
        let db_lines: Vec<&str> = text.lines().filter(|l| l.starts_with("DB=")).collect();
        if let [line] = db_lines[..] {
            text = text.replace(line, &format!("DB='{}'", shop.url));
        }
        script.push_str(&text);
        script.push('\n');
    }
    assert!(
        script.contains("export PATH=\""),
        "the README's build line changed"
    );
    assert!(script.contains(&shop.url), "the README's DB= line changed");

    let dir = tempfile::tempdir().unwrap();
    std::os::unix::fs::symlink(root.join("assets"), dir.path().join("assets")).unwrap();
    // Into files: the daemon the README starts in the background keeps the shell's output open
    // until it stops, so the end of the output is not the end of the blocks.
    let stdout_path = dir.path().join("stdout");
    let stderr_path = dir.path().join("stderr");
    let mut shell = tokio::process::Command::new("bash");
    shell
        .arg("-c")
        .arg(&script)
        .current_dir(dir.path())
        .env_remove("FENCEWATCH_DATABASE_URL")
        .env_remove("FENCEWATCH_URL")
        .env_remove("FENCEWATCH_LISTEN")
        .stdin(Stdio::null())
        .stdout(std::fs::File::create(&stdout_path).unwrap())
        .stderr(std::fs::File::create(&stderr_path).unwrap())
        .process_group(0)
        .kill_on_drop(true);
    let mut child = shell.spawn().unwrap();
    let group = child.id().unwrap();
    let run = tokio::time::timeout(Duration::from_secs(120), child.wait()).await;
    // The daemon started in the background belongs to the shell's process group.
    let stopped = std::process::Command::new("kill")
        .args(["-s", "TERM", "--", &format!("-{group}")])
        .status()
        .unwrap();
    let transcript = std::fs::read_to_string(&stdout_path).unwrap();
    let errors = std::fs::read_to_string(&stderr_path).unwrap();
    let context = format!("stdout:\n{transcript}\nstderr:\n{errors}");
    let status =
        run.unwrap_or_else(|_| panic!("the blocks did not finish in 2 minutes\n{context}"));
    assert!(status.unwrap().success(), "{context}");
    assert!(
        stopped.success(),
        "the README's daemon was still running at the end"
    );
    let outputs = outputs_by_block(&transcript, pasted.len());

    // Try it: ready, then 201, 200, 409 stale, the value at revision 2 with token 8, the audit.
    // (The daemon's own first line, `listening on …`, may come anywhere among them.)
    let try_it: Vec<&str> = outputs[0]
        .lines()
        .filter(|line| !line.starts_with("listening on "))
        .collect();
    assert_eq!(try_it[0], r#"{"status":"ready"}"#, "{context}");
    let puts: Vec<&str> = try_it
        .iter()
        .copied()
        .filter(|l| l.starts_with('{') && !l.ends_with('}'))
        .collect();
    assert_eq!(puts.len(), 3, "{context}");
    assert!(
        puts[0].contains(r#""outcome":"accepted""#) && puts[0].ends_with(" 201"),
        "{context}"
    );
    assert!(
        puts[1].contains(r#""outcome":"accepted""#) && puts[1].ends_with(" 200"),
        "{context}"
    );
    assert!(
        puts[2].contains(r#""outcome":"stale""#)
            && puts[2].contains(r#""highest_token":8"#)
            && puts[2].ends_with(" 409"),
        "{context}"
    );
    let shown = outputs[0].to_ascii_lowercase();
    assert!(
        shown.contains("etag: \"2\"") && shown.contains("fencing-token: 8"),
        "{context}"
    );
    assert!(
        outputs[0].contains("\nreplacement completed\n"),
        "{context}"
    );
    let audit = try_it.last().unwrap();
    assert!(audit.starts_with(r#"{"entries":[{"id":3,"#), "{context}");
    assert_eq!(
        audit.matches(r#""resource":"accounts/totals""#).count(),
        3,
        "{context}"
    );
    // Nothing but the refused write's answer on stderr: no progress meters, no errors.
    let problems: Vec<&str> = errors.lines().collect();
    assert_eq!(problems.len(), 1, "{context}");
    assert!(
        problems[0].contains(r#""outcome":"superseded""#),
        "{context}"
    );

    // Leases: generations 1 and 2, the superseded write refused with exit 3.
    let leases: Vec<&str> = outputs[1].lines().collect();
    assert_eq!(leases, ["1", "2", "exit 3"], "{context}");

    // Own tables: 8 written, 7 refused without an error, the overlap found by the audit.
    assert!(outputs[2].contains("\nUPDATE 1\nUPDATE 0\n"), "{context}");
    let incident: Vec<&str> = outputs[2]
        .lines()
        .last()
        .unwrap_or_default()
        .split_whitespace()
        .collect();
    // ID RESOURCE STALE NEW …: the scope `eu` of order 1, generation 7 after 8.
    assert_eq!(incident[1..4], ["eu", "7", "8"], "{context}");

    // The worker loop: every batch applied, the spool empty.
    let worker: Vec<&str> = outputs[3].lines().collect();
    assert_eq!(worker.len(), 3, "{context}");
    assert!(
        worker[..2]
            .iter()
            .all(|l| l.contains(r#""outcome":"accepted""#)),
        "{context}"
    );
    assert_eq!(worker[2], "exit 0", "{context}");
    assert!(dir.path().join("fencewatch.log").is_file());
    assert!(dir
        .path()
        .join("spool")
        .read_dir()
        .unwrap()
        .next()
        .is_none());
}
