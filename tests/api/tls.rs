//! HTTPS: `serve --tls-cert/--tls-key` with a CA and certificate made here at run time, and
//! every client command trusting that CA through `--ca-cert` (or `FENCEWATCH_CA_CERT`) and
//! refusing a certificate it cannot verify.

use crate::helpers::{Backend, Daemon};
use crate::test_db;
use rcgen::{BasicConstraints, CertificateParams, DnType, IsCa, Issuer, KeyPair, KeyUsagePurpose};
use std::path::{Path, PathBuf};
use std::process::Stdio;
use tokio::process::Command;

const BIN: &str = env!("CARGO_BIN_EXE_fencewatch");

/// A private CA and a server certificate it signed for `127.0.0.1` and `localhost`, as PEM
/// files in a temporary folder. Nothing here is ever committed.
pub struct TestPki {
    pub dir: tempfile::TempDir,
    pub ca: PathBuf,
    pub cert: PathBuf,
    pub key: PathBuf,
}

fn new_ca(name: &str) -> (rcgen::Certificate, Issuer<'static, KeyPair>) {
    let mut params = CertificateParams::new(Vec::<String>::new()).unwrap();
    params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    params.distinguished_name.push(DnType::CommonName, name);
    params.key_usages = vec![
        KeyUsagePurpose::KeyCertSign,
        KeyUsagePurpose::CrlSign,
        KeyUsagePurpose::DigitalSignature,
    ];
    let key = KeyPair::generate().unwrap();
    let cert = params.self_signed(&key).unwrap();
    (cert, Issuer::new(params, key))
}

impl TestPki {
    pub fn new() -> TestPki {
        let dir = tempfile::tempdir().unwrap();
        let (ca, issuer) = new_ca("fencewatch test CA");
        let mut params =
            CertificateParams::new(vec!["127.0.0.1".to_owned(), "localhost".to_owned()]).unwrap();
        params
            .distinguished_name
            .push(DnType::CommonName, "fencewatch test daemon");
        params.use_authority_key_identifier_extension = true;
        let key = KeyPair::generate().unwrap();
        let cert = params.signed_by(&key, &issuer).unwrap();
        let write = |name: &str, text: String| {
            let path = dir.path().join(name);
            std::fs::write(&path, text).unwrap();
            path
        };
        TestPki {
            ca: write("ca.pem", ca.pem()),
            cert: write("daemon.pem", cert.pem()),
            key: write("daemon.key", key.serialize_pem()),
            dir,
        }
    }

    /// Another CA's certificate, which did not sign the daemon's.
    pub fn stranger_ca(&self) -> PathBuf {
        let (ca, _) = new_ca("someone else's CA");
        let path = self.dir.path().join("stranger.pem");
        std::fs::write(&path, ca.pem()).unwrap();
        path
    }
}

async fn run(args: &[&str], env: &[(&str, &Path)]) -> (i32, String, String) {
    let mut command = Command::new(BIN);
    command
        .args(args)
        .env_remove("FENCEWATCH_CA_CERT")
        .env("FENCEWATCH_LOG", "warn")
        .stdin(Stdio::null());
    for (name, value) in env {
        command.env(name, value);
    }
    let output = command.output().await.unwrap();
    (
        output.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&output.stdout).trim().to_owned(),
        String::from_utf8_lossy(&output.stderr).trim().to_owned(),
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_client_speaks_https_to_a_private_ca_and_refuses_strangers() {
    let db = test_db!(Backend::Sqlite);
    let pki = TestPki::new();
    let cert = pki.cert.to_str().unwrap();
    let key = pki.key.to_str().unwrap();
    let ca = pki.ca.to_str().unwrap();
    let daemon = Daemon::spawn(&db, &["--tls-cert", cert, "--tls-key", key]).await;
    assert!(
        daemon.base.starts_with("https://127.0.0.1:"),
        "{}",
        daemon.base
    );
    let url = daemon.base.as_str();

    let (code, stdout, stderr) = run(
        &[
            "lease",
            "acquire",
            "jobs",
            "--holder",
            "w1",
            "--ttl",
            "60s",
            "--url",
            url,
            "--ca-cert",
            ca,
        ],
        &[],
    )
    .await;
    assert_eq!(code, 0, "{stdout} {stderr}");
    let lease: serde_json::Value = serde_json::from_str(&stdout).unwrap();
    assert_eq!(lease["token"], 1);

    // The environment variable works as the flag does.
    let (code, stdout, stderr) = run(
        &["lease", "show", "jobs", "--url", url],
        &[("FENCEWATCH_CA_CERT", &pki.ca)],
    )
    .await;
    assert_eq!(code, 0, "{stdout} {stderr}");
    assert!(stdout.contains("\"holder\":\"w1\""), "{stdout}");

    // Without the CA, or with another CA, the certificate cannot be verified: nothing is sent.
    let stranger = pki.stranger_ca();
    for extra in [vec![], vec!["--ca-cert", stranger.to_str().unwrap()]] {
        let mut args = vec![
            "lease", "acquire", "jobs", "--holder", "mallory", "--ttl", "60s", "--url", url,
        ];
        args.extend(extra);
        let (code, stdout, stderr) = run(&args, &[]).await;
        assert_eq!(code, 1, "{stdout} {stderr}");
        assert!(
            stderr.contains("failed to reach the daemon"),
            "the error says what failed: {stderr}"
        );
    }
    // A plain-HTTP client gets no answer from the HTTPS port.
    let plain = url.replacen("https://", "http://", 1);
    let (code, _, _) = run(&["lease", "show", "jobs", "--url", &plain], &[]).await;
    assert_eq!(code, 1);

    // `write` with stdin.
    let mut child = Command::new(BIN)
        .args([
            "write",
            "jobs/out",
            "--token",
            "1",
            "--lease",
            "jobs",
            "--url",
            url,
            "--ca-cert",
            ca,
        ])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    {
        use tokio::io::AsyncWriteExt;
        let mut stdin = child.stdin.take().unwrap();
        stdin.write_all(b"over TLS").await.unwrap();
    }
    let output = child.wait_with_output().await.unwrap();
    assert_eq!(
        output.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(String::from_utf8_lossy(&output.stdout).contains("\"outcome\":\"accepted\""));

    // The lease was never taken over by the refused clients.
    let (_, stdout, _) = run(
        &["lease", "show", "jobs", "--url", url, "--ca-cert", ca],
        &[],
    )
    .await;
    assert!(stdout.contains("\"holder\":\"w1\""), "{stdout}");

    // The dashboard's one-shot overview.
    let (code, stdout, stderr) = run(
        &["tui", "--once", "--json", "--url", url, "--ca-cert", ca],
        &[],
    )
    .await;
    assert_eq!(code, 0, "{stdout} {stderr}");
    assert!(stdout.starts_with('{'), "{stdout}");
    let (code, _, stderr) = run(&["tui", "--once", "--json", "--url", url], &[]).await;
    assert_ne!(
        code, 0,
        "the dashboard refuses an unverified daemon too: {stderr}"
    );

    // The bench's own connections.
    let (code, stdout, stderr) = run(
        &[
            "bench",
            "--url",
            url,
            "--ca-cert",
            ca,
            "--duration",
            "1s",
            "--connections",
            "2",
            "--resources",
            "4",
            "--no-baseline",
            "--json",
        ],
        &[],
    )
    .await;
    assert_eq!(code, 0, "{stdout} {stderr}");
    let report: serde_json::Value = serde_json::from_str(&stdout).unwrap();
    let http = &report["http"];
    assert!(
        http["requests"].as_u64().unwrap() > 0,
        "writes went through over TLS: {report}"
    );
    assert_eq!(http["errors"], 0, "{report}");

    assert!(daemon.terminate().await);
}

#[tokio::test]
async fn serve_refuses_a_certificate_it_cannot_use() {
    let db = test_db!(Backend::Sqlite);
    let pki = TestPki::new();
    let (code, stdout, stderr) = run(
        &[
            "serve",
            "--listen",
            "127.0.0.1:0",
            "--database",
            &db.url,
            "--tls-cert",
            pki.ca.to_str().unwrap(),
            "--tls-key",
            pki.cert.to_str().unwrap(),
        ],
        &[],
    )
    .await;
    assert_ne!(code, 0);
    assert!(stdout.is_empty(), "nothing announced: {stdout}");
    assert!(stderr.contains("daemon.pem"), "names the file: {stderr}");
    let (code, _, stderr) = run(
        &[
            "serve",
            "--database",
            &db.url,
            "--tls-cert",
            pki.cert.to_str().unwrap(),
        ],
        &[],
    )
    .await;
    assert_eq!(code, 2, "--tls-cert needs --tls-key: {stderr}");
}
