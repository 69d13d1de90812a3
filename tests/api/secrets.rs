//! No secret leaves the process: a database password or an API key appears in no `--help`, log
//! line, error message or answer (the real binary, its stdout and stderr, at `debug`).

use crate::helpers::{Backend, TestDb};
use crate::test_db;
use clap::CommandFactory;
use fencewatch::cli::Cli;
use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::process::Command;

const PASSWORD: &str = "fw-Pw-5eCr3t";
/// A password that has to be percent-encoded in a URL: neither form may show.
const SPECIAL_PASSWORD: &str = "fw:P@ss/w?rd#1 +";
const SPECIAL_ENCODED: &str = "fw%3AP%40ss%2Fw%3Frd%231%20%2B";
const API_KEY: &str = "fw-key-Kq81Zr-7c2e5a";
const WRONG_KEY: &str = "fw-wrong-Tm4Yq";

fn secrets() -> [&'static str; 5] {
    [
        PASSWORD,
        SPECIAL_PASSWORD,
        SPECIAL_ENCODED,
        API_KEY,
        WRONG_KEY,
    ]
}

/// Fails naming the secret and where it was found.
fn assert_no_secret(what: &str, text: &str) {
    for secret in secrets() {
        assert!(
            !text.contains(secret),
            "{what} shows the secret {secret:?}:\n{text}"
        );
    }
}

/// Every command path of the command line (`[]`, `["serve"]`, `["audit", "verify"]`, …) and every
/// environment variable its arguments read.
fn command_paths() -> (Vec<Vec<String>>, Vec<String>) {
    fn walk(
        command: &clap::Command,
        path: Vec<String>,
        paths: &mut Vec<Vec<String>>,
        env: &mut Vec<String>,
    ) {
        for arg in command.get_arguments() {
            if let Some(name) = arg.get_env() {
                env.push(name.to_string_lossy().into_owned());
            }
        }
        for sub in command.get_subcommands() {
            let mut sub_path = path.clone();
            sub_path.push(sub.get_name().to_owned());
            walk(sub, sub_path, paths, env);
        }
        paths.push(path);
    }
    let (mut paths, mut env) = (Vec::new(), Vec::new());
    walk(&Cli::command(), Vec::new(), &mut paths, &mut env);
    env.sort();
    env.dedup();
    (paths, env)
}

/// Each command's `--help` with every environment variable the command line reads set to a
/// value carrying a password and a key.
#[tokio::test]
async fn help_shows_no_value_of_the_environment() {
    let (paths, env) = command_paths();
    assert!(
        env.contains(&"FENCEWATCH_DATABASE_URL".to_owned()),
        "{env:?}"
    );
    assert!(env.contains(&"FENCEWATCH_API_KEY".to_owned()), "{env:?}");
    assert!(paths.len() > 10, "{paths:?}");
    let value = format!("postgres://fw:{PASSWORD}@127.0.0.1:1/fw?password={PASSWORD}&k={API_KEY}");
    for path in paths {
        let output = Command::new(env!("CARGO_BIN_EXE_fencewatch"))
            .args(&path)
            .arg("--help")
            .envs(env.iter().map(|name| (name, &value)))
            .output()
            .await
            .unwrap();
        let shown = format!(
            "{}{}",
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr)
        );
        assert!(output.status.success(), "{path:?} --help: {shown}");
        assert!(shown.contains("Usage"), "{path:?} --help: {shown}");
        assert_no_secret(&format!("fencewatch {} --help", path.join(" ")), &shown);
    }
}

/// Every way a URL carries a password, as users write them; `{addr}` is the server's.
fn urls_with_a_password(addr: &str) -> Vec<String> {
    vec![
        format!("postgres://fwuser:{PASSWORD}@{addr}/fw"),
        format!("postgresql://fwuser:{PASSWORD}@{addr}/fw?sslmode=disable"),
        format!("postgres://fwuser@{addr}/fw?password={PASSWORD}"),
        format!("postgres://{addr}/fw?user=fwuser&sslmode=disable&password={PASSWORD}"),
        format!("postgres://:{PASSWORD}@{addr}/fw"),
        format!("postgres://fwuser:{SPECIAL_ENCODED}@{addr}/fw"),
        format!("postgres://fwuser@{addr}/fw?password={SPECIAL_ENCODED}"),
        format!("postgres://fwuser@{addr}/fw?sslpassword={PASSWORD}&sslmode=disable"),
        format!("postgres://fwuser@{addr}/fw?pass%77ord={PASSWORD}"),
    ]
}

/// An address nothing listens on.
async fn refusing_address() -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address = listener.local_addr().unwrap().to_string();
    drop(listener);
    address
}

/// A server that answers every connection as a web server would, not as PostgreSQL.
async fn wrong_server() -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address = listener.local_addr().unwrap().to_string();
    tokio::spawn(async move {
        while let Ok((mut socket, _)) = listener.accept().await {
            tokio::spawn(async move {
                let mut buffer = [0u8; 512];
                let _ = socket.read(&mut buffer).await;
                let _ = socket
                    .write_all(b"HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\n\r\n")
                    .await;
            });
        }
    });
    address
}

/// Runs `fencewatch ARGS` at `debug` with `env` to its end; answers its exit status and all it
/// printed.
async fn run(args: &[&str], env: &[(&str, &str)]) -> (bool, String) {
    let output = tokio::time::timeout(
        Duration::from_secs(60),
        Command::new(env!("CARGO_BIN_EXE_fencewatch"))
            .args(args)
            .envs(env.iter().copied())
            .env("FENCEWATCH_LOG", "debug")
            .env("NO_COLOR", "1")
            .stdin(Stdio::null())
            .kill_on_drop(true)
            .output(),
    )
    .await
    .unwrap_or_else(|_| panic!("fencewatch {args:?} ends"))
    .unwrap();
    let shown = format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    (output.status.success(), shown)
}

/// `serve`, the audit tools and the demo, given a URL with a password to a server that refuses
/// the connection or is not PostgreSQL: each fails, saying why, and shows no password in its
/// errors or logs. Client commands given a key fail without showing it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_database_that_cannot_be_reached_shows_no_password() {
    let mut runs = Vec::new();
    for server in [refusing_address().await, wrong_server().await] {
        for url in urls_with_a_password(&server) {
            let url: &'static str = Box::leak(url.into_boxed_str());
            runs.push(tokio::spawn(async move {
                let (ok, shown) = run(
                    &["serve", "--listen", "127.0.0.1:0", "--database", url],
                    &[],
                )
                .await;
                (format!("serve --database {url}"), ok, shown)
            }));
            runs.push(tokio::spawn(async move {
                let (ok, shown) =
                    run(&["audit", "verify"], &[("FENCEWATCH_DATABASE_URL", url)]).await;
                (
                    format!("FENCEWATCH_DATABASE_URL={url} audit verify"),
                    ok,
                    shown,
                )
            }));
        }
        let url: &'static str =
            Box::leak(urls_with_a_password(&server)[2].clone().into_boxed_str());
        runs.push(tokio::spawn(async move {
            let (ok, shown) = run(
                &["demo", "--headless", "--duration", "1s", "--database", url],
                &[],
            )
            .await;
            (format!("demo --database {url}"), ok, shown)
        }));
    }
    let daemon = refusing_address().await;
    let daemon: &'static str = Box::leak(format!("http://{daemon}").into_boxed_str());
    for args in [
        &["lease", "acquire", "jobs", "--holder", "w1", "--ttl", "5s"][..],
        &["write", "jobs/a", "--token", "1"][..],
        &["tui", "--once"][..],
    ] {
        runs.push(tokio::spawn(async move {
            let (ok, shown) = run(
                args,
                &[("FENCEWATCH_URL", daemon), ("FENCEWATCH_API_KEY", API_KEY)],
            )
            .await;
            (format!("{args:?}"), ok, shown)
        }));
    }
    for run in runs {
        let (what, ok, shown) = run.await.unwrap();
        assert!(!ok, "{what} failed: {shown}");
        assert!(shown.contains("error"), "{what} says why: {shown}");
        assert_no_secret(&what, &shown);
    }
}

/// A PostgreSQL URL of `db` carrying a password in each place one may go (PostgreSQL here trusts
/// the test's connections and never asks for it).
fn with_passwords(url: &str) -> String {
    let mut url = reqwest::Url::parse(url).unwrap();
    url.set_password(Some(PASSWORD)).unwrap();
    let query = url.query().unwrap_or_default().to_owned();
    url.set_query(Some(&format!("{query}&sslpassword={PASSWORD}")));
    url.to_string()
}

/// A daemon on a URL with a password, keyed, answering right, wrong and missing keys, then
/// losing its database: no answer, `/metrics` or log line shows the password or a key.
#[cfg_attr(
    not(fencewatch_pg),
    ignore = "needs PostgreSQL: set FENCEWATCH_TEST_PG"
)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_serving_daemon_shows_no_password_or_key() {
    let db: TestDb = test_db!(Backend::Postgres);
    let proxy =
        crate::faults::proxy::Proxy::start(crate::faults::proxy::upstream_of(&db.url)).await;
    let url = with_passwords(&crate::faults::proxy::proxied_url(&db.url, &proxy));
    let dir = tempfile::tempdir().unwrap();
    let keys = dir.path().join("keys");
    std::fs::write(&keys, format!("worker:{API_KEY} write=jobs/ lease=jobs\n")).unwrap();
    let mut child = Command::new(env!("CARGO_BIN_EXE_fencewatch"))
        .args(["serve", "--listen", "127.0.0.1:0", "--db-timeout", "2s"])
        .arg("--api-key-file")
        .arg(&keys)
        .env("FENCEWATCH_DATABASE_URL", &url)
        .env("FENCEWATCH_LOG", "debug")
        .env("NO_COLOR", "1")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let logs = Arc::new(Mutex::new(String::new()));
    let mut stderr = BufReader::new(child.stderr.take().unwrap()).lines();
    let collected = logs.clone();
    let reading = tokio::spawn(async move {
        while let Ok(Some(line)) = stderr.next_line().await {
            let mut logs = collected.lock().unwrap();
            logs.push_str(&line);
            logs.push('\n');
        }
    });
    let mut stdout = BufReader::new(child.stdout.take().unwrap()).lines();
    let first = tokio::time::timeout(Duration::from_secs(30), stdout.next_line())
        .await
        .unwrap()
        .unwrap()
        .unwrap_or_else(|| panic!("the daemon did not start: {}", logs.lock().unwrap()));
    let base = first.strip_prefix("listening on ").unwrap().to_owned();

    let http = crate::helpers::http_client();
    let mut answers = Vec::new();
    let send = |request: reqwest::RequestBuilder| {
        let request = request.build().unwrap();
        let http = http.clone();
        async move {
            let response = http.execute(request).await.unwrap();
            let status = response.status().as_u16();
            let headers = format!("{:?}", response.headers());
            let body = response.text().await.unwrap();
            (status, format!("{status} {headers} {body}"))
        }
    };
    let put = |key: Option<&str>| {
        let request = http
            .put(format!("{base}/v1/resources/jobs/a"))
            .header("Fencing-Token", "1")
            .body("value");
        match key {
            Some(key) => request.bearer_auth(key),
            None => request,
        }
    };
    let mut expect = |(status, answer): (u16, String), expected: u16| {
        assert_eq!(status, expected, "{answer}");
        answers.push(answer);
    };
    expect(send(put(Some(API_KEY))).await, 201);
    expect(send(put(Some(WRONG_KEY))).await, 401);
    expect(send(put(None)).await, 401);
    expect(
        send(put(None).basic_auth("worker", Some(API_KEY))).await,
        401,
    );
    expect(
        send(
            http.post(format!("{base}/v1/leases/jobs/acquire"))
                .bearer_auth(API_KEY)
                .json(&serde_json::json!({"holder": "w1", "ttl_ms": 5000})),
        )
        .await,
        200,
    );
    expect(
        send(
            http.get(format!("{base}/v1/resources/jobs/a"))
                .bearer_auth(WRONG_KEY),
        )
        .await,
        401,
    );
    expect(send(http.get(format!("{base}/readyz"))).await, 200);
    expect(send(http.get(format!("{base}/metrics"))).await, 200);

    // The database goes away: the answers say so, with nothing of the URL.
    proxy.cut();
    expect(send(http.get(format!("{base}/readyz"))).await, 503);
    expect(send(put(Some(API_KEY))).await, 503);
    expect(send(http.get(format!("{base}/metrics"))).await, 200);
    proxy.restore();

    let pid = child.id().unwrap().to_string();
    std::process::Command::new("kill")
        .args(["-TERM", &pid])
        .status()
        .unwrap();
    let _ = tokio::time::timeout(Duration::from_secs(30), child.wait()).await;
    let _ = tokio::time::timeout(Duration::from_secs(5), reading).await;
    let logs = logs.lock().unwrap().clone();
    assert!(logs.contains("serving"), "the logs were read: {logs}");
    assert!(
        logs.contains("unavailable"),
        "the outage was logged: {logs}"
    );
    for answer in &answers {
        assert_no_secret("an answer", answer);
    }
    assert_no_secret("the daemon's log", &logs);
}

/// A secret in the daemon's URL given to a client command (`--url http://user:SECRET@host`, or
/// a token in the user's place): every client command that fails to reach the daemon, or gets
/// an answer it cannot use, says why without it, on stdout and stderr, at `debug`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_command_shows_no_secret_of_its_url() {
    const URL_PASSWORD: &str = "fw-UrlPw-7hQx2";
    const URL_TOKEN: &str = "fw-UrlTok-3mVb8";
    let mut runs = Vec::new();
    for server in [refusing_address().await, wrong_server().await] {
        for url in [
            format!("http://fwuser:{URL_PASSWORD}@{server}"),
            format!("http://{URL_TOKEN}@{server}/"),
            format!("http://{URL_TOKEN}:{URL_PASSWORD}@{server}"),
        ] {
            for args in [
                &["lease", "acquire", "jobs", "--holder", "w1", "--ttl", "5s"][..],
                &["lease", "show", "jobs"][..],
                &["write", "jobs/a", "--token", "1"][..],
                &["tui", "--once"][..],
            ] {
                let url = url.clone();
                runs.push(tokio::spawn(async move {
                    let mut all = args.to_vec();
                    all.extend(["--url", url.as_str()]);
                    let (ok, shown) = run(&all, &[]).await;
                    (format!("{args:?} --url {url}"), ok, shown)
                }));
            }
        }
    }
    for run in runs {
        let (what, ok, shown) = run.await.unwrap();
        assert!(!ok, "{what} failed: {shown}");
        for secret in [URL_PASSWORD, URL_TOKEN] {
            assert!(
                !shown.contains(secret),
                "{what} shows the secret {secret:?}:\n{shown}"
            );
        }
    }
}

/// `serve --api-key-file` with a key file that would leave the daemon open to guessing: the
/// daemon refuses to start, exits non-zero, names the line and what is wrong, and never prints
/// the key. Checked: the same key twice, a key shorter than 16 characters, placeholders (the
/// example file's values), and the example file itself as shipped.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_weak_api_key_file_is_refused_without_showing_the_key() {
    let dir = tempfile::tempdir().unwrap();
    let database = format!("sqlite://{}", dir.path().join("fw.db").display());
    let example = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("assets/api-keys.example");
    let example_text = std::fs::read_to_string(&example).unwrap();
    let example_key = example_text
        .lines()
        .find(|line| !line.starts_with('#') && !line.trim().is_empty())
        .and_then(|line| line.split_whitespace().next())
        .and_then(|credential| credential.split_once(':'))
        .map(|(_, key)| key.to_owned())
        .unwrap();
    let cases: Vec<(&str, String, String, &str)> = vec![
        (
            "a duplicate",
            "a:5f0c2e9b7d41a8e36c2b\nb:5f0c2e9b7d41a8e36c2b read\n".into(),
            "5f0c2e9b7d41a8e36c2b".into(),
            "line 2",
        ),
        (
            "a short key",
            "ok:8d1f3a6c9e2b5f7a0c4d\nshort:fw-Sh0rtKey-15\n".into(),
            "fw-Sh0rtKey-15".into(),
            "line 2",
        ),
        (
            "a placeholder",
            "worker:change-me-change-me-now write\n".into(),
            "change-me-change-me-now".into(),
            "line 1",
        ),
        (
            "the example's placeholder",
            "worker:replace-with-a-long-random-key write=billing/\n".into(),
            "replace-with-a-long-random-key".into(),
            "line 1",
        ),
        (
            "the example file as shipped",
            example_text.clone(),
            example_key.clone(),
            "line ",
        ),
    ];
    for (what, text, key, line) in cases {
        let path = dir.path().join("keys");
        std::fs::write(&path, &text).unwrap();
        let output = tokio::time::timeout(
            Duration::from_secs(20),
            Command::new(env!("CARGO_BIN_EXE_fencewatch"))
                .args(["serve", "--listen", "127.0.0.1:0", "--database", &database])
                .arg("--api-key-file")
                .arg(&path)
                .env("FENCEWATCH_LOG", "debug")
                .env("NO_COLOR", "1")
                .stdin(Stdio::null())
                .kill_on_drop(true)
                .output(),
        )
        .await
        .unwrap_or_else(|_| panic!("{what}: the daemon started with this key file"))
        .unwrap();
        let stdout = String::from_utf8_lossy(&output.stdout);
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(!output.status.success(), "{what}: {stdout}{stderr}");
        assert!(!stdout.contains("listening on"), "{what}: {stdout}");
        assert!(stderr.contains("error"), "{what}: {stderr}");
        assert!(stderr.contains(line), "{what}: names the line: {stderr}");
        assert!(
            stderr.contains("openssl rand -hex 32"),
            "{what}: says how to make a key: {stderr}"
        );
        assert!(
            !stdout.contains(&key) && !stderr.contains(&key),
            "{what}: shows the key {key:?}: {stdout}{stderr}"
        );
    }
}
