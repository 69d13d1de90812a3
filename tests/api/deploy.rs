//! What a user deploys from `assets/`: the systemd units pass systemd's own checker, the man page
//! and completions are what the binary prints, and the Debian package (`cargo deb`) holds and
//! runs what it should.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

fn read(path: impl AsRef<Path>) -> String {
    let path = path.as_ref();
    std::fs::read_to_string(path).unwrap_or_else(|e| panic!("read {}: {e}", path.display()))
}

/// Runs a command to its end and answers its output; a failure fails the test with its stderr.
fn run(command: &mut Command) -> Output {
    let output = command
        .output()
        .unwrap_or_else(|e| panic!("run {command:?}: {e}"));
    assert!(
        output.status.success(),
        "{command:?}: {}\n{}",
        output.status,
        String::from_utf8_lossy(&output.stderr)
    );
    output
}

fn stdout_of(command: &mut Command) -> String {
    String::from_utf8(run(command).stdout).expect("UTF-8 output")
}

/// `systemd-analyze verify` on a unit whose ExecStart names `installed_binary`, pointed at the
/// binary under test (the checker insists that the command exists).
fn verify_unit(unit: &str, installed_binary: &str) {
    let unit = read(root().join(unit));
    assert!(
        unit.lines()
            .any(|line| line == format!("ExecStart={installed_binary} serve")),
        "{unit}"
    );
    let unit = unit.replace(installed_binary, env!("CARGO_BIN_EXE_fencewatch"));
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("fencewatch.service");
    std::fs::write(&path, unit).unwrap();
    let output = Command::new("systemd-analyze")
        .args(["verify", "--man=no"])
        .arg(&path)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "{stderr}");
    // It only warns about directives it cannot parse: any warning is a defect of the unit.
    assert!(stderr.trim().is_empty(), "{stderr}");
}

#[cfg_attr(
    not(fencewatch_systemd_analyze),
    ignore = "needs systemd-analyze on the PATH"
)]
#[test]
fn the_systemd_unit_passes_systemd_analyze_verify() {
    verify_unit("assets/fencewatch.service", "/usr/local/bin/fencewatch");
}

#[cfg_attr(
    not(fencewatch_systemd_analyze),
    ignore = "needs systemd-analyze on the PATH"
)]
#[test]
fn the_debian_packages_unit_passes_systemd_analyze_verify() {
    verify_unit("assets/deb/fencewatch.service", "/usr/bin/fencewatch");
}

/// From `[Unit]` on: the unit without its head comment (which says how it is installed).
fn unit_body(unit: &str) -> &str {
    let start = unit.find("\n[Unit]\n").expect("a [Unit] section");
    &unit[start + 1..]
}

/// The package's unit is the hand-installed one with the package's binary: a change to one that
/// is not made to the other fails here.
#[test]
fn the_debian_packages_unit_is_the_systemd_unit_with_the_packaged_binary() {
    let unit = read(root().join("assets/fencewatch.service"));
    let packaged = read(root().join("assets/deb/fencewatch.service"));
    assert_eq!(
        unit_body(&packaged),
        unit_body(&unit).replace("/usr/local/bin/fencewatch", "/usr/bin/fencewatch"),
        "assets/deb/fencewatch.service differs from assets/fencewatch.service beyond the binary's path"
    );
}

/// The committed copies that the package installs (cargo-deb's assets must be files), each with
/// the command that prints it.
const GENERATED: [(&str, &[&str]); 4] = [
    ("assets/man/fencewatch.1", &["man"]),
    (
        "assets/completions/fencewatch.bash",
        &["completions", "bash"],
    ),
    ("assets/completions/fencewatch.zsh", &["completions", "zsh"]),
    (
        "assets/completions/fencewatch.fish",
        &["completions", "fish"],
    ),
];

#[test]
fn the_committed_man_page_and_completions_are_what_the_binary_prints() {
    for (path, args) in GENERATED {
        let printed = stdout_of(Command::new(env!("CARGO_BIN_EXE_fencewatch")).args(args));
        assert!(
            !printed.trim().is_empty(),
            "fencewatch {args:?} printed nothing"
        );
        assert!(
            printed == read(root().join(path)),
            "{path} is not what `fencewatch {}` prints now; regenerate them all with the command in \
             docs/operations.md (\"Debian package\")",
            args.join(" ")
        );
    }
    // One page per subcommand beside the main one, which names them (`fencewatch-serve(1)`).
    let dir = tempfile::tempdir().unwrap();
    run(Command::new(env!("CARGO_BIN_EXE_fencewatch"))
        .args(["man", "--dir"])
        .arg(dir.path()));
    let names = |folder: &Path| {
        let mut names: Vec<String> = std::fs::read_dir(folder)
            .unwrap()
            .map(|entry| entry.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        names.sort_unstable();
        names
    };
    let written = names(dir.path());
    assert!(
        written.iter().any(|n| n == "fencewatch-serve.1"),
        "{written:?}"
    );
    assert!(
        written.iter().any(|n| n == "fencewatch-audit-verify.1"),
        "{written:?}"
    );
    assert_eq!(
        written,
        names(&root().join("assets/man")),
        "assets/man/ is not what `fencewatch man --dir` writes now; regenerate it (docs/operations.md)"
    );
    for name in &written {
        assert!(
            read(dir.path().join(name)) == read(root().join("assets/man").join(name)),
            "assets/man/{name} is not what `fencewatch man --dir` writes now"
        );
    }
}

/// The package, built by cargo-deb from the binary under test (`--no-build`, the binary copied
/// where cargo-deb looks for a release build, in a target directory of the test's own): what it
/// holds, its control data, and the extracted binary started as its unit starts it.
#[cfg_attr(not(fencewatch_cargo_deb), ignore = "needs cargo-deb on the PATH")]
#[tokio::test]
async fn the_debian_package_holds_the_service_and_its_binary_serves() {
    let dir = tempfile::tempdir().unwrap();
    let deb = build_deb(dir.path());

    let fields = stdout_of(
        Command::new("dpkg-deb")
            .arg("-f")
            .arg(&deb)
            .args(["Package", "Version", "Depends"]),
    );
    assert!(fields.contains("Package: fencewatch\n"), "{fields}");
    let version = format!("Version: {}-1\n", env!("CARGO_PKG_VERSION"));
    assert!(fields.contains(&version), "{fields}");
    let depends = fields
        .lines()
        .find_map(|line| line.strip_prefix("Depends: "))
        .unwrap_or_else(|| panic!("no Depends: {fields}"));
    for needed in ["adduser", "libc6"] {
        assert!(
            depends.split(", ").any(|dep| dep.starts_with(needed)),
            "{depends}"
        );
    }

    // Every file with its mode: the binary executable, the env file (it may hold a database
    // password) for root alone.
    let listing = stdout_of(Command::new("dpkg-deb").arg("-c").arg(&deb));
    let mode_of = |path: &str| {
        listing
            .lines()
            .find(|line| line.ends_with(&format!(" .{path}")))
            .and_then(|line| line.split_whitespace().next())
            .unwrap_or_else(|| panic!("{path} is not in the package:\n{listing}"))
            .to_owned()
    };
    let files = [
        ("/usr/bin/fencewatch", "-rwxr-xr-x"),
        ("/usr/lib/systemd/system/fencewatch.service", "-rw-r--r--"),
        ("/usr/share/man/man1/fencewatch.1.gz", "-rw-r--r--"),
        ("/usr/share/man/man1/fencewatch-serve.1.gz", "-rw-r--r--"),
        (
            "/usr/share/bash-completion/completions/fencewatch",
            "-rw-r--r--",
        ),
        (
            "/usr/share/zsh/vendor-completions/_fencewatch",
            "-rw-r--r--",
        ),
        (
            "/usr/share/fish/vendor_completions.d/fencewatch.fish",
            "-rw-r--r--",
        ),
        ("/etc/fencewatch/fencewatch.example.toml", "-rw-r--r--"),
        ("/etc/fencewatch/fencewatch.env", "-rw-------"),
        (
            "/usr/share/doc/fencewatch/examples/api-keys.example",
            "-rw-r--r--",
        ),
    ];
    for (path, mode) in files {
        assert_eq!(mode_of(path), mode, "{path}");
    }

    // An upgrade keeps the administrator's edits to both files in /etc.
    let conffiles = stdout_of(
        Command::new("dpkg-deb")
            .arg("-I")
            .arg(&deb)
            .arg("conffiles"),
    );
    let mut conffiles: Vec<&str> = conffiles.lines().collect();
    conffiles.sort_unstable();
    assert_eq!(
        conffiles,
        [
            "/etc/fencewatch/fencewatch.env",
            "/etc/fencewatch/fencewatch.example.toml"
        ]
    );

    check_maintainer_scripts(&deb, &dir.path().join("control"));

    // The files as installed: each the same as its source in assets/.
    let tree = dir.path().join("root");
    run(Command::new("dpkg-deb").arg("-x").arg(&deb).arg(&tree));
    let installed = |path: &str| tree.join(path.trim_start_matches('/'));
    let man = stdout_of(
        Command::new("gzip")
            .arg("-dc")
            .arg(installed("/usr/share/man/man1/fencewatch.1.gz")),
    );
    assert_eq!(man, read(root().join("assets/man/fencewatch.1")));
    for (path, source) in [
        (
            "/usr/share/bash-completion/completions/fencewatch",
            "assets/completions/fencewatch.bash",
        ),
        (
            "/usr/share/zsh/vendor-completions/_fencewatch",
            "assets/completions/fencewatch.zsh",
        ),
        (
            "/usr/share/fish/vendor_completions.d/fencewatch.fish",
            "assets/completions/fencewatch.fish",
        ),
        (
            "/usr/lib/systemd/system/fencewatch.service",
            "assets/deb/fencewatch.service",
        ),
        (
            "/etc/fencewatch/fencewatch.example.toml",
            "assets/fencewatch.example.toml",
        ),
        (
            "/etc/fencewatch/fencewatch.env",
            "assets/deb/fencewatch.env",
        ),
    ] {
        assert_eq!(read(installed(path)), read(root().join(source)), "{path}");
    }

    let binary = installed("/usr/bin/fencewatch");
    let version = stdout_of(Command::new(&binary).arg("--version"));
    assert_eq!(
        version.trim(),
        format!("fencewatch {}", env!("CARGO_PKG_VERSION"))
    );

    serve_as_the_unit_does(
        &read(installed("/usr/lib/systemd/system/fencewatch.service")),
        &tree,
    )
    .await;
}

/// `cargo deb --no-build` on a copy of the binary under test; answers the package's path.
fn build_deb(dir: &Path) -> PathBuf {
    let target = dir.join("target");
    std::fs::create_dir_all(target.join("release")).unwrap();
    std::fs::copy(
        env!("CARGO_BIN_EXE_fencewatch"),
        target.join("release/fencewatch"),
    )
    .unwrap();
    let deb = dir.join("fencewatch.deb");
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    run(Command::new(cargo)
        .args(["deb", "--no-build", "--fast", "--quiet", "--output"])
        .arg(&deb)
        .arg("--manifest-path")
        .arg(root().join("Cargo.toml"))
        .env("CARGO_TARGET_DIR", &target));
    deb
}

/// The maintainer scripts cargo-deb made from assets/deb and its systemd fragments: valid shell,
/// creating the user on configure, and touching the service only where systemd runs.
fn check_maintainer_scripts(deb: &Path, control: &Path) {
    run(Command::new("dpkg-deb").arg("-e").arg(deb).arg(control));
    for script in ["postinst", "prerm", "postrm"] {
        run(Command::new("sh").arg("-n").arg(control.join(script)));
        let text = read(control.join(script));
        // cargo-deb replaces every #DEBHELPER# token, even one in a comment: once only.
        assert!(!text.contains("#DEBHELPER#"), "{text}");
        assert_eq!(
            text.matches("# Automatically added by cargo-deb").count(),
            if script == "prerm" { 1 } else { 2 },
            "{text}"
        );
    }
    let postinst = read(control.join("postinst"));
    let user = postinst
        .find("adduser --system --group")
        .unwrap_or_else(|| panic!("postinst creates no user:\n{postinst}"));
    let enable = postinst
        .find("deb-systemd-helper enable fencewatch.service")
        .unwrap_or_else(|| panic!("postinst enables no unit:\n{postinst}"));
    let start = postinst
        .find("deb-systemd-invoke $_dh_action fencewatch.service")
        .unwrap_or_else(|| panic!("postinst starts no unit:\n{postinst}"));
    // The user exists before the unit that runs as it is started, and it starts only under systemd.
    assert!(user < enable && enable < start, "{postinst}");
    assert!(
        postinst[..start].rfind("if [ -d /run/systemd/system ]; then") > Some(enable),
        "{postinst}"
    );
    let prerm = read(control.join("prerm"));
    assert!(
        prerm.contains(
            "if [ -d /run/systemd/system ] && [ \"$1\" = remove ]; then\n\tdeb-systemd-invoke stop fencewatch.service"
        ),
        "{prerm}"
    );
    let postrm = read(control.join("postrm"));
    assert!(
        postrm.contains("deb-systemd-helper purge fencewatch.service"),
        "{postrm}"
    );
    assert!(postrm.contains("rm -rf /var/lib/fencewatch"), "{postrm}");
}

/// Starts the extracted binary with the unit's ExecStart and Environment= lines, in an environment
/// as empty as systemd's, with the state directory (/var/lib/fencewatch) in a temporary one and
/// port 0 (as an env file's FENCEWATCH_LISTEN would set it); /healthz answers, the log is the
/// unit's JSON, the SQLite database is made in the state directory, and SIGTERM stops it cleanly.
async fn serve_as_the_unit_does(unit: &str, tree: &Path) {
    use std::process::Stdio;
    use std::time::Duration;
    use tokio::io::{AsyncBufReadExt, AsyncReadExt, BufReader};

    let state = tempfile::tempdir().unwrap();
    let state_dir = state.path().to_str().unwrap();
    let exec = unit
        .lines()
        .find_map(|line| line.strip_prefix("ExecStart="))
        .expect("an ExecStart line");
    let mut argv = exec.split_whitespace();
    let program = argv.next().unwrap();
    let mut command = tokio::process::Command::new(tree.join(program.trim_start_matches('/')));
    command.args(argv).env_clear();
    for line in unit.lines() {
        if let Some((name, value)) = line
            .strip_prefix("Environment=")
            .and_then(|assignment| assignment.split_once('='))
        {
            command.env(name, value.replace("/var/lib/fencewatch", state_dir));
        }
    }
    let mut child = command
        .env("FENCEWATCH_LISTEN", "127.0.0.1:0")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .expect("start the packaged fencewatch");
    let mut stderr = child.stderr.take().unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let first = tokio::time::timeout(Duration::from_secs(30), lines.next_line())
        .await
        .expect("the daemon announces its address within 30 s")
        .unwrap()
        .expect("a first line");
    let base = first
        .strip_prefix("listening on ")
        .unwrap_or_else(|| panic!("unexpected first line {first:?}"));

    let health = crate::helpers::http_client()
        .get(format!("{base}/healthz"))
        .send()
        .await
        .unwrap();
    assert_eq!(health.status(), 200);
    assert!(state.path().join("fencewatch.db").is_file());

    let pid = child.id().unwrap().to_string();
    run(Command::new("kill").args(["-TERM", &pid]));
    let status = tokio::time::timeout(Duration::from_secs(30), child.wait())
        .await
        .expect("stops within 30 s of SIGTERM")
        .unwrap();
    let mut log = String::new();
    stderr.read_to_string(&mut log).await.unwrap();
    assert!(status.success(), "{status}\n{log}");
    assert!(!log.trim().is_empty(), "the daemon logged nothing");
    for line in log.lines() {
        assert!(
            serde_json::from_str::<serde_json::Value>(line).is_ok(),
            "not the unit's JSON log: {line}"
        );
    }
}
