//! The witnessed audit (`serve --audit-signing-key`, `audit witness`, `audit prune --key`,
//! `audit verify --witness --public-key`): signed checkpoints kept outside the database catch
//! what someone who can rewrite the database hides from the rows alone (a deleted tail with its
//! head moved back, an erased resource, a forged prune, rewritten and re-chained rows, an
//! emptied audit), while an honest prune still verifies and the signer refuses to vouch for a
//! tampered audit. A witnessed run reads only the rows after the signed heads; every case is
//! also run with `--full` (every row) and must find the same.

use crate::both_backends;
use crate::helpers::{fencewatch, http_client, Backend, Daemon, DaemonLog, Put, RawPool, TestDb};
use crate::{on_raw, test_db};
use fencewatch::domain::chain::row_hash;
use fencewatch::domain::witness::{start_message, SigningKey};
use fencewatch::store::{AuditFilter, AuditRecord, AuditWalk, StoreError};
use rstest_reuse::apply;
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// How often the test daemons sign: short, so that a test waits little for a checkpoint.
const INTERVAL: &str = "200ms";
/// The writes every case starts from: resource and accepted writes (generations 1 to n).
const WRITES: [(&str, i64); 3] = [("r1", 4), ("r2", 3), ("r3", 2)];

/// A database, and a witness's key pair and file in a folder of the test's own.
struct Witness {
    db: TestDb,
    backend: Backend,
    dir: tempfile::TempDir,
    key: PathBuf,
    public: PathBuf,
    file: PathBuf,
}

/// One `audit verify` run held to the witness: its exit code, its JSON report and its text.
struct Verdict {
    code: i32,
    report: Value,
    text: String,
}

impl Witness {
    async fn new(backend: Backend) -> Self {
        let db = test_db!(backend);
        let dir = tempfile::tempdir().unwrap();
        let key = keygen(dir.path(), "witness.key").await;
        let public = pub_path(&key);
        let file = dir.path().join("witness.jsonl");
        Self {
            db,
            backend,
            dir,
            key,
            public,
            file,
        }
    }

    /// The daemon signing every `INTERVAL` into the witness file, its log kept.
    async fn daemon(&self) -> (Daemon, DaemonLog) {
        Daemon::on(&self.db.url)
            .args(&[
                "--audit-signing-key",
                path(&self.key),
                "--witness-file",
                path(&self.file),
                "--witness-interval",
                INTERVAL,
            ])
            .spawn_logged()
            .await
    }

    /// `fencewatch audit --database URL ARGS`: exit code, stdout, stderr.
    async fn audit(&self, args: &[&str]) -> (i32, String, String) {
        let mut all = vec!["audit", "--database", &self.db.url];
        all.extend_from_slice(args);
        fencewatch(&all).await
    }

    /// `audit verify` without the witness: exit code and stdout.
    async fn verify_plain(&self) -> (i32, String) {
        let (code, stdout, stderr) = self.audit(&["verify"]).await;
        assert!(!stderr.contains("error"), "{stderr}");
        (code, stdout)
    }

    /// `audit verify --witness FILE --public-key PUB [EXTRA]`, as JSON and as text.
    async fn verify_witnessed_with(&self, extra: &[&str]) -> Verdict {
        let base = [
            &[
                "verify",
                "--witness",
                path(&self.file),
                "--public-key",
                path(&self.public),
            ],
            extra,
        ]
        .concat();
        let (code, stdout, stderr) = self.audit(&[&base[..], &["--json"]].concat()).await;
        assert!(!stderr.contains("error"), "{stderr}");
        let report: Value = serde_json::from_str(&stdout)
            .unwrap_or_else(|e| panic!("not a JSON report ({e}): {stdout}"));
        let (text_code, text, _) = self.audit(&base).await;
        assert_eq!(code, text_code, "{stdout}\n{text}");
        Verdict { code, report, text }
    }

    /// The run from the signed heads (the default): only the rows after them.
    async fn verify_incremental(&self) -> Verdict {
        self.verify_witnessed_with(&[]).await
    }

    /// `--full`: every row, held to the signed heads.
    async fn verify_full(&self) -> Verdict {
        self.verify_witnessed_with(&["--full"]).await
    }

    /// The incremental run, checked to find what the full one finds: the same exit code and
    /// breaches of the same resources at the same rows and positions.
    async fn verify_witnessed(&self) -> Verdict {
        let incremental = self.verify_incremental().await;
        let full = self.verify_full().await;
        let found = |verdict: &Verdict| -> Vec<_> {
            breaches(&verdict.report)
                .into_iter()
                .map(|(resource, id, seq, _)| (resource, id, seq))
                .collect()
        };
        assert_eq!(
            (incremental.code, found(&incremental)),
            (full.code, found(&full)),
            "incremental:\n{}\nfull:\n{}",
            incremental.text,
            full.text
        );
        incremental
    }

    /// The witness file's lines.
    fn lines(&self) -> Vec<String> {
        witness_lines(&self.file)
    }

    /// `SELECT COUNT(*) FROM audit_witness`.
    async fn kept_checkpoints(&self) -> i64 {
        let pool = self.db.raw_pool().await;
        let count = on_raw!(&pool, h => sqlx::query_scalar::<_, i64>(
            "SELECT COUNT(*) FROM audit_witness",
        )
        .fetch_one(h)
        .await
        .unwrap());
        pool.close().await;
        count
    }

    /// Runs each statement on the test's own connection, behind the daemon's back.
    async fn tamper(&self, statements: &[String]) {
        let pool = self.db.raw_pool().await;
        for sql in statements {
            on_raw!(&pool, h => sqlx::query(sql).execute(h).await
                .unwrap_or_else(|e| panic!("{sql}: {e}")).rows_affected());
        }
        pool.close().await;
    }

    /// The audit keeps digests as bytes, the heads as hex: `column` as hex text.
    fn hex(&self, column: &str) -> String {
        match self.backend {
            Backend::Sqlite => format!("lower(hex({column}))"),
            Backend::Postgres => format!("encode({column}, 'hex')"),
        }
    }

    /// Deletes `resource`'s rows after position `keep` and sets its head back onto the row
    /// there, and the resource's state back to what that row records: a chain and a state that
    /// verify whole, only shorter than the one signed.
    async fn cut_tail(&self, resource: &str, keep: i64) {
        let hex = self.hex("hash");
        self.tamper(&[
            format!(
                "UPDATE resources SET chain_seq = {keep}, chain_hash = (SELECT {hex} FROM audit \
                 WHERE resource = '{resource}' AND seq = {keep}), \
                 highest_token = (SELECT highest_token FROM audit \
                 WHERE resource = '{resource}' AND seq = {keep}), \
                 revision = (SELECT revision FROM audit \
                 WHERE resource = '{resource}' AND seq = {keep}) WHERE key = '{resource}'"
            ),
            format!("DELETE FROM audit WHERE resource = '{resource}' AND seq > {keep}"),
        ])
        .await;
    }

    /// Every row of `resource`, oldest first, as the library reads them.
    async fn records(&self, resource: &str) -> Vec<AuditRecord> {
        let store = self.db.store().await;
        let mut rows = Vec::new();
        let filter = AuditFilter {
            resource: Some(resource.to_owned()),
            ..AuditFilter::default()
        };
        store
            .each_audit_record(&filter, AuditWalk::ALL, |row| {
                rows.push(row.clone());
                Ok::<(), StoreError>(())
            })
            .await
            .unwrap();
        store.close().await;
        rows
    }
}

fn path(path: &Path) -> &str {
    path.to_str().expect("a UTF-8 temporary path")
}

fn pub_path(key: &Path) -> PathBuf {
    PathBuf::from(format!("{}.pub", path(key)))
}

/// `audit keygen --out DIR/NAME`; the private key's path.
async fn keygen(dir: &Path, name: &str) -> PathBuf {
    let key = dir.join(name);
    let (code, stdout, stderr) = fencewatch(&["audit", "keygen", "--out", path(&key)]).await;
    assert_eq!(code, 0, "{stdout}{stderr}");
    assert!(key.exists() && pub_path(&key).exists(), "{stdout}");
    key
}

fn witness_lines(file: &Path) -> Vec<String> {
    std::fs::read_to_string(file)
        .unwrap_or_default()
        .lines()
        .filter(|line| !line.trim().is_empty())
        .map(str::to_owned)
        .collect()
}

/// `count` accepted writes on `resource` from generation `from` on; their audit ids.
async fn write(base: &str, resource: &str, from: i64, count: i64) -> Vec<i64> {
    let http = http_client();
    let mut ids = Vec::new();
    for token in from..from + count {
        let reply = Put::new(&http, format!("{base}/v1/resources/{resource}"))
            .token(token)
            .owner("w")
            .body("v")
            .send()
            .await;
        assert!(reply.status == 200 || reply.status == 201, "{}", reply.json);
        ids.push(reply.json["audit_id"].as_i64().unwrap());
    }
    ids
}

/// The head a signed witness line gives `resource`'s chain.
fn head_seq(line: &str, resource: &str) -> Option<i64> {
    let line: Value = serde_json::from_str(line).ok()?;
    line["checkpoint"]["chains"]
        .as_array()?
        .iter()
        .find(|chain| chain["resource"] == resource)
        .and_then(|chain| chain["head"]["seq"].as_i64())
}

/// Polls the witness file until its last line has every chain at least at these heads.
async fn wait_for_checkpoint(file: &Path, heads: &[(&str, i64)]) -> String {
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        if let Some(last) = witness_lines(file).pop() {
            if heads
                .iter()
                .all(|(resource, seq)| head_seq(&last, resource).is_some_and(|s| s >= *seq))
            {
                return last;
            }
        }
        assert!(
            Instant::now() < deadline,
            "no checkpoint covering {heads:?} within 20 s: {:?}",
            witness_lines(file)
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// A witnessed daemon took `WRITES`, signed a checkpoint covering them and was stopped; the
/// audit verifies against its witness. Each resource's audit ids.
async fn signed(backend: Backend) -> (Witness, Vec<Vec<i64>>) {
    let witness = Witness::new(backend).await;
    let (daemon, _log) = witness.daemon().await;
    let mut ids = Vec::new();
    for (resource, count) in WRITES {
        ids.push(write(&daemon.base, resource, 1, count).await);
    }
    wait_for_checkpoint(&witness.file, &WRITES).await;
    assert!(daemon.terminate().await);
    let clean = witness.verify_witnessed().await;
    assert_eq!(clean.code, 0, "{}", clean.text);
    (witness, ids)
}

/// The breaches of a report: resource, audit row, position, problem.
fn breaches(report: &Value) -> Vec<(String, Option<i64>, Option<i64>, String)> {
    report["breaches"]
        .as_array()
        .unwrap_or_else(|| panic!("no breaches in {report}"))
        .iter()
        .map(|b| {
            (
                b["resource"].as_str().unwrap_or_default().to_owned(),
                b["audit_id"].as_i64(),
                b["seq"].as_i64(),
                b["problem"].as_str().unwrap_or_default().to_owned(),
            )
        })
        .collect()
}

/// What a run read and what it did not read again: rows, chains, covered rows, covered chains.
fn counts(report: &Value) -> [Option<i64>; 4] {
    ["rows", "resources", "covered_rows", "covered_chains"].map(|field| report[field].as_i64())
}

/// Asserts that the run exits 1 with exactly one breach, of `resource` at this row and
/// position, named so in the text; its problem.
fn broken_at(verdict: &Verdict, resource: &str, audit_id: Option<i64>, seq: i64) -> String {
    assert_eq!(verdict.code, 1, "{}", verdict.text);
    let found = breaches(&verdict.report);
    assert_eq!(found.len(), 1, "{}", verdict.report);
    let (named, id, position, problem) = found.into_iter().next().unwrap();
    assert_eq!(
        (named.as_str(), id, position),
        (resource, audit_id, Some(seq)),
        "{problem}"
    );
    let at = match audit_id {
        Some(id) => format!("BROKEN {resource}: at audit row {id} (position {seq}): "),
        None => format!("BROKEN {resource}: at position {seq}: "),
    };
    assert!(verdict.text.contains(&at), "{at:?} not in {}", verdict.text);
    problem
}

// 1.
#[apply(both_backends)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_pristine_audit_verifies_against_its_witness(#[case] backend: Backend) {
    let (witness, _) = signed(backend).await;
    // From the signed heads: every row is behind one, none is read again.
    let verdict = witness.verify_witnessed().await;
    assert_eq!(verdict.code, 0, "{}", verdict.text);
    assert_eq!(verdict.report["breaches"], serde_json::json!([]));
    assert_eq!(
        counts(&verdict.report),
        [Some(0), Some(0), Some(9), Some(3)],
        "{}",
        verdict.report
    );
    assert_eq!(verdict.report["full"], false);
    let summary = &verdict.report["witness"];
    assert_eq!(summary["chains"], 3, "{summary}");
    assert_eq!(summary["latest_rows"], 9, "{summary}");
    assert!(summary["checkpoints"].as_u64().unwrap() >= 1, "{summary}");
    assert!(
        verdict.text.starts_with("ok: 0 rows in 0 chains verify")
            && verdict
                .text
                .contains("; 9 earlier rows in 3 chains are covered by the witness's checkpoints")
            && verdict.text.contains("checkpoint(s) over 3 chains")
            && verdict.text.contains("with 9 rows"),
        "{}",
        verdict.text
    );
    let full = witness.verify_full().await;
    assert_eq!(
        counts(&full.report),
        [Some(9), Some(3), Some(0), Some(0)],
        "{}",
        full.report
    );
    assert_eq!(full.report["full"], true);
    assert!(
        full.text.starts_with("ok: 9 rows in 3 chains verify") && !full.text.contains("covered"),
        "{}",
        full.text
    );
    // Every line of the file is the witness's, and the database keeps the same lines.
    let lines = witness.lines();
    assert!(!lines.is_empty());
    assert_eq!(witness.kept_checkpoints().await, lines.len() as i64);
}

// 2.
#[apply(both_backends)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_deleted_tail_behind_a_moved_head_is_found_only_with_the_witness(
    #[case] backend: Backend,
) {
    let (witness, _) = signed(backend).await;
    witness.cut_tail("r1", 2).await;
    // What the rows alone cannot show: the chain that is left is whole.
    let (code, stdout) = witness.verify_plain().await;
    assert_eq!(code, 0, "{stdout}");
    let problem = broken_at(&witness.verify_witnessed().await, "r1", None, 3);
    assert!(
        problem.contains("reach position 4") && problem.contains("rows 3 to 4 were deleted"),
        "{problem}"
    );
}

// 3.
#[apply(both_backends)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_erased_resource_is_named(#[case] backend: Backend) {
    let (witness, ids) = signed(backend).await;
    witness
        .tamper(&[
            "DELETE FROM audit WHERE resource = 'r2'".into(),
            "DELETE FROM resources WHERE key = 'r2'".into(),
        ])
        .await;
    let (code, stdout) = witness.verify_plain().await;
    assert_eq!(
        code, 0,
        "without the witness nothing is left to miss: {stdout}"
    );
    let problem = broken_at(
        &witness.verify_witnessed().await,
        "r2",
        ids[1].last().copied(),
        3,
    );
    assert!(problem.contains("erased"), "{problem}");
}

// 4.
#[apply(both_backends)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_forged_prune_checkpoint_is_refused(#[case] backend: Backend) {
    let (witness, _) = signed(backend).await;
    // The chain's first two rows deleted behind a checkpoint that makes the rest verify,
    // "signed" with a key of the forger's own.
    let hash = witness.records("r1").await[1].hash.clone().unwrap();
    let forger = keygen(witness.dir.path(), "forger.key").await;
    let forger = SigningKey::from_pem(&std::fs::read(forger).unwrap()).unwrap();
    let signature = forger.sign(&start_message("r1", 2, &hash));
    witness
        .tamper(&[
            format!(
                "INSERT INTO audit_checkpoints (resource, seq, hash, pruned_at_us, signature) \
                 VALUES ('r1', 2, '{hash}', 0, '{signature}')"
            ),
            "DELETE FROM audit WHERE resource = 'r1' AND seq <= 2".into(),
        ])
        .await;
    let (code, stdout) = witness.verify_plain().await;
    assert_eq!(
        code, 0,
        "the forged checkpoint fools the rows alone: {stdout}"
    );
    let problem = broken_at(&witness.verify_witnessed().await, "r1", None, 2);
    assert!(problem.contains("no prune's signature"), "{problem}");
}

// 5.
#[apply(both_backends)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rewritten_and_rechained_rows_are_found(#[case] backend: Backend) {
    let (witness, ids) = signed(backend).await;
    let mut rows = witness.records("r1").await;
    assert_eq!(rows.len(), 4);
    // The second row gets another owner; it and every row after it are hashed again, each
    // onto the one before, and the head follows: a chain that verifies whole.
    rows[1].entry.owner = Some("mallory".into());
    for i in 1..rows.len() {
        let prev = rows[i - 1].hash.clone().unwrap();
        let seq = rows[i].seq.unwrap();
        rows[i].hash = Some(row_hash(&rows[i].entry, seq, &prev));
        rows[i].prev_hash = Some(prev);
    }
    let pool: RawPool = witness.db.raw_pool().await;
    for row in &rows[1..] {
        let prev = hex::decode(row.prev_hash.as_deref().unwrap()).unwrap();
        let hash = hex::decode(row.hash.as_deref().unwrap()).unwrap();
        on_raw!(&pool, h => sqlx::query(
            "UPDATE audit SET owner = $1, prev_hash = $2, hash = $3 WHERE id = $4",
        )
        .bind(row.entry.owner.clone())
        .bind(prev)
        .bind(hash)
        .bind(row.entry.id)
        .execute(h)
        .await
        .unwrap()
        .rows_affected());
    }
    let head = rows[3].hash.clone().unwrap();
    on_raw!(&pool, h => sqlx::query("UPDATE resources SET chain_hash = $1 WHERE key = 'r1'")
        .bind(head)
        .execute(h)
        .await
        .unwrap()
        .rows_affected());
    pool.close().await;
    let (code, stdout) = witness.verify_plain().await;
    assert_eq!(code, 0, "the re-chained rows verify on their own: {stdout}");
    let problem = broken_at(&witness.verify_witnessed().await, "r1", Some(ids[0][3]), 4);
    assert!(problem.contains("re-chained"), "{problem}");
}

// 6.
#[apply(both_backends)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_emptied_audit_names_every_resource(#[case] backend: Backend) {
    let (witness, ids) = signed(backend).await;
    witness
        .tamper(
            &["audit", "resources", "chain_heads", "audit_witness"]
                .map(|table| format!("DELETE FROM {table}")),
        )
        .await;
    let (code, stdout) = witness.verify_plain().await;
    assert_eq!(code, 0, "an empty audit verifies on its own: {stdout}");
    let verdict = witness.verify_witnessed().await;
    assert_eq!(verdict.code, 1, "{}", verdict.text);
    let found = breaches(&verdict.report);
    let expected: Vec<(String, Option<i64>, Option<i64>)> = WRITES
        .iter()
        .zip(&ids)
        .map(|((resource, count), ids)| ((*resource).to_owned(), ids.last().copied(), Some(*count)))
        .collect();
    assert_eq!(
        found
            .iter()
            .map(|(r, id, seq, _)| (r.clone(), *id, *seq))
            .collect::<Vec<_>>(),
        expected,
        "{}",
        verdict.report
    );
    assert!(found.iter().all(|b| b.3.contains("erased")), "{found:?}");
    for ((resource, count), ids) in WRITES.iter().zip(&ids) {
        let at = format!(
            "BROKEN {resource}: at audit row {} (position {count})",
            ids.last().unwrap()
        );
        assert!(verdict.text.contains(&at), "{at:?} not in {}", verdict.text);
    }
}

// 7.
#[apply(both_backends)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_signed_prune_verifies_and_an_unsigned_one_does_not(#[case] backend: Backend) {
    let (witness, _) = signed(backend).await;
    let key = path(&witness.key).to_owned();
    let (code, stdout, stderr) = witness
        .audit(&["prune", "--before", "0s", "--key", &key])
        .await;
    assert_eq!(code, 0, "{stdout}{stderr}");
    assert!(
        stdout.starts_with("pruned 9 rows of 3 resources"),
        "{stdout}"
    );
    let verdict = witness.verify_witnessed().await;
    assert_eq!(verdict.code, 0, "{}", verdict.text);
    assert_eq!(verdict.report["rows"], 0, "{}", verdict.report);
    // The daemon signs on past the signed prune; the next prune has no key.
    let (daemon, _log) = witness.daemon().await;
    write(&daemon.base, "r1", 5, 2).await;
    let last = wait_for_checkpoint(&witness.file, &[("r1", 6)]).await;
    let line: Value = serde_json::from_str(&last).unwrap();
    let r1 = line["checkpoint"]["chains"]
        .as_array()
        .unwrap()
        .iter()
        .find(|chain| chain["resource"] == "r1")
        .unwrap()
        .clone();
    assert_eq!(r1["start"]["seq"], 4, "{r1}");
    assert!(daemon.terminate().await);
    let (code, stdout, stderr) = witness.audit(&["prune", "--before", "0s"]).await;
    assert_eq!(code, 0, "{stdout}{stderr}");
    assert!(
        stdout.starts_with("pruned 2 rows of 1 resources"),
        "{stdout}"
    );
    let problem = broken_at(&witness.verify_witnessed().await, "r1", None, 6);
    assert!(
        problem.contains("rows 5 to 6 were removed with no prune's signature"),
        "{problem}"
    );
}

// 8.
#[apply(both_backends)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn another_keys_witness_or_an_edited_line_is_refused(#[case] backend: Backend) {
    let (witness, _) = signed(backend).await;
    let other = keygen(witness.dir.path(), "other.key").await;
    let other_pub = path(&pub_path(&other)).to_owned();
    let file = path(&witness.file).to_owned();
    let verify = ["verify", "--witness", &file, "--public-key", &other_pub];
    let (code, stdout, stderr) = witness.audit(&verify).await;
    assert_ne!(code, 0, "{stdout}");
    assert!(
        stderr.contains("line 1 of the witness") && stderr.contains("signed by another key"),
        "{stderr}"
    );
    // One digit of a position in the last line (the first may precede every write) changed
    // by hand.
    let mut lines = witness.lines();
    let last = lines.last_mut().unwrap();
    let at = last.find("\"seq\":").unwrap() + "\"seq\":".len();
    let digit = last.as_bytes()[at];
    assert!(digit.is_ascii_digit(), "{last}");
    let changed = if digit == b'9' {
        '8'
    } else {
        (digit + 1) as char
    };
    last.replace_range(at..=at, &changed.to_string());
    let refused = format!("line {} of the witness", lines.len());
    let edited = witness.dir.path().join("edited.jsonl");
    std::fs::write(&edited, lines.join("\n") + "\n").unwrap();
    let edited = path(&edited).to_owned();
    let public = path(&witness.public).to_owned();
    let verify = ["verify", "--witness", &edited, "--public-key", &public];
    let (code, stdout, stderr) = witness.audit(&verify).await;
    assert_ne!(code, 0, "{stdout}");
    assert!(
        stderr.contains(&refused) && stderr.contains("changed after it was signed"),
        "{stderr}"
    );
}

// 9.
#[apply(both_backends)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_daemon_does_not_sign_over_tampering(#[case] backend: Backend) {
    let witness = Witness::new(backend).await;
    let (daemon, log) = witness.daemon().await;
    for (resource, count) in WRITES {
        write(&daemon.base, resource, 1, count).await;
    }
    wait_for_checkpoint(&witness.file, &WRITES).await;
    witness.cut_tail("r1", 2).await;
    let deadline = Instant::now() + Duration::from_secs(20);
    while log.lines_with(&["not signing", "r1"]).is_empty() {
        assert!(
            Instant::now() < deadline,
            "the daemon did not say it stopped signing"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let lines = witness.lines();
    let kept = witness.kept_checkpoints().await;
    write(&daemon.base, "r2", 4, 2).await;
    write(&daemon.base, "r4", 1, 1).await;
    // A clean stop signs what was written since the last round: here, the round it runs last
    // (after the writes) must refuse too.
    assert!(daemon.terminate().await);
    assert_eq!(witness.lines(), lines, "no checkpoint after the tampering");
    assert_eq!(witness.kept_checkpoints().await, kept);
    let said = log.lines_with(&["not signing", "r1"]);
    assert_eq!(said.len(), 1, "said once, not each round: {said:?}");
    assert!(said[0].contains("ERROR"), "{}", said[0]);
}

// 10.
#[apply(both_backends)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cron_witness_signs_until_the_audit_is_tampered_with(#[case] backend: Backend) {
    let witness = Witness::new(backend).await;
    let daemon = Daemon::spawn(&witness.db, &[]).await;
    let key = path(&witness.key).to_owned();
    let sign = ["witness", "--key", &key];
    let mut file = String::new();
    for (resource, count) in WRITES {
        write(&daemon.base, resource, 1, count).await;
    }
    let (code, stdout, stderr) = witness.audit(&sign).await;
    assert_eq!((code, stdout.lines().count()), (0, 1), "{stdout}{stderr}");
    file.push_str(&stdout);
    write(&daemon.base, "r1", 5, 2).await;
    let (code, stdout, stderr) = witness.audit(&sign).await;
    assert_eq!((code, stdout.lines().count()), (0, 1), "{stdout}{stderr}");
    assert_eq!(head_seq(&stdout, "r1"), Some(6), "{stdout}");
    file.push_str(&stdout);
    std::fs::write(&witness.file, &file).unwrap();
    assert_eq!(witness.kept_checkpoints().await, 2);
    assert_eq!(witness.verify_witnessed().await.code, 0);
    witness.cut_tail("r1", 4).await;
    let (code, stdout, stderr) = witness.audit(&sign).await;
    assert_eq!(code, 1, "{stdout}{stderr}");
    assert_eq!(stdout, "", "nothing signed");
    assert!(
        stderr.contains("not signing") && stderr.contains("BROKEN r1: at"),
        "{stderr}"
    );
    assert_eq!(witness.kept_checkpoints().await, 2);
    let problem = broken_at(&witness.verify_witnessed().await, "r1", None, 5);
    assert!(problem.contains("rows 5 to 6 were deleted"), "{problem}");
    assert!(daemon.terminate().await);
}

// 11.
#[apply(both_backends)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_checkpoint_in_the_database_with_a_bad_signature_is_refused(#[case] backend: Backend) {
    let (witness, _) = signed(backend).await;
    // The last checkpoint, one chain moved on, its signature kept: it claims the witness's key.
    let mut line: Value = serde_json::from_str(&witness.lines().pop().unwrap()).unwrap();
    line["checkpoint"]["at_us"] = (line["checkpoint"]["at_us"].as_i64().unwrap() + 1).into();
    line["checkpoint"]["chains"][0]["head"]["seq"] = 99.into();
    let forged = line.to_string().replace('\'', "''");
    witness
        .tamper(&[format!(
            "INSERT INTO audit_witness (at_us, line) VALUES (0, '{forged}')"
        )])
        .await;
    let verdict = witness.verify_witnessed().await;
    assert_eq!(verdict.code, 1, "{}", verdict.text);
    let found = breaches(&verdict.report);
    assert_eq!(found.len(), 1, "{}", verdict.report);
    assert_eq!(found[0].0, "(audit_witness)");
    assert!(found[0].3.contains("forged or edited"), "{}", found[0].3);
    assert!(
        verdict.text.contains("BROKEN (audit_witness): "),
        "{}",
        verdict.text
    );
}

// 7, without the key from the start: every chain the prune moved is named.
#[apply(both_backends)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_prune_without_the_key_is_refused(#[case] backend: Backend) {
    let (witness, _) = signed(backend).await;
    let (code, stdout, stderr) = witness.audit(&["prune", "--before", "0s"]).await;
    assert_eq!(code, 0, "{stdout}{stderr}");
    let (code, stdout) = witness.verify_plain().await;
    assert_eq!(code, 0, "a prune is no breach of the rows: {stdout}");
    let verdict = witness.verify_witnessed().await;
    assert_eq!(verdict.code, 1, "{}", verdict.text);
    let found: Vec<_> = breaches(&verdict.report)
        .into_iter()
        .map(|(resource, id, seq, _)| (resource, id, seq))
        .collect();
    let expected: Vec<_> = WRITES
        .iter()
        .map(|(resource, count)| ((*resource).to_owned(), None, Some(*count)))
        .collect();
    assert_eq!(found, expected, "{}", verdict.report);
    for (resource, count) in WRITES {
        let at = format!(
            "BROKEN {resource}: at position {count}: the chain now starts after position {count}"
        );
        assert!(verdict.text.contains(&at), "{at:?} not in {}", verdict.text);
    }
}

// The witnessed run is incremental: only the rows after the signed heads.
#[apply(both_backends)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_witnessed_run_reads_only_the_rows_after_the_signed_heads_and_catches_a_change_among_them(
    #[case] backend: Backend,
) {
    let (witness, _) = signed(backend).await;
    // Written with no signer running: after every signed head.
    let daemon = Daemon::spawn(&witness.db, &[]).await;
    let new = write(&daemon.base, "r1", 5, 2).await;
    write(&daemon.base, "r4", 1, 1).await;
    assert!(daemon.terminate().await);
    let verdict = witness.verify_witnessed().await;
    assert_eq!(verdict.code, 0, "{}", verdict.text);
    assert_eq!(
        counts(&verdict.report),
        [Some(3), Some(2), Some(9), Some(3)],
        "r1's two new rows and r4's, never witnessed: {}",
        verdict.report
    );
    assert!(
        verdict.text.starts_with("ok: 3 rows in 2 chains verify")
            && verdict
                .text
                .contains("9 earlier rows in 3 chains are covered by the witness's checkpoints"),
        "{}",
        verdict.text
    );
    assert_eq!(witness.verify_full().await.report["rows"], 12);
    witness
        .tamper(&[format!(
            "UPDATE audit SET owner = 'mallory' WHERE id = {}",
            new[0]
        )])
        .await;
    let problem = broken_at(&witness.verify_witnessed().await, "r1", Some(new[0]), 5);
    assert!(problem.contains("changed"), "{problem}");
}

// What the incremental run does not cover, by design: rows behind a signed head changed or
// deleted with the row at the head left as it was. The full run finds them.
#[apply(both_backends)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rows_changed_behind_a_signed_head_are_found_only_by_a_full_run(#[case] backend: Backend) {
    let (witness, ids) = signed(backend).await;
    // r1's second row edited, its hashes kept; r2's second row deleted.
    witness
        .tamper(&[
            format!(
                "UPDATE audit SET owner = 'mallory' WHERE id = {}",
                ids[0][1]
            ),
            format!("DELETE FROM audit WHERE id = {}", ids[1][1]),
        ])
        .await;
    let incremental = witness.verify_incremental().await;
    assert_eq!(incremental.code, 0, "{}", incremental.text);
    assert_eq!(incremental.report["rows"], 0, "{}", incremental.report);
    let full = witness.verify_full().await;
    assert_eq!(full.code, 1, "{}", full.text);
    let found = breaches(&full.report);
    assert_eq!(
        found
            .iter()
            .map(|(resource, id, seq, _)| (resource.as_str(), *id, *seq))
            .collect::<Vec<_>>(),
        [
            ("r1", Some(ids[0][1]), Some(2)),
            ("r2", Some(ids[1][2]), Some(3))
        ],
        "{}",
        full.report
    );
    assert!(found[0].3.contains("changed"), "{found:?}");
    assert!(found[1].3.contains("where 2 was due"), "{found:?}");
}
