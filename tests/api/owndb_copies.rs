//! A database or table replaced by a copy: a database restored under another name keeps a
//! loopback naming the original, and a table copied, dropped and renamed (as online schema
//! change tools do) loses its trigger. Neither may go unnoticed: the copy never writes into the
//! original, `status` exits 1 naming what is wrong, and `install` or `protect` puts it right.

use crate::helpers::{
    audit_of_scope, fencewatch, peer, with_user, Backend, Guard, UserConn, UserDb,
};
use sqlx::Connection;

/// A program of PostgreSQL's: from the PATH or its installed binaries.
fn postgres_program(name: &str) -> std::path::PathBuf {
    let installed = std::fs::read_dir("/usr/lib/postgresql")
        .into_iter()
        .flatten()
        .flatten()
        .map(|entry| entry.path().join("bin").join(name))
        .filter(|path| path.is_file())
        .max();
    peer(name)
        .map(std::path::PathBuf::from)
        .or(installed)
        .unwrap_or_else(|| panic!("{name} on the PATH or under /usr/lib/postgresql/*/bin"))
}

/// `url` with its database replaced by `name`.
fn on_database(url: &str, name: &str) -> String {
    let (base, _) = url.rsplit_once('/').unwrap();
    format!("{base}/{name}")
}

#[cfg_attr(
    not(fencewatch_pg),
    ignore = "needs PostgreSQL: set FENCEWATCH_TEST_PG"
)]
#[tokio::test]
async fn a_restored_copy_never_writes_into_the_original() {
    let (db, fence) = UserDb::with_protected_orders(Backend::Postgres).await;
    let mut conn = db.connect().await;
    assert_eq!(
        conn.guard("g", Some(8), None, None, None).await,
        Guard::Accepted
    );
    conn.close().await;

    let dir = tempfile::tempdir().unwrap();
    let dump = dir.path().join("shop.dump");
    let out = tokio::process::Command::new(postgres_program("pg_dump"))
        .args(["-Fc", "--dbname", &db.url, "--file"])
        .arg(&dump)
        .output()
        .await
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let original = db.url.rsplit('/').next().unwrap().to_owned();
    let copy = format!("{original}_copy");
    let role = db.app_role.clone().unwrap();
    db.run_admin(&format!("DROP DATABASE IF EXISTS {copy}"))
        .await;
    db.run_admin(&format!("CREATE DATABASE {copy} OWNER {role}"))
        .await;
    let copy_url = on_database(&db.url, &copy);
    // pg_restore warns about what the new database has already (its public schema).
    tokio::process::Command::new(postgres_program("pg_restore"))
        .args(["--dbname", &copy_url])
        .arg(&dump)
        .output()
        .await
        .unwrap();

    let refuse_on_copy = || async {
        let mut copy_conn = UserConn::Pg(
            sqlx::PgConnection::connect(&with_user(&copy_url, &role))
                .await
                .unwrap(),
        );
        copy_conn.run("BEGIN").await.unwrap();
        let refused = copy_conn
            .guard("g", Some(1), None, Some("stale"), None)
            .await;
        assert!(
            matches!(&refused, Guard::Refused { code, .. } if code == "FW409"),
            "{refused:?}"
        );
        copy_conn.run("ROLLBACK").await.unwrap();
        copy_conn.close().await;
    };
    let copy_fence = fencewatch::owndb::OwnDb::open(&copy_url, &Default::default())
        .await
        .unwrap();
    refuse_on_copy().await;
    assert_eq!(
        audit_of_scope(&fence, "g").await.len(),
        1,
        "nothing of the copy's refusal reached the original's audit"
    );
    assert_eq!(
        audit_of_scope(&copy_fence, "g").await.len(),
        1,
        "the copy's refusal, not recorded through a loopback that is not its own, went with \
         its rollback"
    );
    let (code, stdout, _) = fencewatch(&["fence", "status", "--database", &copy_url]).await;
    assert_eq!(code, 1, "{stdout}");
    assert!(stdout.contains("the loopback reaches database"), "{stdout}");

    let (code, stdout, stderr) = fencewatch(&["fence", "install", "--database", &copy_url]).await;
    assert_eq!(code, 0, "{stdout}{stderr}");
    let (code, stdout, _) = fencewatch(&["fence", "status", "--database", &copy_url]).await;
    assert_eq!(code, 0, "{stdout}");
    refuse_on_copy().await;
    let copied = audit_of_scope(&copy_fence, "g").await;
    assert_eq!(
        copied
            .iter()
            .map(|row| row.outcome.as_str())
            .collect::<Vec<_>>(),
        ["accepted", "stale"],
        "repaired: the copy's refusal survives its rollback, in the copy"
    );
    assert_eq!(audit_of_scope(&fence, "g").await.len(), 1);
    assert!(fence.verify().await.unwrap().intact());
    assert!(copy_fence.verify().await.unwrap().intact());
    copy_fence.close().await;
    db.run_admin(&format!("DROP DATABASE {copy} WITH (FORCE)"))
        .await;
}

/// A protected table copied, dropped and renamed into its place (what pg-osc and the like do):
/// `status` exits 1 naming it until `protect` fences the new table; `unprotect` forgets a
/// protected table that was dropped.
#[cfg_attr(
    not(fencewatch_pg),
    ignore = "needs PostgreSQL: set FENCEWATCH_TEST_PG"
)]
#[tokio::test]
async fn a_swapped_table_is_named_until_it_is_protected_again() {
    let (db, _fence) = UserDb::with_protected_orders(Backend::Postgres).await;
    db.run("INSERT INTO orders (id, tok, region, val) VALUES (1, 5, 'eu', 'a'), (2, 8, 'eu', 'b')")
        .await;
    db.run(
        "CREATE TABLE orders_new (LIKE orders INCLUDING ALL); \
         INSERT INTO orders_new SELECT * FROM orders; \
         DROP TABLE orders; ALTER TABLE orders_new RENAME TO orders",
    )
    .await;
    let (code, stdout, _) = fencewatch(&["fence", "status", "--database", &db.url]).await;
    assert_eq!(code, 1, "{stdout}");
    assert!(
        stdout.contains("public.orders") && stdout.contains("protect it again"),
        "{stdout}"
    );
    let mut conn = db.connect().await;
    assert_eq!(
        conn.run("UPDATE orders SET tok = 5 WHERE id = 2")
            .await
            .unwrap(),
        1,
        "the copy has no trigger: what status is for"
    );
    let (code, stdout, stderr) = fencewatch(&[
        "fence",
        "protect",
        "--database",
        &db.url,
        "orders",
        "--token-column",
        "tok",
        "--scope-column",
        "region",
    ])
    .await;
    assert_eq!(code, 0, "{stderr}");
    assert!(stdout.starts_with("protected orders"), "{stdout}");
    let (code, stdout, _) = fencewatch(&["fence", "status", "--database", &db.url]).await;
    assert_eq!(code, 0, "{stdout}");
    assert_eq!(
        stdout.matches("protected orders").count(),
        1,
        "the dropped table's record went: {stdout}"
    );
    assert_eq!(
        conn.run("UPDATE orders SET tok = 4 WHERE id = 2")
            .await
            .unwrap(),
        0,
        "fenced again: eu's highest is still 8"
    );
    conn.run("DROP TABLE orders").await.unwrap();
    conn.close().await;
    let (code, stdout, stderr) =
        fencewatch(&["fence", "unprotect", "--database", &db.url, "orders"]).await;
    assert_eq!(code, 0, "{stdout}{stderr}");
    assert_eq!(stdout.trim(), "unprotected orders");
    let (code, stdout, _) = fencewatch(&["fence", "status", "--database", &db.url]).await;
    assert_eq!(code, 0, "{stdout}");
    assert!(stdout.contains("no protected tables"), "{stdout}");
}
