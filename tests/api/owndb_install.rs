//! `fencewatch fence install | protect | unprotect | status | uninstall` as users run them:
//! install and uninstall are idempotent, an older fence is upgraded, and after uninstall the
//! user's schema and rows are as they were before install (pg_dump, sqlite_master). Uninstall
//! removes only what install created; least privilege holds; a missing SQLite file is never
//! created; no password is shown.

use crate::both_backends;
use crate::helpers::{with_user, Backend, Guard, UserConn, UserDb, ORDERS};
use fencewatch::owndb::{AutonomousAudit, InstallOptions, InstallOutcome, OwnDb};
use rstest_reuse::apply;
use std::process::Output;

/// Runs `fencewatch fence ARGS`.
async fn fence_cli(args: &[&str]) -> Output {
    tokio::process::Command::new(env!("CARGO_BIN_EXE_fencewatch"))
        .arg("fence")
        .args(args)
        .env("NO_COLOR", "1")
        .output()
        .await
        .unwrap()
}

/// Runs `fencewatch fence ARGS`, expecting success and one line on stdout.
async fn fence_ok(args: &[&str]) -> String {
    let out = fence_cli(args).await;
    let stdout = String::from_utf8(out.stdout).unwrap();
    assert!(
        out.status.success(),
        "fence {args:?}: {stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    stdout.trim_end().to_owned()
}

/// The user's objects, schema and rows, besides `orders`: an index, a view, a trigger of the
/// user's own, a sequence.
const USERS_SCHEMA: &str = "CREATE TABLE notes (id integer PRIMARY KEY, body text); \
     CREATE INDEX orders_by_region ON orders (region); \
     CREATE VIEW eu_orders AS SELECT id, val FROM orders WHERE region = 'eu'; \
     CREATE TRIGGER notes_touch AFTER INSERT ON notes BEGIN SELECT 1; END; \
     INSERT INTO orders (id, tok, region, val) VALUES (1, 3, 'eu', 'a'), (2, 4, 'us', 'b'); \
     INSERT INTO notes VALUES (1, 'it''s \"quoted\"');";

const USERS_SCHEMA_PG: &str = "CREATE TABLE notes (id integer PRIMARY KEY, body text); \
     CREATE INDEX orders_by_region ON orders (region); \
     CREATE VIEW eu_orders AS SELECT id, val FROM orders WHERE region = 'eu'; \
     CREATE SEQUENCE invoice_numbers; \
     CREATE FUNCTION touch() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN RETURN NEW; END $$; \
     CREATE TRIGGER notes_touch BEFORE INSERT ON notes FOR EACH ROW EXECUTE FUNCTION touch(); \
     INSERT INTO orders (id, tok, region, val) VALUES (1, 3, 'eu', 'a'), (2, 4, 'us', 'b'); \
     INSERT INTO notes VALUES (1, 'it''s \"quoted\"');";

/// What a user could notice of the database: `users` is their own objects and rows (the schema
/// as pg_dump prints it on PostgreSQL; sqlite_master without the fence's objects and the journal
/// mode on SQLite), `all` adds everything else (every row of sqlite_master; PostgreSQL's schemas,
/// extensions and foreign servers).
#[derive(Debug, PartialEq, Eq)]
struct View {
    users: String,
    all: String,
}

async fn users_view(db: &UserDb) -> View {
    let mut conn = db.connect().await;
    let view = match &mut conn {
        UserConn::Sqlite(_) => {
            let rows = conn
                .text(
                    "SELECT (SELECT group_concat(id || ':' || tok || ':' || region || ':' || val, ';') \
                               FROM (SELECT * FROM orders ORDER BY id)) \
                         || '|' || (SELECT group_concat(id || ':' || body, ';') FROM notes)",
                )
                .await
                .unwrap_or_default();
            let master = |filter: &str| {
                format!(
                    "SELECT group_concat(type || ' ' || name || ' ' || tbl_name || ' ' || \
                            coalesce(sql, ''), char(10)) \
                       FROM (SELECT * FROM sqlite_master {filter} ORDER BY type, name)"
                )
            };
            let users = conn
                .text(&master(
                    "WHERE name NOT LIKE 'fencewatch\\_%' ESCAPE '\\' \
                       AND tbl_name NOT LIKE 'fencewatch\\_%' ESCAPE '\\'",
                ))
                .await
                .unwrap_or_default();
            let all = conn.text(&master("")).await.unwrap_or_default();
            let journal = conn.text("PRAGMA journal_mode").await.unwrap_or_default();
            View {
                users: format!("{users}\njournal {journal}\nrows {rows}"),
                all: format!("{all}\njournal {journal}\nrows {rows}"),
            }
        }
        UserConn::Pg(_) => {
            let rows = conn
                .text(
                    "SELECT (SELECT string_agg(id || ':' || tok || ':' || region || ':' || val, \
                                               ';' ORDER BY id) FROM orders) \
                         || '|' || (SELECT string_agg(id || ':' || body, ';') FROM notes)",
                )
                .await
                .unwrap_or_default();
            let catalog = conn
                .text(
                    "SELECT (SELECT string_agg(nspname, ',' ORDER BY nspname) FROM pg_namespace) \
                         || '|' || (SELECT string_agg(extname, ',' ORDER BY extname) \
                                      FROM pg_extension) \
                         || '|' || coalesce((SELECT string_agg(srvname, ',') \
                                               FROM pg_foreign_server), '')",
                )
                .await
                .unwrap_or_default();
            let users = format!("{}\nrows {rows}", pg_dump_public(&db.url).await);
            View {
                all: format!("{users}\n{catalog}"),
                users,
            }
        }
    };
    conn.close().await;
    view
}

/// `pg_dump --schema-only --schema=public`, from the PATH or PostgreSQL's installed binaries.
async fn pg_dump_public(url: &str) -> String {
    let installed = std::fs::read_dir("/usr/lib/postgresql")
        .into_iter()
        .flatten()
        .flatten()
        .map(|entry| entry.path().join("bin/pg_dump"))
        .filter(|path| path.is_file())
        .max();
    let program = crate::helpers::peer("pg_dump")
        .map(std::path::PathBuf::from)
        .or(installed)
        .expect("pg_dump on the PATH or under /usr/lib/postgresql/*/bin");
    let out = tokio::process::Command::new(program)
        .args(["--schema-only", "--schema=public", "--dbname", url])
        .output()
        .await
        .unwrap();
    assert!(
        out.status.success(),
        "pg_dump: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    // pg_dump guards its output with a random key each run (`\restrict KEY`): not the schema.
    String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .filter(|line| !line.starts_with("\\restrict") && !line.starts_with("\\unrestrict"))
        .collect::<Vec<_>>()
        .join("\n")
}

#[apply(both_backends)]
#[tokio::test]
async fn install_upgrade_and_uninstall_are_idempotent_and_leave_the_users_tables_as_they_were(
    #[case] backend: Backend,
) {
    let db = UserDb::new(backend).await;
    db.run(ORDERS).await;
    db.run(match backend {
        Backend::Sqlite => USERS_SCHEMA,
        Backend::Postgres => USERS_SCHEMA_PG,
    })
    .await;
    let before = users_view(&db).await;
    assert!(
        before.users.contains("orders_by_region") && before.users.contains("1:3:eu:a"),
        "{before:?}"
    );
    let url = db.url.as_str();
    let place = match backend {
        Backend::Postgres => "schema fencewatch".to_owned(),
        Backend::Sqlite => url.to_owned(),
    };

    // An older fencewatch installed v1; this one upgrades it, once.
    let fence = db.fence().await;
    let source = match backend {
        Backend::Postgres => url.rsplit('/').next().unwrap(),
        Backend::Sqlite => "users-own",
    };
    assert_eq!(fence.source_name(), source);
    assert_eq!(
        fence
            .install_version(&InstallOptions::default(), 1)
            .await
            .unwrap(),
        InstallOutcome::Installed { version: 1 }
    );
    let latest = fence.latest_version();
    assert_eq!(
        fence_ok(&["install", "--database", url]).await,
        format!("upgraded v1 → v{latest}")
    );
    assert_eq!(
        fence_ok(&["install", "--database", url]).await,
        format!("already installed (v{latest})")
    );
    assert_eq!(
        fence_ok(&[
            "protect",
            "--database",
            url,
            "orders",
            "--token-column",
            "tok",
            "--scope-column",
            "region",
            "--owner-column",
            "who"
        ])
        .await,
        "protected orders (token column tok, scope column region, owner column who)"
    );
    // Protecting again replaces the trigger rather than adding a second one.
    fence_ok(&[
        "protect",
        "--database",
        url,
        "orders",
        "--token-column",
        "tok",
        "--scope",
        "all",
    ])
    .await;
    let status: serde_json::Value =
        serde_json::from_str(&fence_ok(&["status", "--database", url, "--json"]).await).unwrap();
    assert_eq!(status["installed_version"], latest);
    assert_eq!(status["protected"][0]["table"], "orders");
    assert_eq!(status["protected"][0]["scope"], "all");
    assert_eq!(status["protected"].as_array().unwrap().len(), 1);
    let expected_autonomy = match backend {
        Backend::Postgres => "works",
        Backend::Sqlite => "not_applicable",
    };
    assert_eq!(status["autonomous_audit"]["state"], expected_autonomy);

    // Protected and unprotected, the table's rows are as they were; only the trigger came
    // and went.
    let protected = users_view(&db).await;
    assert!(
        protected.all.contains("fencewatch_fence"),
        "the trigger shows in the schema"
    );
    fence_ok(&["unprotect", "--database", url, "orders"]).await;
    let unprotected = users_view(&db).await;
    assert_eq!(unprotected.users, before.users);
    assert_ne!(unprotected.all, before.all, "the fence is still installed");
    fence_ok(&[
        "protect",
        "--database",
        url,
        "orders",
        "--token-column",
        "tok",
        "--scope",
        "all",
    ])
    .await;

    // Uninstall removes the protected table's trigger too, and is idempotent.
    assert_eq!(
        fence_ok(&["uninstall", "--database", url]).await,
        format!("uninstalled fencewatch fence v{latest} from {place}")
    );
    assert_eq!(
        fence_ok(&["uninstall", "--database", url]).await,
        "not installed; nothing to remove"
    );
    assert_eq!(users_view(&db).await, before);
    fence.close().await;
}

/// A schema the installer made beforehand, holding a table of its own, and a dblink the database
/// already had: a dblink whose functions everyone may execute is not used for the loopback
/// (status says why and how to fix it); once only its owner may, install uses it. Uninstall
/// leaves both behind, with the table in the schema.
#[cfg_attr(
    not(fencewatch_pg),
    ignore = "needs PostgreSQL: set FENCEWATCH_TEST_PG"
)]
#[tokio::test]
async fn uninstall_leaves_what_install_did_not_create() {
    let db = UserDb::new(Backend::Postgres).await;
    db.run_admin(
        "CREATE SCHEMA fencewatch; CREATE TABLE fencewatch.notes (body text); \
         INSERT INTO fencewatch.notes VALUES ('mine'); CREATE EXTENSION dblink SCHEMA public",
    )
    .await;
    let fence = db.fence().await;
    fence.install(&InstallOptions::default()).await.unwrap();
    let AutonomousAudit::Unavailable { reason } = fence.status().await.unwrap().autonomous_audit
    else {
        panic!("the fence uses a dblink that everyone may execute");
    };
    assert!(
        reason.contains("public") && reason.contains("PUBLIC") && reason.contains("REVOKE"),
        "the reason names the schema, who may execute it and the fix: {reason}"
    );
    // What the reason says to do, then install again.
    db.run_admin(
        "DO $$ DECLARE f regprocedure; BEGIN \
           FOR f IN SELECT p.oid::regprocedure FROM pg_proc p JOIN pg_depend d \
                      ON d.classid = 'pg_proc'::regclass AND d.objid = p.oid AND d.deptype = 'e' \
                    JOIN pg_extension e ON e.oid = d.refobjid AND e.extname = 'dblink' LOOP \
             EXECUTE format('REVOKE EXECUTE ON FUNCTION %s FROM PUBLIC', f); \
           END LOOP; END $$",
    )
    .await;
    fence.install(&InstallOptions::default()).await.unwrap();
    assert_eq!(
        fence.status().await.unwrap().autonomous_audit,
        AutonomousAudit::Works,
        "only its owner may execute dblink now: the fence uses it"
    );
    db.grant_guard().await;
    let mut conn = db.connect().await;
    assert_eq!(
        conn.guard("s", Some(2), None, None, None).await,
        Guard::Accepted
    );
    conn.run("BEGIN").await.unwrap();
    assert!(matches!(
        conn.guard("s", Some(1), None, None, None).await,
        Guard::Refused { .. }
    ));
    conn.run("ROLLBACK").await.unwrap();
    assert_eq!(
        fence.audit_rows().await.unwrap().len(),
        2,
        "audited through public.dblink"
    );
    conn.close().await;
    fence.uninstall().await.unwrap();
    let mut conn = db.connect_admin().await;
    assert_eq!(
        conn.text("SELECT body FROM fencewatch.notes")
            .await
            .as_deref(),
        Some("mine")
    );
    assert_eq!(
        conn.text(
            "SELECT n.nspname::text FROM pg_extension e JOIN pg_namespace n \
               ON n.oid = e.extnamespace WHERE e.extname = 'dblink'"
        )
        .await
        .as_deref(),
        Some("public")
    );
    assert_eq!(
        conn.int("SELECT count(*) FROM pg_class WHERE relnamespace = 'fencewatch'::regnamespace")
            .await,
        Some(1),
        "only the user's table is left in the schema"
    );
    assert_eq!(
        conn.int("SELECT count(*) FROM pg_foreign_server").await,
        Some(0)
    );
    conn.close().await;
    fence.close().await;
}

/// A role of the test's own, dropped at the end with what it was granted.
struct Role {
    name: String,
    base: String,
}

impl Role {
    async fn create(db: &UserDb, what: &str, attributes: &str) -> Role {
        let name = format!("fwown_{what}_{}", std::process::id());
        db.run_admin(&format!(
            "DROP ROLE IF EXISTS {name}; CREATE ROLE {name} {attributes}"
        ))
        .await;
        Role {
            name,
            base: db.url.clone(),
        }
    }

    async fn drop_in(self, db: &UserDb) {
        db.run_admin(&format!("DROP OWNED BY {} CASCADE", self.name))
            .await;
        db.run_admin(&format!("DROP ROLE {}", self.name)).await;
        let _ = self.base;
    }
}

/// Least privilege: a caller needs USAGE on the schema and EXECUTE on fence(), nothing more, and
/// cannot touch the fence's state with them; writes to a protected table need nothing extra.
#[cfg_attr(
    not(fencewatch_pg),
    ignore = "needs PostgreSQL: set FENCEWATCH_TEST_PG"
)]
#[tokio::test]
async fn callers_get_the_guard_and_nothing_else() {
    let (db, fence) = UserDb::with_protected_orders(Backend::Postgres).await;
    let app = Role::create(&db, "app", "LOGIN").await;
    db.run_admin(&format!(
        "GRANT SELECT, INSERT, UPDATE ON orders TO {}",
        app.name
    ))
    .await;
    let mut conn = UserConn::Pg(
        <sqlx::PgConnection as sqlx::Connection>::connect(&with_user(&db.url, &app.name))
            .await
            .unwrap(),
    );
    let denied = |result: Result<u64, sqlx::Error>| match result {
        Err(sqlx::Error::Database(db)) => db.code().as_deref() == Some("42501"),
        _ => false,
    };
    assert!(
        denied(conn.run("SELECT fencewatch.fence('s', 1)").await),
        "no grant yet"
    );
    // A protected table needs nothing of the fence: its trigger runs as the fence's owner.
    assert_eq!(
        conn.run("INSERT INTO orders (id, tok, region) VALUES (1, 5, 'eu')")
            .await
            .unwrap(),
        1
    );
    assert_eq!(
        conn.run("UPDATE orders SET tok = 4 WHERE id = 1")
            .await
            .unwrap(),
        0
    );

    db.run_admin(&format!(
        "GRANT USAGE ON SCHEMA fencewatch TO {0}; \
         GRANT EXECUTE ON FUNCTION fencewatch.fence(text, bigint, text, text, text) TO {0}",
        app.name
    ))
    .await;
    assert_eq!(
        conn.guard("s", Some(3), None, None, None).await,
        Guard::Accepted
    );
    assert!(matches!(
        conn.guard("s", Some(2), None, None, None).await,
        Guard::Refused { .. }
    ));
    for attempt in [
        "UPDATE fencewatch.scopes SET highest_token = 0",
        "DELETE FROM fencewatch.audit",
        "INSERT INTO fencewatch.operations VALUES ('s', 'x', 1, now())",
        "SELECT fencewatch.settle('s', 99, NULL, NULL, NULL, NULL, true, true)",
        "SELECT fencewatch.guard('s', 99, NULL, NULL, NULL, NULL)",
        "SELECT fencewatch.decide(0, 's', 99, NULL, NULL)",
        "SELECT fencewatch.refuse(0, 's', 1, NULL, NULL, NULL, NULL, 'stale', 9, NULL)",
        "SELECT * FROM fencewatch.pending",
        "SELECT fencewatch.protect('orders', 'tok', scope => 'x')",
        "SELECT * FROM fencewatch.audit",
        "SELECT fencewatch.dblink_get_connections()",
        "SELECT fencewatch.autonomous_audit_problem()",
    ] {
        assert!(denied(conn.run(attempt).await), "{attempt} was allowed");
    }
    conn.close().await;
    let outcomes: Vec<String> = fence
        .audit_rows()
        .await
        .unwrap()
        .into_iter()
        .map(|row| row.outcome)
        .collect();
    assert_eq!(outcomes, ["accepted", "stale", "accepted", "stale"]);
    fence.close().await;
    app.drop_in(&db).await;
}

/// Installed by a role that may not create dblink: the install succeeds, the guard still
/// refuses, and status says the refusal is audited only if the caller commits.
#[cfg_attr(
    not(fencewatch_pg),
    ignore = "needs PostgreSQL: set FENCEWATCH_TEST_PG"
)]
#[tokio::test]
async fn without_dblink_the_fence_still_refuses_and_status_says_what_is_missing() {
    let db = UserDb::new(Backend::Postgres).await;
    let owner = Role::create(&db, "owner", "LOGIN").await;
    let database = db.url.rsplit('/').next().unwrap().to_owned();
    db.run_admin(&format!(
        "GRANT CREATE ON DATABASE {database} TO {}",
        owner.name
    ))
    .await;
    let url = with_user(&db.url, &owner.name);
    let fence = OwnDb::open(&url, &Default::default()).await.unwrap();
    fence.install(&InstallOptions::default()).await.unwrap();
    let AutonomousAudit::Unavailable { reason } = fence.status().await.unwrap().autonomous_audit
    else {
        panic!("a role that may not create dblink has it working");
    };
    assert!(reason.contains("dblink"), "{reason}");
    let status = fence_ok(&["status", "--database", &url]).await;
    assert!(
        status.contains("audited only if the caller commits"),
        "{status}"
    );

    let mut conn = UserConn::Pg(
        <sqlx::PgConnection as sqlx::Connection>::connect(&url)
            .await
            .unwrap(),
    );
    assert_eq!(
        conn.guard("s", Some(2), None, None, None).await,
        Guard::Accepted
    );
    assert!(matches!(
        conn.guard("s", Some(1), None, None, None).await,
        Guard::Refused { code, .. } if code == "FW409"
    ));
    conn.close().await;
    assert_eq!(
        fence.audit_rows().await.unwrap().len(),
        1,
        "the refusal went with its statement"
    );
    fence.uninstall().await.unwrap();
    fence.close().await;
    owner.drop_in(&db).await;
}

#[tokio::test]
async fn a_missing_sqlite_file_is_named_and_never_created() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("typo.db");
    let url = format!("sqlite://{}", path.display());
    for command in ["install", "status", "uninstall"] {
        let out = fence_cli(&[command, "--database", &url]).await;
        assert_eq!(out.status.code(), Some(2), "{command}");
        let stderr = String::from_utf8(out.stderr).unwrap();
        assert!(stderr.contains(&path.display().to_string()), "{stderr}");
        assert!(!path.exists(), "{command} created the file");
    }
}

#[tokio::test]
async fn a_database_password_is_never_shown() {
    let out = fence_cli(&[
        "status",
        "--database",
        "postgres://app:s3cret-pw@127.0.0.1:1/db?sslpassword=other-s3cret",
    ])
    .await;
    assert_eq!(out.status.code(), Some(1));
    let all = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(all.contains("postgres://app:***@127.0.0.1:1/db"), "{all}");
    assert!(!all.contains("s3cret"), "{all}");
}

#[tokio::test]
async fn schema_is_refused_for_sqlite_and_bad_names_are_explained() {
    let db = UserDb::new(Backend::Sqlite).await;
    db.run(ORDERS).await;
    let out = fence_cli(&["install", "--database", &db.url, "--schema", "other"]).await;
    assert_eq!(out.status.code(), Some(2));
    fence_ok(&["install", "--database", &db.url]).await;
    for (args, says) in [
        (
            vec!["nosuch", "--token-column", "tok", "--scope", "s"],
            "no table nosuch",
        ),
        (
            vec!["orders", "--token-column", "nope", "--scope", "s"],
            "has no column nope",
        ),
        (
            vec![
                "fencewatch_audit",
                "--token-column",
                "token",
                "--scope",
                "s",
            ],
            "fence's own",
        ),
    ] {
        let out = fence_cli(&[&["protect", "--database", &db.url][..], &args[..]].concat()).await;
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        let stderr = String::from_utf8(out.stderr).unwrap();
        assert!(stderr.contains(says), "{stderr}");
    }
    let out = fence_cli(&[
        "protect",
        "--database",
        &db.url,
        "orders",
        "--token-column",
        "tok",
    ])
    .await;
    assert_eq!(out.status.code(), Some(2), "a scope is required");
    assert_eq!(
        fence_ok(&["unprotect", "--database", &db.url, "orders"]).await,
        "orders was not protected"
    );
}

/// Two installs at once (two operators, two deploys): one installs, the other finds it done.
#[apply(both_backends)]
#[tokio::test]
async fn installs_at_once_install_once(#[case] backend: Backend) {
    let db = UserDb::new(backend).await;
    let args = ["install", "--database", &db.url];
    let (first, second) = tokio::join!(fence_cli(&args), fence_cli(&args));
    let mut lines: Vec<String> = [first, second]
        .into_iter()
        .map(|out| {
            assert!(
                out.status.success(),
                "{}",
                String::from_utf8_lossy(&out.stderr)
            );
            String::from_utf8(out.stdout).unwrap().trim_end().to_owned()
        })
        .collect();
    lines.sort();
    assert!(lines[0].starts_with("already installed"), "{lines:?}");
    assert!(
        lines[1].starts_with("installed fencewatch fence"),
        "{lines:?}"
    );
}

/// Two fences in one database, in schemas of their own: each guards its scopes, and removing
/// the one whose install created dblink leaves what the other still uses, saying so.
#[cfg_attr(
    not(fencewatch_pg),
    ignore = "needs PostgreSQL: set FENCEWATCH_TEST_PG"
)]
#[tokio::test]
async fn two_fences_in_one_database_keep_apart() {
    let db = UserDb::new(Backend::Postgres).await;
    let latest = db.fence().await.latest_version();
    assert_eq!(
        fence_ok(&["install", "--database", &db.url]).await,
        format!("installed fencewatch fence v{latest} in schema fencewatch")
    );
    assert_eq!(
        fence_ok(&["install", "--database", &db.url, "--schema", "billing"]).await,
        format!("installed fencewatch fence v{latest} in schema billing")
    );
    // The installer's own connection: this test is about two fences, not who may call them.
    let mut conn = db.connect_admin().await;
    conn.run("SELECT fencewatch.fence('s', 5)").await.unwrap();
    conn.run("SELECT billing.fence('s', 2)").await.unwrap();
    let out = fence_cli(&["uninstall", "--database", &db.url]).await;
    assert!(out.status.success());
    let warnings = String::from_utf8(out.stderr).unwrap();
    assert!(warnings.contains("left extension dblink"), "{warnings}");
    assert!(warnings.contains("left schema fencewatch"), "{warnings}");
    let status = fence_ok(&["status", "--database", &db.url, "--schema", "billing"]).await;
    assert!(
        status.contains("audited even when the caller rolls back"),
        "{status}"
    );
    conn.run("BEGIN").await.unwrap();
    assert!(conn.run("SELECT billing.fence('s', 1)").await.is_err());
    conn.run("ROLLBACK").await.unwrap();
    assert_eq!(
        conn.int("SELECT count(*) FROM billing.audit").await,
        Some(2),
        "billing's refusal audited through the dblink left behind"
    );
    conn.close().await;
    fence_ok(&["uninstall", "--database", &db.url, "--schema", "billing"]).await;
}

/// `fencewatch fence seal` hash-chains SQLite's new rows, once; PostgreSQL has nothing to seal.
#[apply(both_backends)]
#[tokio::test]
async fn seal_chains_sqlites_new_rows_once(#[case] backend: Backend) {
    let db = UserDb::new(backend).await;
    fence_ok(&["install", "--database", &db.url]).await;
    db.grant_guard().await;
    let mut conn = db.connect().await;
    for (scope, token) in [("a", 1), ("a", 2), ("b", 5), ("a", 1)] {
        conn.guard(scope, Some(token), None, None, None).await;
    }
    conn.close().await;
    let status = |json: String| -> serde_json::Value { serde_json::from_str(&json).unwrap() };
    let before = status(fence_ok(&["status", "--database", &db.url, "--json"]).await);
    assert_eq!(before["audit_rows"], 4);
    match backend {
        Backend::Sqlite => {
            assert_eq!(before["unsealed_rows"], 4);
            assert_eq!(
                fence_ok(&["seal", "--database", &db.url]).await,
                "sealed 4 rows on 2 scopes"
            );
            assert_eq!(
                fence_ok(&["seal", "--database", &db.url]).await,
                "sealed 0 rows on 0 scopes"
            );
        }
        Backend::Postgres => {
            assert_eq!(before["unsealed_rows"], 0);
            assert!(fence_ok(&["seal", "--database", &db.url])
                .await
                .starts_with("nothing to seal"));
        }
    }
    let after = status(fence_ok(&["status", "--database", &db.url, "--json"]).await);
    assert_eq!(after["unsealed_rows"], 0);
    assert!(db.fence().await.verify().await.unwrap().intact());
}
