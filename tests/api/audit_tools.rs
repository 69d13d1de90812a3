//! `fencewatch audit`: answering an auditor's questions from the database alone, detecting
//! tampering, pruning without breaking the evidence, and exporting every field.

use crate::helpers::{Backend, TestApp, TestDb};
use crate::on_raw;
use crate::test_db;
use serde_json::{json, Value};
use sha2::{Digest, Sha256};
use sqlx::Row;
use std::time::Duration;
use tokio::process::Command;

const BIN: &str = env!("CARGO_BIN_EXE_fencewatch");

/// Runs `fencewatch audit --database … ARGS`; returns the exit code and stdout.
async fn audit(db: &TestDb, args: &[&str]) -> (i32, String) {
    let output = Command::new(BIN)
        .args(["audit", "--database", &db.url])
        .args(args)
        .env("FENCEWATCH_LOG", "warn")
        .output()
        .await
        .unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(!stderr.contains("error:"), "{stderr}");
    (
        output.status.code().unwrap_or(-1),
        String::from_utf8(output.stdout).unwrap(),
    )
}

/// Runs `fencewatch audit --database URL ARGS`; returns the exit code, stdout and stderr.
async fn audit_output(url: &str, args: &[&str]) -> (i32, String, String) {
    let output = Command::new(BIN)
        .args(["audit", "--database", url])
        .args(args)
        .env("FENCEWATCH_LOG", "warn")
        .output()
        .await
        .unwrap();
    (
        output.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&output.stdout).into_owned(),
        String::from_utf8_lossy(&output.stderr).into_owned(),
    )
}

async fn audit_json(db: &TestDb, args: &[&str]) -> Value {
    let (code, stdout) = audit(db, args).await;
    assert_eq!(code, 0, "{stdout}");
    serde_json::from_str(&stdout).unwrap()
}

fn sha256(text: &str) -> String {
    hex::encode(Sha256::digest(text.as_bytes()))
}

async fn acquire(app: &TestApp, holder: &str, ttl_ms: i64) -> i64 {
    let reply = app
        .http
        .post(format!("{}/v1/leases/jobs/acquire", app.base))
        .json(&json!({"holder": holder, "ttl_ms": ttl_ms}))
        .send()
        .await
        .unwrap();
    reply.json::<Value>().await.unwrap()["token"]
        .as_i64()
        .unwrap()
}

/// The incident an auditor must reconstruct: w1's lease lapses while it is paused, w2 takes
/// over, w1 comes back and keeps writing; one of its writes, made without naming the lease, lands
/// on a resource that had not yet seen generation 2.
#[rstest::rstest]
#[case::sqlite(Backend::Sqlite)]
#[cfg_attr(
    not(fencewatch_pg),
    ignore = "needs PostgreSQL: set FENCEWATCH_TEST_PG"
)]
#[case::postgres(Backend::Postgres)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_scripted_incident_answers_the_five_questions(#[case] backend: Backend) {
    let db = test_db!(backend);
    let app = TestApp::spawn(&db).await;
    assert_eq!(acquire(&app, "w1", 300).await, 1);
    let first = app
        .put("jobs/a")
        .token(1)
        .lease("jobs")
        .owner("w1")
        .key("a-1")
        .body("v1")
        .send()
        .await;
    assert_eq!(first.status, 201);
    tokio::time::sleep(Duration::from_millis(400)).await; // w1 is paused past its lease
    assert_eq!(acquire(&app, "w2", 60_000).await, 2);
    let second = app
        .put("jobs/a")
        .token(2)
        .lease("jobs")
        .owner("w2")
        .key("a-2")
        .body("v2")
        .send()
        .await;
    assert_eq!(second.status, 200);
    for key in ["a-3", "a-4"] {
        app.put("jobs/a")
            .token(1)
            .lease("jobs")
            .owner("w1")
            .key(key)
            .body("stale")
            .send()
            .await
            .assert_problem(409, "stale-token");
    }
    let late = app
        .put("jobs/b")
        .token(1)
        .owner("w1")
        .key("b-1")
        .body("late")
        .send()
        .await;
    assert_eq!(
        late.status, 201,
        "without Fencing-Lease the fence alone cannot know"
    );

    // The incidents.
    let incidents = audit_json(&db, &["incidents", "--json"]).await["incidents"]
        .as_array()
        .unwrap()
        .clone();
    assert_eq!(incidents.len(), 1);
    let incident = &incidents[0];
    assert_eq!(
        (
            incident["resource"].as_str(),
            incident["stale_token"].as_i64(),
            incident["superseding_token"].as_i64()
        ),
        (Some("jobs/a"), Some(1), Some(2))
    );
    assert_eq!(
        (
            incident["stale_owner"].as_str(),
            incident["superseding_owner"].as_str()
        ),
        (Some("w1"), Some("w2"))
    );
    assert_eq!(incident["rejected_writes"], 2);

    let around = incident["id"].to_string();
    let timeline = audit_json(&db, &["timeline", "jobs/a", "--around", &around, "--json"]).await;
    assert_eq!(timeline["leases"], json!(["jobs"]));
    // Another resource's timeline around this incident would show unrelated rows: refused.
    let (code, stdout, stderr) =
        audit_output(&db.url, &["timeline", "jobs/b", "--around", &around]).await;
    assert_ne!(code, 0, "{stdout}");
    assert!(stdout.is_empty(), "{stdout}");
    assert!(
        stderr.contains(&format!("incident {around} is of resource \"jobs/a\"")),
        "{stderr}"
    );

    // 1. Who held generation G at time T.
    let holders = timeline["holders"].as_array().unwrap();
    assert_eq!(holders.len(), 2);
    assert_eq!(
        (
            holders[0]["token"].as_i64(),
            holders[0]["holder"].as_str(),
            holders[0]["ended_by"].as_str()
        ),
        (Some(1), Some("w1"), Some("expired"))
    );
    assert_eq!(
        (holders[1]["token"].as_i64(), holders[1]["holder"].as_str()),
        (Some(2), Some("w2"))
    );
    assert!(holders[1]["until"].is_null(), "generation 2 is still held");
    let writes: Vec<&Value> = timeline["entries"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["kind"] == "write")
        .collect();
    let first_at = writes[0]["at"].as_str().unwrap();
    assert!(
        holders[0]["from"].as_str().unwrap() <= first_at
            && first_at <= holders[0]["until"].as_str().unwrap(),
        "w1 held generation 1 when it wrote"
    );

    // 2. When the stale owner's writes landed after the newer generation was accepted.
    let accepted_newer = writes
        .iter()
        .find(|w| w["outcome"] == "accepted" && w["token"] == 2)
        .unwrap()["at"]
        .as_str()
        .unwrap()
        .to_owned();
    let stale: Vec<&&Value> = writes
        .iter()
        .filter(|w| w["outcome"] == "superseded")
        .collect();
    assert_eq!(stale.len(), 2);
    assert!(stale
        .iter()
        .all(|w| w["at"].as_str().unwrap() > accepted_newer.as_str() && w["owner"] == "w1"));
    // Lease events are interleaved in time order with the writes.
    let kinds: Vec<&str> = timeline["entries"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["kind"].as_str().unwrap())
        .collect();
    assert_eq!(kinds.first(), Some(&"lease"));
    let times: Vec<&str> = timeline["entries"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["at"].as_str().unwrap())
        .collect();
    assert!(times.windows(2).all(|pair| pair[0] <= pair[1]));

    // 3. Was any stale write ever accepted: not on jobs/a, but yes on jobs/b.
    assert_eq!(timeline["accepted_while_superseded"], json!([]));
    let other = audit_json(&db, &["timeline", "jobs/b", "--json"]).await;
    assert_eq!(
        other["accepted_while_superseded"],
        json!([late.json["audit_id"]])
    );

    // 4. Which operations were rejected.
    let rejected: Vec<(&str, &str)> = timeline["rejected"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            (
                r["idempotency_key"].as_str().unwrap(),
                r["outcome"].as_str().unwrap(),
            )
        })
        .collect();
    assert_eq!(rejected, [("a-3", "superseded"), ("a-4", "superseded")]);

    // 5. The resource before and after each move of the fence.
    let accepted: Vec<&&Value> = writes
        .iter()
        .filter(|w| w["outcome"] == "accepted")
        .collect();
    assert_eq!(
        (
            accepted[0]["revision_before"].as_i64(),
            accepted[0]["revision_after"].as_i64()
        ),
        (Some(0), Some(1))
    );
    assert!(accepted[0]["value_sha256_before"].is_null());
    assert_eq!(accepted[0]["value_sha256_after"], sha256("v1"));
    assert_eq!(
        (
            accepted[1]["revision_before"].as_i64(),
            accepted[1]["revision_after"].as_i64()
        ),
        (Some(1), Some(2))
    );
    assert_eq!(accepted[1]["value_sha256_before"], sha256("v1"));
    assert_eq!(accepted[1]["value_sha256_after"], sha256("v2"));

    // The log answers the same with filters.
    let (_, log) = audit(&db, &["log", "--outcome", "superseded", "--json"]).await;
    assert_eq!(log.lines().count(), 2);
    let (_, log) = audit(&db, &["log", "--owner", "w2", "--json"]).await;
    assert_eq!(log.lines().count(), 1);
    let (_, log) = audit(
        &db,
        &[
            "log",
            "--resource",
            "jobs/a",
            "--token",
            "1",
            "--since",
            "1h",
        ],
    )
    .await;
    assert_eq!(log.lines().count(), 1 + 3, "a header and three rows");
    // And everything verifies.
    assert_eq!(audit(&db, &["verify"]).await.0, 0);
}

/// A small audit: five attempts on r1, four on r2. Returns r1's audit ids.
async fn populate(app: &TestApp) -> Vec<i64> {
    let mut ids = Vec::new();
    for (token, body) in [(1, "a"), (2, "b"), (1, "c"), (2, "d"), (3, "e")] {
        ids.push(
            app.put("r1")
                .token(token)
                .owner("w")
                .body(body)
                .send()
                .await
                .json["audit_id"]
                .as_i64()
                .unwrap(),
        );
        if token < 3 {
            app.put("r2").token(token).body(body).send().await;
        }
    }
    ids
}

async fn breach(db: &TestDb) -> Value {
    let (code, stdout) = audit(db, &["verify", "--json"]).await;
    assert_eq!(code, 1, "tampering must fail verification: {stdout}");
    let report: Value = serde_json::from_str(&stdout).unwrap();
    let breaches = report["breaches"].as_array().unwrap();
    assert_eq!(breaches.len(), 1, "{report}");
    assert_eq!(
        breaches[0]["resource"], "r1",
        "r2 is untouched and verifies"
    );
    breaches[0].clone()
}

const DATA_COLUMNS: &str =
    "at_us, resource, outcome, token, highest_token, revision, idempotency_key, \
     expected_revision, owner, lease, body_sha256, body_len, detail, caller, seq, prev_hash, hash";

#[rstest::rstest]
#[case::sqlite_update(Backend::Sqlite, "update")]
#[case::sqlite_delete(Backend::Sqlite, "delete")]
#[case::sqlite_insert(Backend::Sqlite, "insert")]
#[case::sqlite_swap(Backend::Sqlite, "swap")]
#[cfg_attr(
    not(fencewatch_pg),
    ignore = "needs PostgreSQL: set FENCEWATCH_TEST_PG"
)]
#[case::postgres_update(Backend::Postgres, "update")]
#[cfg_attr(
    not(fencewatch_pg),
    ignore = "needs PostgreSQL: set FENCEWATCH_TEST_PG"
)]
#[case::postgres_delete(Backend::Postgres, "delete")]
#[cfg_attr(
    not(fencewatch_pg),
    ignore = "needs PostgreSQL: set FENCEWATCH_TEST_PG"
)]
#[case::postgres_insert(Backend::Postgres, "insert")]
#[cfg_attr(
    not(fencewatch_pg),
    ignore = "needs PostgreSQL: set FENCEWATCH_TEST_PG"
)]
#[case::postgres_swap(Backend::Postgres, "swap")]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tampering_is_detected_and_the_row_named(#[case] backend: Backend, #[case] tamper: &str) {
    let db = test_db!(backend);
    let app = TestApp::spawn(&db).await;
    let ids = populate(&app).await;
    let report = audit_json(&db, &["verify", "--json"]).await;
    assert_eq!(
        (report["rows"].as_i64(), report["resources"].as_i64()),
        (Some(9), Some(2))
    );
    assert_eq!(report["breaches"], json!([]));

    let pool = db.raw_pool().await;
    let found = match tamper {
        "update" => {
            on_raw!(&pool, h => sqlx::query("UPDATE audit SET owner = 'mallory' WHERE id = $1")
                .bind(ids[2])
                .execute(h)
                .await
                .unwrap().rows_affected());
            let found = breach(&db).await;
            assert!(found["problem"].as_str().unwrap().contains("changed"));
            (found, ids[2])
        }
        "delete" => {
            on_raw!(&pool, h => sqlx::query("DELETE FROM audit WHERE id = $1")
                .bind(ids[1])
                .execute(h)
                .await
                .unwrap().rows_affected());
            let found = breach(&db).await;
            assert!(found["problem"].as_str().unwrap().contains("missing"));
            (found, ids[2])
        }
        "insert" => {
            let id: i64 = on_raw!(&pool, h => sqlx::query_scalar(
                "INSERT INTO audit (at_us, resource, outcome, token, highest_token, revision) \
                 VALUES (1, 'r1', 'accepted', 9, 9, 9) RETURNING id",
            )
            .fetch_one(h)
            .await
            .unwrap());
            (breach(&db).await, id)
        }
        _ => {
            // Swap everything but the ids of two rows: the same rows, in another order.
            let sql = format!("SELECT {DATA_COLUMNS} FROM audit WHERE id = $1");
            on_raw!(&pool, h => {
            let a = sqlx::query(&sql)
                .bind(ids[1])
                .fetch_one(h)
                .await
                .unwrap();
            let b = sqlx::query(&sql)
                .bind(ids[3])
                .fetch_one(h)
                .await
                .unwrap();
            for (row, target) in [(&a, ids[3]), (&b, ids[1])] {
                sqlx::query(
                    "UPDATE audit SET at_us = $2, outcome = $3, token = $4, highest_token = $5, revision = $6, \
                     body_sha256 = $7, seq = $8, prev_hash = $9, hash = $10 WHERE id = $1",
                )
                .bind(target)
                .bind(row.get::<i64, _>("at_us"))
                .bind(row.get::<String, _>("outcome"))
                .bind(row.get::<Option<i64>, _>("token"))
                .bind(row.get::<i64, _>("highest_token"))
                .bind(row.get::<i64, _>("revision"))
                .bind(row.get::<Option<Vec<u8>>, _>("body_sha256"))
                .bind(row.get::<i64, _>("seq"))
                .bind(row.get::<Vec<u8>, _>("prev_hash"))
                .bind(row.get::<Vec<u8>, _>("hash"))
                .execute(h)
                .await
                .unwrap();
            }
            });
            let found = breach(&db).await;
            assert!(
                found["problem"].as_str().unwrap().contains("out of order"),
                "{found}"
            );
            (found, ids[1])
        }
    };
    let (found, row) = found;
    assert_eq!(found["audit_id"], row, "{found}");
    let (_, human) = audit(&db, &["verify"]).await;
    assert!(human.contains(&format!("audit row {row}")), "{human}");
}

#[rstest::rstest]
#[case::sqlite(Backend::Sqlite)]
#[cfg_attr(
    not(fencewatch_pg),
    ignore = "needs PostgreSQL: set FENCEWATCH_TEST_PG"
)]
#[case::postgres(Backend::Postgres)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pruning_keeps_the_rest_verifiable(#[case] backend: Backend) {
    let db = test_db!(backend);
    let app = TestApp::spawn(&db).await;
    populate(&app).await;
    tokio::time::sleep(Duration::from_millis(50)).await;
    let cutoff = fencewatch::domain::audit::format_rfc3339_micros(&chrono::Utc::now());
    tokio::time::sleep(Duration::from_millis(50)).await;
    let kept: Vec<i64> = {
        let mut kept = Vec::new();
        for token in 4..=6 {
            kept.push(
                app.put("r1").token(token).body("new").send().await.json["audit_id"]
                    .as_i64()
                    .unwrap(),
            );
        }
        kept
    };
    let pruned = audit_json(&db, &["prune", "--before", &cutoff, "--json"]).await;
    assert_eq!(
        (pruned["rows"].as_i64(), pruned["resources"].as_i64()),
        (Some(9), Some(2))
    );
    let report = audit_json(&db, &["verify", "--json"]).await;
    assert_eq!(report["breaches"], json!([]), "{report}");
    assert_eq!(report["rows"], 3);
    // What remains is still protected.
    let pool = db.raw_pool().await;
    on_raw!(&pool, h => sqlx::query("UPDATE audit SET token = 99 WHERE id = $1")
        .bind(kept[1])
        .execute(h)
        .await
        .unwrap().rows_affected());
    assert_eq!(breach(&db).await["audit_id"], kept[1]);
    // Writes go on after pruning, on the same chain.
    on_raw!(&pool, h => sqlx::query("UPDATE audit SET token = 5 WHERE id = $1")
        .bind(kept[1])
        .execute(h)
        .await
        .unwrap().rows_affected());
    app.put("r1").token(7).body("later").send().await;
    assert_eq!(audit(&db, &["verify"]).await.0, 0);
}

#[rstest::rstest]
#[case::sqlite(Backend::Sqlite)]
#[cfg_attr(
    not(fencewatch_pg),
    ignore = "needs PostgreSQL: set FENCEWATCH_TEST_PG"
)]
#[case::postgres(Backend::Postgres)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pruning_also_forgets_old_lease_events_closed_overlaps_and_alert_transitions(
    #[case] backend: Backend,
) {
    let db = test_db!(backend);
    let app = TestApp::spawn(&db).await;
    acquire(&app, "w1", 60_000).await;
    let pool = db.raw_pool().await;
    // An old history beside the one the daemon just wrote: a day ago is `old`.
    let old = chrono::Utc::now().timestamp_micros() - 86_400_000_000;
    on_raw!(&pool, h => sqlx::query(
        "INSERT INTO lease_events (at_us, lease, event, holder, token, expires_at_us) \
         VALUES ($1, 'job', 'acquired', 'w0', 1, $1)",
    )
    .bind(old)
    .execute(h)
    .await
    .unwrap().rows_affected());
    for (stale, state, at) in [(1, "closed", old), (2, "open", old), (3, "closed", old + 1)] {
        on_raw!(&pool, h => sqlx::query(
            "INSERT INTO ownership_overlaps (resource, stale_token, superseding_token, \
             first_seen_us, last_seen_us, rejected_writes, state, closed_at_us, updated_at_us) \
             VALUES ('r', $1, 9, $2, $4, 1, $3, $2, $4)",
        )
        .bind(stale)
        .bind(at)
        .bind(state)
        // The open one was seen just now: quiet since long ago, the daemon's overlap watcher
        // would close it under the test.
        .bind(match state {
            "open" => chrono::Utc::now().timestamp_micros(),
            _ => at,
        })
        .execute(h)
        .await
        .unwrap()
        .rows_affected());
    }
    for at in [old, chrono::Utc::now().timestamp_micros()] {
        on_raw!(&pool, h => sqlx::query(
            "INSERT INTO alert_transitions (at_us, rule, instance, from_state, to_state, value, \
             fence_token) VALUES ($1, 'rule', '', 'ok', 'firing', 1, 1)",
        )
        .bind(at)
        .execute(h)
        .await
        .unwrap().rows_affected());
    }
    // The daemon's own alert evaluator holds a lease too, so other events may come meanwhile.
    let count = |sql: &'static str| {
        let pool = pool.clone();
        async move {
            on_raw!(&pool, h => sqlx::query_scalar::<_, i64>(sql)
                .bind(old)
                .fetch_one(h)
                .await
                .unwrap())
        }
    };

    // The cutoff is an hour ago: everything the daemon wrote stays.
    let cutoff = fencewatch::domain::audit::format_rfc3339_micros(
        &(chrono::Utc::now() - chrono::Duration::hours(1)),
    );
    let pruned = audit_json(&db, &["prune", "--before", &cutoff, "--json"]).await;
    assert_eq!(
        (
            pruned["lease_events"].as_i64(),
            pruned["closed_overlaps"].as_i64(),
            pruned["alert_transitions"].as_i64(),
        ),
        (Some(1), Some(2), Some(1)),
        "{pruned}"
    );
    let old_events = "SELECT COUNT(*) FROM lease_events WHERE at_us <= $1";
    assert_eq!(count(old_events).await, 0);
    let ours = "SELECT COUNT(*) FROM lease_events WHERE lease = 'jobs' AND at_us > $1";
    assert_eq!(count(ours).await, 1, "the acquire just made stays");
    let overlaps: Vec<(i64, String)> = on_raw!(&pool, h => sqlx::query_as("SELECT stale_token, state FROM ownership_overlaps")
            .fetch_all(h)
            .await
            .unwrap());
    assert_eq!(overlaps, [(2, "open".to_owned())], "an open overlap stays");
    let transitions = "SELECT COUNT(*) FROM alert_transitions WHERE at_us <= $1";
    assert_eq!(count(transitions).await, 0);
    let recent = "SELECT COUNT(*) FROM alert_transitions WHERE rule = 'rule' AND at_us > $1";
    assert_eq!(count(recent).await, 1);
    // The daemon's own lease is untouched.
    assert_eq!(
        app.http
            .get(format!("{}/v1/leases/jobs", app.base))
            .send()
            .await
            .unwrap()
            .status(),
        200
    );
}

#[rstest::rstest]
#[case::sqlite(Backend::Sqlite)]
#[cfg_attr(
    not(fencewatch_pg),
    ignore = "needs PostgreSQL: set FENCEWATCH_TEST_PG"
)]
#[case::postgres(Backend::Postgres)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn export_round_trips_every_row_and_field(#[case] backend: Backend) {
    let db = test_db!(backend);
    let app = TestApp::spawn(&db).await;
    app.put("x/1")
        .token(3)
        .owner("o,with \"quotes\"")
        .key("k1")
        .if_match(0)
        .header("Content-Type", "text/plain")
        .body("one")
        .send()
        .await;
    app.put("x/1")
        .token(2)
        .lease("none")
        .body("two")
        .send()
        .await;
    app.put("x/1").token(0).body("bad").send().await;
    app.put("x/2")
        .token(4)
        .key("k2")
        .body("line\nbreak")
        .send()
        .await;
    let api: Vec<Value> = app.get("/v1/audit").await.json["entries"]
        .as_array()
        .unwrap()
        .iter()
        .rev()
        .cloned()
        .collect();
    assert_eq!(api.len(), 4);

    let (code, jsonl) = audit(&db, &["export", "--format", "jsonl"]).await;
    assert_eq!(code, 0);
    let rows: Vec<Value> = jsonl
        .lines()
        .map(|line| serde_json::from_str(line).unwrap())
        .collect();
    assert_eq!(rows.len(), api.len());
    for (row, expected) in rows.iter().zip(&api) {
        for (field, value) in expected.as_object().unwrap() {
            assert_eq!(&row[field], value, "{field}");
        }
        assert!(row["hash"].as_str().unwrap().len() == 64 && row["seq"].as_i64().unwrap() >= 1);
    }

    let (code, csv_text) = audit(&db, &["export", "--format", "csv", "--resource", "x/1"]).await;
    assert_eq!(code, 0);
    let mut reader = csv::Reader::from_reader(csv_text.as_bytes());
    let headers: Vec<String> = reader
        .headers()
        .unwrap()
        .iter()
        .map(str::to_owned)
        .collect();
    assert_eq!(headers, fencewatch::commands::audit::CSV_COLUMNS);
    let records: Vec<csv::StringRecord> = reader.records().map(Result::unwrap).collect();
    let expected: Vec<&Value> = rows.iter().filter(|r| r["resource"] == "x/1").collect();
    assert_eq!(records.len(), expected.len());
    for (record, row) in records.iter().zip(expected) {
        for (index, column) in headers.iter().enumerate() {
            let want = match &row[column] {
                Value::Null => String::new(),
                Value::String(text) => text.clone(),
                other => other.to_string(),
            };
            assert_eq!(&record[index], want, "{column}");
        }
    }
    // Filters apply to export too.
    let (_, only) = audit(
        &db,
        &["export", "--format", "jsonl", "--outcome", "invalid"],
    )
    .await;
    assert_eq!(only.lines().count(), 1);
}

/// A mistyped path is an error naming it, for every subcommand, and nothing is created: a
/// tamper check must never vouch for an empty database it made itself.
#[tokio::test]
async fn a_missing_sqlite_file_is_an_error_and_stays_missing() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("typo.db");
    let url = format!("sqlite://{}", path.display());
    for args in [
        vec!["verify"],
        vec!["incidents"],
        vec!["log"],
        vec!["export", "--format", "jsonl"],
        vec!["timeline", "jobs/a"],
        vec!["prune", "--before", "1h"],
    ] {
        let (code, stdout, stderr) = audit_output(&url, &args).await;
        assert_ne!(code, 0, "{args:?}: {stdout}");
        assert!(!stdout.contains("ok:"), "{args:?}: {stdout}");
        assert!(
            stderr.contains(&path.display().to_string()),
            "{args:?}: the message names the path: {stderr}"
        );
        assert_eq!(
            stderr.matches("failed to open the database").count(),
            1,
            "{args:?}: the action is named once: {stderr}"
        );
        assert!(!path.exists(), "{args:?} created {}", path.display());
        assert!(std::fs::read_dir(dir.path()).unwrap().next().is_none());
    }
    // A file that is not fencewatch's is refused too, and left as it was.
    std::fs::write(&path, b"").unwrap();
    let (code, stdout, stderr) = audit_output(&url, &["verify"]).await;
    assert_ne!(code, 0, "{stdout}");
    assert!(stderr.contains("not a fencewatch database"), "{stderr}");
    assert_eq!(std::fs::metadata(&path).unwrap().len(), 0);
}

/// The audit tools open the database read-only: the database itself refuses their writes, and
/// a schema they would have to migrate is refused rather than migrated.
#[rstest::rstest]
#[case::sqlite(Backend::Sqlite)]
#[cfg_attr(
    not(fencewatch_pg),
    ignore = "needs PostgreSQL: set FENCEWATCH_TEST_PG"
)]
#[case::postgres(Backend::Postgres)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_audit_tools_read_and_never_write(#[case] backend: Backend) {
    use fencewatch::store::{OpenMode, Store, StoreOptions};
    let db = test_db!(backend);
    let app = TestApp::spawn(&db).await;
    populate(&app).await;
    let read_only = Store::open(
        &db.url,
        &StoreOptions {
            max_connections: 2,
            mode: OpenMode::ReadOnly,
            ..StoreOptions::default()
        },
    )
    .await
    .unwrap();
    assert_eq!(read_only.verify_audit().await.unwrap().rows, 9);
    let future = chrono::Utc::now().timestamp_micros() + 60_000_000;
    let refused = read_only.prune_audit(future).await;
    assert!(refused.is_err(), "a read-only store pruned: {refused:?}");
    read_only.close().await;
    assert_eq!(
        audit_json(&db, &["verify", "--json"]).await["rows"],
        9,
        "nothing was pruned"
    );

    // A schema one migration behind: refused, and still behind afterwards.
    let pool = db.raw_pool().await;
    let newest: i64 = on_raw!(&pool, h => sqlx::query_scalar("SELECT MAX(version) FROM _sqlx_migrations")
        .fetch_one(h)
        .await
        .unwrap());
    on_raw!(&pool, h => sqlx::query("DELETE FROM _sqlx_migrations WHERE version = $1")
        .bind(newest)
        .execute(h)
        .await
        .unwrap().rows_affected());
    let (code, stdout, stderr) = audit_output(&db.url, &["verify"]).await;
    assert_ne!(code, 0, "{stdout}");
    assert!(stderr.contains("schema is older"), "{stderr}");
    let still: i64 = on_raw!(&pool, h => sqlx::query_scalar("SELECT MAX(version) FROM _sqlx_migrations")
        .fetch_one(h)
        .await
        .unwrap());
    assert!(still < newest, "the audit tool migrated the database");
}
