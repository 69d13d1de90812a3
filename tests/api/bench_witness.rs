//! `fencewatch bench --witness-interval D`: the same HTTP load against a daemon that signs
//! audit checkpoints, reported beside the plain fence with the checkpoints it signed.

use crate::both_backends;
use crate::helpers::{bench_report, Backend};
use crate::test_db;
use rstest_reuse::apply;
use std::time::Duration;

/// On its temporary SQLite files, or on the test's PostgreSQL database shared by both daemons.
#[apply(both_backends)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_bench_measures_the_witness_beside_the_plain_fence(#[case] backend: Backend) {
    let db = test_db!(backend);
    let mut args = vec![
        "--duration",
        "2s",
        "--witness-interval",
        "500ms",
        "--connections",
        "2",
        "--resources",
        "10",
        "--stale",
        "0.5",
        "--no-baseline",
        "--json",
    ];
    if backend == Backend::Postgres {
        args.extend(["--database", db.url.as_str()]);
    }
    let report = bench_report(&args, Duration::from_secs(90)).await;
    let witness = &report["witness"];
    assert_eq!(witness["writes"]["path"], "http witness", "{report}");
    assert_eq!(witness["interval_ms"], 500, "{report}");
    for path in [&report["http"], &witness["writes"]] {
        assert!(path["requests"].as_u64().unwrap() > 0, "{report}");
        assert_eq!(path["errors"], 0, "{report}");
        assert!(
            path["accepted"].as_u64().unwrap() > 0 && path["rejected"].as_u64().unwrap() > 0,
            "{report}"
        );
        assert!(path["p50_ms"].as_f64().unwrap() <= path["p99_ms"].as_f64().unwrap());
    }
    assert!(
        witness["cpu"]["daemon_us"].as_f64().unwrap() > 0.0,
        "{report}"
    );
    assert!(
        witness["daemon_peak_rss_mib"].as_f64().unwrap() > 1.0,
        "{report}"
    );
    // The first at the daemon's start, then one each round the writes had changed the audit:
    // over 2 s of writes at 500 ms, more than the first alone.
    assert!(witness["checkpoints"].as_u64().unwrap() >= 2, "{report}");
}
