//! `fencewatch audit log`: newest first unless `--oldest-first`, and `--limit N` the N rows at
//! that end of the matching ones, whatever the filter.

use crate::both_backends;
use crate::helpers::{Backend, TestApp};
use crate::test_db;
use rstest_reuse::apply;
use serde_json::Value;
use tokio::process::Command;

/// Runs `fencewatch audit --database URL log --json ARGS`; returns the rows' ids.
async fn log_ids(url: &str, args: &[&str]) -> Vec<i64> {
    let output = Command::new(env!("CARGO_BIN_EXE_fencewatch"))
        .args(["audit", "--database", url, "log", "--json"])
        .args(args)
        .env("FENCEWATCH_LOG", "warn")
        .output()
        .await
        .unwrap();
    let stdout = String::from_utf8(output.stdout).unwrap();
    assert!(
        output.status.success(),
        "{args:?}: {stdout}{}",
        String::from_utf8_lossy(&output.stderr)
    );
    stdout
        .lines()
        .map(|line| {
            let row: Value = serde_json::from_str(line).unwrap();
            row["id"].as_i64().unwrap()
        })
        .collect()
}

/// Interleaved writes on two resources by two owners; returns every audit id, oldest first.
async fn populate(app: &TestApp) -> Vec<i64> {
    let mut ids = Vec::new();
    for (resource, token, owner) in [
        ("r1", 1, "w1"),
        ("r2", 1, "w2"),
        ("r1", 2, "w2"),
        ("r1", 1, "w1"),
        ("r2", 3, "w1"),
        ("r1", 1, "w1"),
        ("r2", 2, "w2"),
        ("r1", 3, "w1"),
    ] {
        let reply = app
            .put(resource)
            .token(token)
            .owner(owner)
            .body("x")
            .send()
            .await;
        ids.push(reply.json["audit_id"].as_i64().unwrap());
    }
    ids
}

#[apply(both_backends)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_log_is_newest_first_and_oldest_first_reverses_it(#[case] backend: Backend) {
    let db = test_db!(backend);
    let app = TestApp::spawn(&db).await;
    let ids = populate(&app).await;
    let url = db.url.as_str();
    assert!(ids.is_sorted(), "{ids:?}");

    let newest_first: Vec<i64> = ids.iter().rev().copied().collect();
    assert_eq!(log_ids(url, &[]).await, newest_first);
    assert_eq!(log_ids(url, &["--oldest-first"]).await, ids);
    let r1 = [ids[0], ids[2], ids[3], ids[5], ids[7]];
    assert_eq!(
        log_ids(url, &["--resource", "r1"]).await,
        r1.iter().rev().copied().collect::<Vec<_>>()
    );
    assert_eq!(
        log_ids(url, &["--resource", "r1", "--oldest-first"]).await,
        r1
    );

    // The table too: the header, then the newest row.
    let output = Command::new(env!("CARGO_BIN_EXE_fencewatch"))
        .args(["audit", "--database", url, "log"])
        .env("FENCEWATCH_LOG", "warn")
        .output()
        .await
        .unwrap();
    let table = String::from_utf8(output.stdout).unwrap();
    let lines: Vec<&str> = table.lines().collect();
    assert!(lines[0].starts_with("ID "), "{table}");
    assert!(lines[1].starts_with(&format!("{} ", ids[7])), "{table}");
    assert!(lines[8].starts_with(&format!("{} ", ids[0])), "{table}");
}

#[apply(both_backends)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_limit_takes_the_newest_matching_rows_or_with_oldest_first_the_oldest(
    #[case] backend: Backend,
) {
    let db = test_db!(backend);
    let app = TestApp::spawn(&db).await;
    let ids = populate(&app).await;
    let url = db.url.as_str();
    let at = |i: &[usize]| i.iter().map(|&i| ids[i]).collect::<Vec<i64>>();

    // Each filter shape, with the rows it matches known from `populate`, oldest first.
    let cases: [(&[&str], Vec<i64>); 6] = [
        (&[], ids.clone()),
        (&["--resource", "r1"], at(&[0, 2, 3, 5, 7])),
        (&["--owner", "w2"], at(&[1, 2, 6])),
        (&["--outcome", "stale"], at(&[3, 5, 6])),
        (&["--token", "1"], at(&[0, 1, 3, 5])),
        (&["--resource", "r2", "--owner", "w1"], at(&[4])),
    ];
    for (filter, matching) in cases {
        for limit in [0, 1, 2, 3] {
            let limit_arg = limit.to_string();
            let args: Vec<&str> = filter
                .iter()
                .copied()
                .chain(["--limit", &limit_arg])
                .collect();
            let newest: Vec<i64> = matching.iter().rev().take(limit).copied().collect();
            assert_eq!(log_ids(url, &args).await, newest, "{args:?}");
            let oldest: Vec<i64> = matching.iter().take(limit).copied().collect();
            let args: Vec<&str> = args.into_iter().chain(["--oldest-first"]).collect();
            assert_eq!(log_ids(url, &args).await, oldest, "{args:?}");
        }
    }
    // A time window with a limit: since the third write, the two newest and the two oldest.
    let since = app
        .store
        .audit_after(ids[1], None, 1)
        .await
        .unwrap()
        .first()
        .map(|row| fencewatch::domain::audit::format_rfc3339_micros(&row.at))
        .unwrap();
    assert_eq!(
        log_ids(url, &["--since", &since, "--limit", "2"]).await,
        at(&[7, 6])
    );
    assert_eq!(
        log_ids(url, &["--since", &since, "--limit", "2", "--oldest-first"]).await,
        at(&[2, 3])
    );
}
