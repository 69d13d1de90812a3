//! `fencewatch audit incidents | timeline | log | export | verify --database URL` on a database
//! that holds a fence rather than the daemon's tables: its incidents derived from its refusals,
//! its rows logged and exported with the fence's columns, its chains verified (SQLite's
//! unsealed tail said so, a changed row found). With the daemon's tables there too, the tools
//! read the daemon's unless `--fence` is given.

use crate::both_backends;
use crate::helpers::{Backend, UserConn, UserDb};
use fencewatch::store::{Store, StoreOptions};
use rstest_reuse::apply;
use serde_json::Value;
use tokio::process::Command;

const BIN: &str = env!("CARGO_BIN_EXE_fencewatch");

/// Runs `fencewatch audit --database URL ARGS`: exit code, stdout, stderr.
async fn audit(url: &str, args: &[&str]) -> (i32, String, String) {
    let output = Command::new(BIN)
        .args(["audit", "--database", url])
        .args(args)
        .env("FENCEWATCH_LOG", "warn")
        .output()
        .await
        .unwrap();
    (
        output.status.code().unwrap_or(-1),
        String::from_utf8(output.stdout).unwrap(),
        String::from_utf8(output.stderr).unwrap(),
    )
}

async fn audit_json(url: &str, args: &[&str]) -> Value {
    let (code, stdout, stderr) = audit(url, args).await;
    assert_eq!(code, 0, "{stdout}{stderr}");
    serde_json::from_str(&stdout).unwrap_or_else(|e| panic!("{e}: {stdout}"))
}

fn json_lines(text: &str) -> Vec<Value> {
    text.lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

/// Order 1 in scope `eu`: generation 8 by `new-owner`, then generation 7 by `old-owner` twice
/// (refused), then order 2 in `us` by `solo`.
async fn incident(conn: &mut UserConn) {
    for sql in [
        "INSERT INTO orders (id, tok, region, val, op, who) VALUES (1, 8, 'eu', 'a', 'op-8', 'new-owner')",
        "UPDATE orders SET tok = 7, val = 'b', op = 'op-7a', who = 'old-owner' WHERE id = 1",
        "UPDATE orders SET tok = 7, val = 'c', op = 'op-7b', who = 'old-owner' WHERE id = 1",
        "INSERT INTO orders (id, tok, region, val, op, who) VALUES (2, 3, 'us', 'd', 'op-3', 'solo')",
    ] {
        conn.run(sql).await.unwrap();
    }
}

#[apply(both_backends)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_audit_tools_read_an_installed_fence(#[case] backend: Backend) {
    let (user, fence) = UserDb::with_protected_orders(backend).await;
    let mut conn = user.connect().await;
    incident(&mut conn).await;
    let url = user.url.as_str();

    // Incidents, from the refusals.
    let incidents = audit_json(url, &["incidents", "--json"]).await["incidents"].clone();
    let incidents = incidents.as_array().unwrap();
    assert_eq!(incidents.len(), 1, "{incidents:?}");
    let found = &incidents[0];
    assert_eq!(found["id"], 1);
    assert_eq!(found["resource"], "eu");
    assert_eq!(
        (
            found["stale_token"].clone(),
            found["superseding_token"].clone()
        ),
        (7.into(), 8.into())
    );
    assert_eq!(found["stale_owner"], "old-owner");
    assert_eq!(found["superseding_owner"], "new-owner");
    assert_eq!(found["rejected_writes"], 2);
    assert_eq!(found["state"], "open");
    let (code, table, _) = audit(url, &["incidents"]).await;
    assert_eq!(code, 0);
    assert!(
        table.contains("old-owner") && table.contains("new-owner"),
        "{table}"
    );

    // The log, filtered as the daemon's is.
    let (code, all, _) = audit(url, &["log", "--json", "--oldest-first"]).await;
    assert_eq!(code, 0);
    let all = json_lines(&all);
    assert_eq!(all.len(), 4);
    assert_eq!(
        all[0]["table_name"].as_str().map(|t| t.ends_with("orders")),
        Some(true)
    );
    let (_, stale, _) = audit(url, &["log", "--json", "--outcome", "stale"]).await;
    let stale = json_lines(&stale);
    assert_eq!(stale.len(), 2);
    assert!(stale
        .iter()
        .all(|r| r["owner"] == "old-owner" && r["token"] == 7));
    let (_, limited, _) = audit(url, &["log", "--json", "--resource", "us"]).await;
    assert_eq!(json_lines(&limited).len(), 1);

    // The export, with the fence's columns.
    let (code, csv, _) = audit(url, &["export", "--format", "csv"]).await;
    assert_eq!(code, 0);
    let lines: Vec<&str> = csv.lines().collect();
    assert_eq!(lines.len(), 5, "{csv}");
    assert_eq!(
        lines[0],
        fencewatch::commands::audit::FENCE_CSV_COLUMNS.join(",")
    );
    let (_, jsonl, _) = audit(url, &["export", "--format", "jsonl", "--resource", "eu"]).await;
    assert_eq!(json_lines(&jsonl).len(), 3);

    // The scope's timeline around the incident.
    let timeline = audit_json(url, &["timeline", "eu", "--around", "1", "--json"]).await;
    assert_eq!(timeline["entries"].as_array().unwrap().len(), 3);
    assert_eq!(timeline["rejected"].as_array().unwrap().len(), 2);
    let (code, _, stderr) = audit(url, &["timeline", "us", "--around", "1"]).await;
    assert_ne!(code, 0, "incident 1 is of another scope");
    assert!(stderr.contains("eu"), "{stderr}");

    // Verify: SQLite's rows are unsealed until sealed; a changed row breaks its chain.
    let check = audit_json(url, &["verify", "--json"]).await;
    assert_eq!(check["rows"], 4);
    assert_eq!(check["breaches"].as_array().unwrap().len(), 0);
    let unsealed = match backend {
        Backend::Sqlite => 4,
        Backend::Postgres => 0,
    };
    assert_eq!(check["unsealed"], unsealed);
    if backend == Backend::Sqlite {
        let (code, text, _) = audit(url, &["verify"]).await;
        assert_eq!(code, 0, "an unsealed tail is no fault");
        assert!(text.contains("4 unsealed rows"), "{text}");
        fence.seal().await.unwrap();
        assert_eq!(audit_json(url, &["verify", "--json"]).await["unsealed"], 0);
    }
    let mut admin = user.connect_admin().await;
    admin
        .run(&format!(
            "UPDATE {} SET owner = 'someone-else' WHERE resource = 'eu' AND seq = 2",
            user.audit_table()
        ))
        .await
        .unwrap();
    let (code, text, _) = audit(url, &["verify"]).await;
    assert_eq!(code, 1, "{text}");
    assert!(
        text.contains("BROKEN eu") && text.contains("altered"),
        "{text}"
    );

    // Tools that only the daemon's database has say so.
    let (code, _, stderr) = audit(url, &["refusals"]).await;
    assert_ne!(code, 0);
    assert!(stderr.contains("daemon"), "{stderr}");
    conn.close().await;
    fence.close().await;
}

/// A fence's log is newest first like the daemon's, `--oldest-first` reverses it, and a limit
/// takes the rows at that end of the matching ones.
#[apply(both_backends)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_fences_log_is_newest_first_and_limited_at_that_end(#[case] backend: Backend) {
    let (user, fence) = UserDb::with_protected_orders(backend).await;
    let mut conn = user.connect().await;
    incident(&mut conn).await;
    let url = user.url.as_str();
    let rows = |args: &'static [&'static str]| async move {
        let (code, out, err) = audit(url, args).await;
        assert_eq!(code, 0, "{args:?}: {out}{err}");
        json_lines(&out)
            .iter()
            .map(|r| (r["id"].as_i64().unwrap(), r["idempotency_key"].clone()))
            .collect::<Vec<_>>()
    };
    let oldest = rows(&["log", "--json", "--oldest-first"]).await;
    let keys: Vec<&Value> = oldest.iter().map(|(_, key)| key).collect();
    assert_eq!(keys, ["op-8", "op-7a", "op-7b", "op-3"], "{oldest:?}");
    assert!(oldest.is_sorted_by_key(|(id, _)| *id), "{oldest:?}");
    let newest: Vec<_> = oldest.iter().rev().cloned().collect();
    assert_eq!(rows(&["log", "--json"]).await, newest);
    assert_eq!(rows(&["log", "--json", "--limit", "1"]).await, newest[..1]);
    assert_eq!(rows(&["log", "--json", "--limit", "0"]).await, []);
    assert_eq!(
        rows(&["log", "--json", "--outcome", "stale", "--limit", "1"]).await,
        [oldest[2].clone()]
    );
    assert_eq!(
        rows(&[
            "log",
            "--json",
            "--outcome",
            "stale",
            "--limit",
            "1",
            "--oldest-first"
        ])
        .await,
        [oldest[1].clone()]
    );
    assert_eq!(
        rows(&["log", "--json", "--resource", "eu", "--limit", "5"]).await,
        [oldest[2].clone(), oldest[1].clone(), oldest[0].clone()]
    );
    conn.close().await;
    fence.close().await;
}

/// With the daemon's tables in the same database, the tools read the daemon's audit; `--fence`
/// reads the fence's.
#[apply(both_backends)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn with_the_daemons_tables_too_fence_chooses_the_fence(#[case] backend: Backend) {
    let (user, fence) = UserDb::with_protected_orders(backend).await;
    let mut conn = user.connect().await;
    incident(&mut conn).await;
    let store = Store::open(&user.url, &StoreOptions::default())
        .await
        .unwrap();
    store.close().await;
    let url = user.url.as_str();
    let (code, daemons, _) = audit(url, &["log", "--json"]).await;
    assert_eq!(code, 0);
    assert!(
        daemons.trim().is_empty(),
        "the daemon's audit is empty: {daemons}"
    );
    let (code, fences, _) = audit(url, &["log", "--json", "--fence"]).await;
    assert_eq!(code, 0);
    assert_eq!(json_lines(&fences).len(), 4);
    let incidents = audit_json(url, &["--fence", "incidents", "--json"]).await;
    assert_eq!(incidents["incidents"].as_array().unwrap().len(), 1);
    conn.close().await;
    fence.close().await;

    // A database with neither is still an error, and nothing is created.
    let empty = UserDb::new(backend).await;
    let (code, _, stderr) = audit(&empty.url, &["log"]).await;
    assert_ne!(code, 0);
    assert!(stderr.contains("not a fencewatch database"), "{stderr}");
    let (code, _, stderr) = audit(&empty.url, &["log", "--fence"]).await;
    assert_ne!(code, 0);
    assert!(stderr.contains("no fence is installed"), "{stderr}");
}
