//! The layers stay apart (docs/architecture.md): each layer names only those below it. Nothing
//! under `src/domain/` names the edges, the store knows nothing of HTTP or the use cases, the
//! dashboard's model names no terminal crate, and the daemon client knows nothing of the
//! dashboard.

#[test]
fn the_domain_names_no_database_runtime_web_or_terminal_crate() {
    assert_names_none(
        "src/domain",
        &["sqlx", "tokio", "axum", "ratatui", "crossterm", "reqwest"],
        5,
    );
}

/// Asserts that no Rust file under `folder` (at any depth) names any of `forbidden`.
fn assert_names_none(folder: &str, forbidden: &[&str], at_least: usize) {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join(folder);
    let mut pending = vec![root.clone()];
    let mut checked = 0;
    while let Some(dir) = pending.pop() {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                pending.push(path);
                continue;
            }
            if path.extension().is_none_or(|ext| ext != "rs") {
                continue;
            }
            let text = std::fs::read_to_string(&path).unwrap();
            for name in forbidden {
                assert!(!text.contains(name), "{} names {name}", path.display());
            }
            checked += 1;
        }
    }
    assert!(
        checked >= at_least,
        "found only {checked} files under {}",
        root.display()
    );
}

/// The wire types are plain serde structs both ends share.
#[test]
fn the_wire_types_name_no_runtime_database_web_or_terminal_crate() {
    let forbidden = [
        "sqlx",
        "tokio",
        "axum",
        "reqwest",
        "ratatui",
        "crossterm",
        "crate::",
    ];
    // `crate::domain` is the one layer below; every other crate path would be a layer above.
    let allowed_below = ["crate::domain"];
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("src/api");
    let mut checked = 0;
    for entry in std::fs::read_dir(&root).unwrap() {
        let path = entry.unwrap().path();
        let mut text = std::fs::read_to_string(&path).unwrap();
        for allowed in allowed_below {
            text = text.replace(allowed, "");
        }
        for name in forbidden {
            assert!(!text.contains(name), "{} names {name}", path.display());
        }
        checked += 1;
    }
    assert!(checked >= 3, "found only {checked} files under src/api");
}

/// Persistence knows nothing of the use cases, the live side, HTTP or the terminal.
#[test]
fn the_store_names_no_layer_above_it() {
    assert_names_none(
        "src/store",
        &[
            "axum",
            "reqwest",
            "ratatui",
            "crossterm",
            "crate::app",
            "crate::live",
            "crate::http",
            "crate::commands",
            "crate::tui",
        ],
        10,
    );
}

/// The fence in the user's own database sits beside the store: it knows nothing of the use
/// cases, the live side, HTTP, the commands or the terminal.
#[test]
fn the_users_own_database_names_no_layer_above_it() {
    assert_names_none(
        "src/owndb",
        &[
            "axum",
            "reqwest",
            "ratatui",
            "crossterm",
            "crate::app",
            "crate::live",
            "crate::http",
            "crate::commands",
            "crate::tui",
        ],
        5,
    );
}

/// Every database is reached through its own driver's native types: neither the program nor
/// its tests name sqlx's `Any` driver, which would keep both databases to what they share.
#[test]
fn nothing_names_the_any_driver() {
    // Spelt in pieces, so that this file does not name them.
    let any_driver = [
        concat!("Any", "Pool"),
        concat!("Any", "Connection"),
        concat!("Any", "Row"),
        concat!("sqlx::", "any"),
        concat!("sqlx::", "Any"),
    ];
    assert_names_none("src", &any_driver, 100);
    assert_names_none("tests", &any_driver, 40);
    let manifest = std::fs::read_to_string(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("Cargo.toml"),
    )
    .unwrap();
    let sqlx = manifest
        .lines()
        .find(|line| line.starts_with("sqlx "))
        .expect("sqlx is a dependency");
    assert!(!sqlx.contains("\"any\""), "{sqlx}");
}

/// The use cases and the live side run beneath every edge: HTTP calls them, never the reverse.
#[test]
fn the_use_cases_and_the_live_side_name_no_edge() {
    let edges = [
        "axum",
        "ratatui",
        "crossterm",
        "crate::http",
        "crate::commands",
        "crate::tui",
        "crate::client",
    ];
    assert_names_none("src/app", &edges, 2);
    assert_names_none("src/live", &edges, 5);
}

/// The HTTP edge serves the use cases; composing the daemon is `commands::serve`'s job.
#[test]
fn the_http_edge_names_no_command_or_terminal() {
    assert_names_none(
        "src/http",
        &[
            "ratatui",
            "crossterm",
            "crate::commands",
            "crate::tui",
            "crate::client",
        ],
        10,
    );
}

/// The view draws the model; the model is plain state, tested by feeding it messages.
#[test]
fn the_dashboard_model_names_no_terminal_crate() {
    assert_names_none("src/tui/model", &["ratatui", "crossterm"], 3);
}

/// The dashboard knows the daemon only through the client and the wire types.
#[test]
fn the_dashboard_names_nothing_of_the_daemon() {
    assert_names_none(
        "src/tui",
        &[
            "crate::store",
            "crate::live",
            "crate::app",
            "crate::http",
            "sqlx",
            "axum",
        ],
        10,
    );
}

/// The client answers in wire types; the dashboard maps them to its messages.
#[test]
fn the_daemon_client_knows_nothing_of_the_dashboard() {
    assert_names_none("src/client", &["crate::tui", "ratatui", "crossterm"], 3);
}

/// What of a URL may be shown is pure text, used by the store, the client and the commands
/// alike: it names none of them, nor any runtime, database or web crate.
#[test]
fn the_redaction_of_urls_names_no_layer() {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("src/redact.rs");
    let text = std::fs::read_to_string(&path).unwrap();
    for forbidden in ["crate::", "sqlx", "tokio", "axum", "reqwest", "hyper"] {
        assert!(!text.contains(forbidden), "src/redact.rs names {forbidden}");
    }
}

/// Modules stay small enough to read whole: no file of the program passes 500 lines; unit
/// tests, which may, live in `tests.rs` files beside the module they test.
#[test]
fn no_module_of_the_program_passes_500_lines() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut pending = vec![root];
    let mut checked = 0;
    let mut long = Vec::new();
    while let Some(dir) = pending.pop() {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                pending.push(path);
            } else if path.extension().is_some_and(|ext| ext == "rs")
                && path.file_name().is_some_and(|name| name != "tests.rs")
            {
                let lines = std::fs::read_to_string(&path).unwrap().lines().count();
                if lines > 500 {
                    long.push(format!("{} ({lines} lines)", path.display()));
                }
                checked += 1;
            }
        }
    }
    assert!(checked >= 100, "found only {checked} files under src");
    assert!(long.is_empty(), "{long:#?}");
}
