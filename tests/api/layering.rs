//! The domain stays pure: nothing under `src/domain/` may name the edges.

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
