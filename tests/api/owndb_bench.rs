//! The cost measurement users paste (`assets/bench/own-database/run.sh`, docs/performance.md)
//! keeps working: run with one-second pgbench runs, it installs the fence, protects its table,
//! runs the plain and protected scripts at 1 and 32 clients and prints its table. It asserts
//! what the script did, never how fast.

use crate::helpers::{Backend, UserDb};
use rstest::rstest;

#[rstest]
#[cfg_attr(
    not(fencewatch_pg),
    ignore = "needs PostgreSQL: set FENCEWATCH_TEST_PG"
)]
#[tokio::test]
async fn the_own_database_bench_script_runs_both_scripts_and_prints_its_table() {
    let db = UserDb::new(Backend::Postgres).await;
    let out = tokio::process::Command::new("bash")
        .arg("assets/bench/own-database/run.sh")
        .arg(&db.url)
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .env("FENCEWATCH", env!("CARGO_BIN_EXE_fencewatch"))
        .env("DURATION", "1")
        .env("ROUNDS", "1")
        .output()
        .await
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        stdout.contains("one UPDATE of all 1,000 rows: plain "),
        "{stdout}"
    );
    for clients in ["1", "32"] {
        let row = stdout
            .lines()
            .find(|line| line.starts_with(&format!("| 1 | {clients} |")))
            .unwrap_or_else(|| panic!("no row for {clients} clients: {stdout}"));
        let cells: Vec<f64> = row
            .split('|')
            .map(str::trim)
            .filter(|cell| !cell.is_empty())
            .map(|cell| cell.parse().unwrap_or_else(|_| panic!("{cell:?} in {row}")))
            .collect();
        assert_eq!(cells.len(), 7, "{row}");
        assert!(cells[2] > 0.0 && cells[3] > 0.0, "both ran: {row}");
    }

    // The protected writes went through the fence, the plain ones did not: every audit row is
    // bench_fenced's, one per row of the one-statement update at least, and the chain holds.
    let fence = db.fence().await;
    let status = fence.status().await.unwrap();
    let protected: Vec<&str> = status.protected.iter().map(|t| t.table.as_str()).collect();
    assert_eq!(protected, ["bench_fenced"]);
    assert_eq!(status.scopes, 1_000);
    let rows = fence.audit_rows().await.unwrap();
    assert!(rows.len() > 1_000, "{}", rows.len());
    let other = rows.iter().find(|row| {
        row.table_name.as_deref() != Some("public.bench_fenced") || row.outcome != "accepted"
    });
    assert_eq!(other, None);
    assert!(fence.verify().await.unwrap().intact());
    fence.close().await;
}
