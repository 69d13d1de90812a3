//! The layers stay apart: nothing under `src/domain/` may name the edges, the dashboard's model
//! names no terminal crate, and the daemon client knows nothing of the dashboard.

#[test]
fn the_domain_names_no_database_runtime_web_or_terminal_crate() {
    let folder = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("src/domain");
    let mut checked = 0;
    for entry in std::fs::read_dir(&folder).unwrap() {
        let path = entry.unwrap().path();
        let text = std::fs::read_to_string(&path).unwrap();
        for forbidden in ["sqlx", "tokio", "axum", "ratatui", "crossterm", "reqwest"] {
            assert!(
                !text.contains(forbidden),
                "{} names {forbidden}",
                path.display()
            );
        }
        checked += 1;
    }
    assert!(checked >= 5, "found only {checked} files under src/domain");
}

/// Asserts that no file directly under `folder` names any of `forbidden`.
fn assert_names_none(folder: &str, forbidden: &[&str], at_least: usize) {
    let folder = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join(folder);
    let mut checked = 0;
    for entry in std::fs::read_dir(&folder).unwrap() {
        let path = entry.unwrap().path();
        let text = std::fs::read_to_string(&path).unwrap();
        for name in forbidden {
            assert!(!text.contains(name), "{} names {name}", path.display());
        }
        checked += 1;
    }
    assert!(
        checked >= at_least,
        "found only {checked} files under {}",
        folder.display()
    );
}

/// The view draws the model; the model is plain state, tested by feeding it messages.
#[test]
fn the_dashboard_model_names_no_terminal_crate() {
    assert_names_none("src/tui/model", &["ratatui", "crossterm"], 3);
}

/// The client answers in wire types; the dashboard maps them to its messages.
#[test]
fn the_daemon_client_knows_nothing_of_the_dashboard() {
    assert_names_none("src/client", &["crate::tui", "ratatui", "crossterm"], 3);
}
