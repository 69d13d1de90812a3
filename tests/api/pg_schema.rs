//! `serve --schema NAME`: daemons sharing a PostgreSQL database that an application also uses
//! keep their tables in a schema of their own, and fence together there; starting again is quiet.

use crate::helpers::{http_client, Backend, Daemon, Put, TestDb};
use sqlx::Connection;
use std::process::Stdio;
use tokio::process::Command;

const BIN: &str = env!("CARGO_BIN_EXE_fencewatch");

async fn tables_in(base: &str, schema: &str) -> Vec<String> {
    let mut conn = sqlx::PgConnection::connect(base).await.unwrap();
    let tables: Vec<String> = sqlx::query_scalar(
        "SELECT table_name::text FROM information_schema.tables WHERE table_schema = $1 \
         ORDER BY 1",
    )
    .bind(schema)
    .fetch_all(&mut conn)
    .await
    .unwrap();
    conn.close().await.ok();
    tables
}

#[cfg_attr(not(fencewatch_pg), ignore = "needs FENCEWATCH_TEST_PG")]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_daemons_share_one_fence_in_their_own_schema_and_start_quietly() {
    let base = std::env::var("FENCEWATCH_TEST_PG").unwrap();
    let schema = format!("fw_schema_{}", std::process::id());
    let drop_schema = format!("DROP SCHEMA IF EXISTS {schema} CASCADE");
    let mut conn = sqlx::PgConnection::connect(&base).await.unwrap();
    sqlx::query(&drop_schema).execute(&mut conn).await.unwrap();

    let extra = ["--schema", schema.as_str()];
    let (first, first_log) = Daemon::on(&base)
        .args(&extra)
        .log_level("info")
        .spawn_logged()
        .await;
    let (second, second_log) = Daemon::on(&base)
        .args(&extra)
        .log_level("info")
        .spawn_logged()
        .await;
    let (first_url, second_url) = (first.base.clone(), second.base.clone());
    let client = http_client();
    let put = |base: &str, token: i64| {
        Put::new(&client, format!("{base}/v1/resources/shared/ledger"))
            .token(token)
            .body(format!("from {token}"))
    };
    assert_eq!(put(&first_url, 8).send().await.status, 201);
    // The other daemon reads the same fence: 7 after 8 is stale there too.
    let refused = put(&second_url, 7).send().await;
    assert_eq!(refused.status, 409, "{:?}", refused.json);
    assert_eq!(refused.json["highest_token"], 8);

    let tables = tables_in(&base, &schema).await;
    for table in ["_sqlx_migrations", "audit", "leases", "resources"] {
        assert!(
            tables.iter().any(|t| t == table),
            "{table} not in {schema}: {tables:?}"
        );
    }
    assert!(first.terminate().await && second.terminate().await);
    // The second daemon found the schema migrated: PostgreSQL's notices about what already
    // exists are not logged (at INFO, where the daemon logs that it serves).
    for log in [&first_log, &second_log] {
        assert!(!log.lines_with(&["serving"]).is_empty());
        assert!(log.lines_with(&["already exists"]).is_empty());
    }
    sqlx::query(&drop_schema).execute(&mut conn).await.unwrap();
    conn.close().await.ok();
}

/// A schema name that PostgreSQL would fold or cut, or one given for SQLite, is refused before
/// anything is created.
#[tokio::test]
async fn a_schema_fencewatch_cannot_use_is_refused_and_creates_nothing() {
    let sqlite = TestDb::new(Backend::Sqlite).await;
    for (database, schema, says) in [
        (sqlite.url.as_str(), "Fw", "not a schema name"),
        (sqlite.url.as_str(), "fw; DROP", "not a schema name"),
        (sqlite.url.as_str(), "fw", "is for PostgreSQL"),
    ] {
        let output = Command::new(BIN)
            .args(["serve", "--listen", "127.0.0.1:0", "--database", database])
            .args(["--schema", schema])
            .stdin(Stdio::null())
            .output()
            .await
            .unwrap();
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(!output.status.success(), "{schema}: {stderr}");
        assert!(stderr.contains(says), "{schema}: {stderr}");
        assert!(output.stdout.is_empty(), "{schema}: never listened");
    }
    let file = sqlite.url.strip_prefix("sqlite://").unwrap();
    assert!(
        !std::path::Path::new(file).exists(),
        "no SQLite file created"
    );
}
