// The migrations (the daemon's and, under migrations/fence/, those of the fence installed in a
// user's own database) are embedded by `sqlx::migrate!`; rebuild when one is added or changed
// (a directory is watched with everything under it).
//
// The black-box tests that need PostgreSQL or a real peer program are compiled as ignored
// (`cargo test` then counts them as ignored, with the reason) unless what they need was there
// when they were built: `FENCEWATCH_TEST_PG` set, or the program on the PATH.
fn main() {
    println!("cargo:rerun-if-changed=migrations");
    println!("cargo:rerun-if-env-changed=FENCEWATCH_TEST_PG");
    // PATH itself is not tracked: a shell that adds a directory to it would rebuild the crate.
    // Install a peer before building the tests (`.ci/run` does), or `touch build.rs` after.
    println!("cargo:rerun-if-env-changed=FENCEWATCH_REQUIRE_PG");
    println!("cargo:rerun-if-env-changed=FENCEWATCH_REQUIRE_PEERS");
    let required = |name: &str| std::env::var(name).is_ok_and(|v| v == "1");
    let peers = [
        ("fencewatch_pg", None),
        ("fencewatch_chromium", Some("chromium")),
        ("fencewatch_alertmanager", Some("prometheus-alertmanager")),
        ("fencewatch_promtool", Some("promtool")),
        ("fencewatch_etcd", Some("etcd")),
        ("fencewatch_systemd_analyze", Some("systemd-analyze")),
        ("fencewatch_schemathesis", Some("schemathesis")),
        // The Debian package's test (tests/api/deploy.rs) also reads it with dpkg-deb.
        ("fencewatch_cargo_deb", Some("cargo-deb")),
    ];
    zookeeper(required("FENCEWATCH_REQUIRE_PEERS"));
    for (cfg, program) in peers {
        println!("cargo::rustc-check-cfg=cfg({cfg})");
        let present = match program {
            None => std::env::var_os("FENCEWATCH_TEST_PG").is_some(),
            Some(program) => on_path(program),
        };
        if present {
            println!("cargo:rustc-cfg={cfg}");
            continue;
        }
        // CI asks for everything: a missing part fails the build instead of ignoring tests.
        match program {
            None if required("FENCEWATCH_REQUIRE_PG") => {
                panic!("FENCEWATCH_REQUIRE_PG=1 but FENCEWATCH_TEST_PG is not set")
            }
            Some(program) if required("FENCEWATCH_REQUIRE_PEERS") => {
                panic!("FENCEWATCH_REQUIRE_PEERS=1 but {program} is not on the PATH")
            }
            _ => {}
        }
    }
}

/// ZooKeeper's tests run Debian's ZooKeeper server (its jar, with `java`) and a kazoo lock
/// holder (`python3` with kazoo importable).
fn zookeeper(require: bool) {
    println!("cargo::rustc-check-cfg=cfg(fencewatch_zookeeper)");
    println!("cargo:rerun-if-env-changed=FENCEWATCH_ZOOKEEPER_JAR");
    let jar = std::env::var("FENCEWATCH_ZOOKEEPER_JAR")
        .unwrap_or_else(|_| "/usr/share/java/zookeeper.jar".to_owned());
    let kazoo = std::process::Command::new("python3")
        .args(["-c", "import kazoo"])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .status()
        .is_ok_and(|status| status.success());
    let present = on_path("java") && std::path::Path::new(&jar).is_file() && kazoo;
    if present {
        println!("cargo:rustc-cfg=fencewatch_zookeeper");
    } else if require {
        panic!(
            "FENCEWATCH_REQUIRE_PEERS=1 but ZooKeeper ({jar} and java) or kazoo (python3 -c 'import kazoo') is missing"
        );
    }
}

fn on_path(program: &str) -> bool {
    std::env::var_os("PATH")
        .map(|path| std::env::split_paths(&path).any(|dir| dir.join(program).is_file()))
        .unwrap_or(false)
}
