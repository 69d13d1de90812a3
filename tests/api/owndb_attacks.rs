//! The fence attacked from inside the database it protects, as docs/own-database.md's threat
//! model has it: an application role that owns its database and its tables (no superuser), the
//! fence installed by a superuser. Each test performs one attack with that role's rights and
//! checks that nothing of the application's ran as the installer, that the role is still no
//! superuser, and that the stale write did not land.

use crate::both_backends;
use crate::helpers::{audit_of_scope, fencewatch, Backend, Guard, UserConn, UserDb};
use fencewatch::owndb::{Generation, InstallOptions, ProtectSpec, ScopeSource};
use fencewatch::store::{AcquireResult, Store, StoreOptions};
use rstest_reuse::apply;

/// A function of the application's that records who ran it and, run by a role that may, makes
/// the session's login role (the application's) a superuser.
const SPY: &str = r#"
CREATE TABLE calls (who text NOT NULL);
GRANT INSERT ON calls TO PUBLIC;
CREATE FUNCTION spy() RETURNS boolean LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO public.calls (who) VALUES (current_user);
    IF (SELECT r.rolsuper FROM pg_catalog.pg_roles r WHERE r.rolname = current_user) THEN
        EXECUTE pg_catalog.format('ALTER ROLE %I SUPERUSER', session_user);
    END IF;
    RETURN true;
END $$;
"#;

/// The application role is still no superuser, and no function of its ran as another role.
async fn assert_nothing_ran_as_the_installer(db: &UserDb) {
    let role = db.app_role.clone().expect("PostgreSQL");
    let mut admin = db.connect_admin().await;
    assert_eq!(
        admin
            .int(&format!(
                "SELECT count(*) FROM pg_roles WHERE rolname = '{role}' AND rolsuper"
            ))
            .await,
        Some(0),
        "the application role became a superuser"
    );
    assert_eq!(
        admin
            .text(&format!(
                "SELECT string_agg(DISTINCT who, ',') FROM public.calls WHERE who <> '{role}'"
            ))
            .await,
        None,
        "a function of the application's ran as another role"
    );
    admin.close().await;
}

/// Orders 1 (token 5) and 2 (token 8) in scope `eu`: the scope's highest is 8.
async fn eu_at_8(db: &UserDb) {
    let mut conn = db.connect().await;
    for (id, token) in [(1, 5), (2, 8)] {
        assert_eq!(
            conn.run(&format!(
                "INSERT INTO orders (id, tok, region, val) VALUES ({id}, {token}, 'eu', 'v{token}')"
            ))
            .await
            .unwrap(),
            1
        );
    }
    conn.close().await;
}

fn outcomes(rows: &[fencewatch::domain::fence_audit::FenceAuditRow]) -> Vec<(String, Option<i64>)> {
    rows.iter()
        .map(|row| (row.outcome.clone(), row.token))
        .collect()
}

fn database_error(error: &sqlx::Error) -> (String, String) {
    match error {
        sqlx::Error::Database(db) => (
            db.code().map(|c| c.into_owned()).unwrap_or_default(),
            db.message().to_owned(),
        ),
        other => panic!("not a database error: {other}"),
    }
}

/// The table's owner gives the scope, op and owner columns types of its own whose casts to
/// text call its code: a protected write reads them without running that code, as the
/// installer or at all, and the fence still decides on the same scope.
#[cfg_attr(
    not(fencewatch_pg),
    ignore = "needs PostgreSQL: set FENCEWATCH_TEST_PG"
)]
#[tokio::test]
async fn casts_of_the_applications_types_never_run_as_the_installer() {
    let (db, fence) = UserDb::with_protected_orders(Backend::Postgres).await;
    eu_at_8(&db).await;
    db.run(SPY).await;
    db.run(
        r#"
        CREATE TYPE region_t AS ENUM ('eu', 'us');
        CREATE FUNCTION region_text(region_t) RETURNS text LANGUAGE plpgsql
            AS $$ BEGIN PERFORM public.spy(); RETURN pg_catalog.format('%s', $1); END $$;
        CREATE CAST (region_t AS text) WITH FUNCTION region_text(region_t);
        ALTER TABLE orders ALTER COLUMN region TYPE region_t USING region::region_t;
        CREATE TYPE label_t AS (v text);
        CREATE FUNCTION label_text(label_t) RETURNS text LANGUAGE plpgsql
            AS $$ BEGIN PERFORM public.spy(); RETURN ($1).v; END $$;
        CREATE CAST (label_t AS text) WITH FUNCTION label_text(label_t) AS IMPLICIT;
        ALTER TABLE orders ALTER COLUMN op TYPE label_t USING ROW(op)::label_t,
                           ALTER COLUMN who TYPE label_t USING ROW(who)::label_t;
        "#,
    )
    .await;
    let mut conn = db.connect().await;
    assert_eq!(
        conn.run("UPDATE orders SET tok = 9, op = ROW('op-9'), who = ROW('w2') WHERE id = 1")
            .await
            .unwrap(),
        1
    );
    assert_eq!(
        conn.run("UPDATE orders SET tok = 7, op = ROW('op-7'), who = ROW('w1') WHERE id = 2")
            .await
            .unwrap(),
        0,
        "stale: eu accepted 9"
    );
    assert_eq!(
        conn.run("INSERT INTO orders (id, tok, region) VALUES (3, 2, 'us')")
            .await
            .unwrap(),
        1
    );
    // A row with no token goes to the guard, which records it through the loopback session.
    let (code, _) = database_error(
        &conn
            .run("UPDATE orders SET tok = NULL WHERE id = 1")
            .await
            .unwrap_err(),
    );
    assert_eq!(code, "FW400");
    conn.close().await;
    assert_nothing_ran_as_the_installer(&db).await;
    let eu = audit_of_scope(&fence, "eu").await;
    assert_eq!(
        outcomes(&eu),
        [
            ("accepted".into(), Some(5)),
            ("accepted".into(), Some(8)),
            ("accepted".into(), Some(9)),
            ("stale".into(), Some(7)),
            ("invalid".into(), None),
        ]
    );
    // The values as PostgreSQL prints them: the composite's text form.
    assert_eq!(eu[2].owner.as_deref(), Some("(w2)"));
    assert_eq!(eu[2].idempotency_key.as_deref(), Some("(op-9)"));
    assert_eq!(outcomes(&audit_of_scope(&fence, "us").await).len(), 1);
    assert!(fence.verify().await.unwrap().intact());
}

/// The token column changed to a type of the application's with an assignment cast to bigint:
/// the write is refused (FW400, naming the column and its type) and the cast never runs.
#[cfg_attr(
    not(fencewatch_pg),
    ignore = "needs PostgreSQL: set FENCEWATCH_TEST_PG"
)]
#[tokio::test]
async fn an_assignment_cast_into_the_token_column_never_runs_as_the_installer() {
    let (db, fence) = UserDb::with_protected_orders(Backend::Postgres).await;
    eu_at_8(&db).await;
    db.run(SPY).await;
    // A table whose generation is stated has a trigger on its token column: PostgreSQL itself
    // refuses to change the column's type.
    let mut conn = db.connect().await;
    let (code, _) = database_error(
        &conn
            .run("ALTER TABLE orders ALTER COLUMN tok TYPE numeric")
            .await
            .unwrap_err(),
    );
    assert_eq!(code, "0A000");
    conn.close().await;
    // One whose generation is the row's has not: the fence reads the column only while it is
    // an integer.
    fence
        .protect(&ProtectSpec {
            table: "orders".into(),
            token_column: "tok".into(),
            scope: ScopeSource::Column("region".into()),
            op_column: Some("op".into()),
            owner_column: Some("who".into()),
            lease: None,
            generation: Some(Generation::Row),
        })
        .await
        .unwrap();
    db.run(
        r#"
        CREATE TYPE tok_t AS (v bigint);
        CREATE FUNCTION tok_bigint(tok_t) RETURNS bigint LANGUAGE plpgsql
            AS $$ BEGIN PERFORM public.spy(); RETURN ($1).v; END $$;
        CREATE CAST (tok_t AS bigint) WITH FUNCTION tok_bigint(tok_t) AS ASSIGNMENT;
        ALTER TABLE orders ALTER COLUMN tok TYPE tok_t USING ROW(tok)::tok_t;
        "#,
    )
    .await;
    let mut conn = db.connect().await;
    let (code, message) = database_error(
        &conn
            .run("UPDATE orders SET tok = ROW(9) WHERE id = 1")
            .await
            .unwrap_err(),
    );
    assert_eq!(code, "FW400", "{message}");
    assert!(
        message.contains("tok") && message.contains("tok_t"),
        "{message}"
    );
    assert_eq!(
        conn.text("SELECT (tok).v::text FROM orders WHERE id = 1")
            .await
            .as_deref(),
        Some("5")
    );
    conn.close().await;
    assert_nothing_ran_as_the_installer(&db).await;
    assert!(fence.verify().await.unwrap().intact());
}

/// The daemon's `leases` table belongs to the application role (the daemon's store runs as
/// it): replaced by a view that calls the role's code, or its `name` given a type whose
/// implicit cast does, the `lease =>` check runs none of it and refuses (`invalid`).
#[cfg_attr(
    not(fencewatch_pg),
    ignore = "needs PostgreSQL: set FENCEWATCH_TEST_PG"
)]
#[tokio::test]
async fn a_leases_table_the_application_owns_runs_nothing_of_its_own() {
    let db = UserDb::new(Backend::Postgres).await;
    db.run(crate::helpers::ORDERS).await;
    let store = Store::open(&db.app_url, &StoreOptions::default())
        .await
        .unwrap();
    let name = fencewatch::domain::LeaseName::parse("jobs").unwrap();
    let granted = store
        .acquire_lease(
            &name,
            &fencewatch::domain::Holder::parse("w1").unwrap(),
            fencewatch::domain::Ttl::from_millis(60_000).unwrap(),
        )
        .await
        .unwrap();
    assert!(matches!(granted, AcquireResult::Granted(_)));
    store.close().await;
    let fence = db.fence().await;
    fence.install(&InstallOptions::default()).await.unwrap();
    fence
        .protect(&ProtectSpec {
            table: "orders".into(),
            token_column: "tok".into(),
            scope: ScopeSource::Column("region".into()),
            op_column: None,
            owner_column: Some("who".into()),
            lease: Some("jobs".into()),
            generation: None,
        })
        .await
        .unwrap();
    db.grant_guard().await;
    db.run(SPY).await;
    let mut conn = db.connect().await;
    assert_eq!(
        conn.run("INSERT INTO orders (id, tok, region) VALUES (1, 1, 'eu')")
            .await
            .unwrap(),
        1,
        "generation 1 of jobs, as the lease issued it"
    );

    let attacks = [
        (
            "a view in the table's place",
            "ALTER TABLE leases RENAME TO leases_kept; \
             CREATE VIEW leases AS SELECT * FROM leases_kept WHERE public.spy()",
            "DROP VIEW leases; ALTER TABLE leases_kept RENAME TO leases",
        ),
        (
            "a name type with an implicit cast to text",
            "CREATE TYPE lease_name_t AS (v text); \
             CREATE FUNCTION lease_name_text(lease_name_t) RETURNS text LANGUAGE plpgsql \
                 AS $$ BEGIN PERFORM public.spy(); RETURN ($1).v; END $$; \
             CREATE CAST (lease_name_t AS text) WITH FUNCTION lease_name_text(lease_name_t) \
                 AS IMPLICIT; \
             ALTER TABLE leases ALTER COLUMN name TYPE lease_name_t USING ROW(name)::lease_name_t",
            "ALTER TABLE leases ALTER COLUMN name TYPE text USING (name).v",
        ),
    ];
    for (attack, setup, undo) in attacks {
        db.run(setup).await;
        assert_eq!(
            conn.run("UPDATE orders SET tok = 1 WHERE id = 1")
                .await
                .unwrap(),
            0,
            "{attack}: the protected write is refused"
        );
        let refused = conn.guard("g", Some(1), None, None, Some("jobs")).await;
        assert!(
            matches!(&refused, Guard::Refused { code, message } if code == "FW400" && message.contains("leases")),
            "{attack}: {refused:?}"
        );
        assert_nothing_ran_as_the_installer(&db).await;
        db.run(undo).await;
    }
    assert_eq!(
        conn.run("UPDATE orders SET tok = 1 WHERE id = 1")
            .await
            .unwrap(),
        1,
        "the daemon's own table again: accepted"
    );
    conn.close().await;
    let eu = audit_of_scope(&fence, "eu").await;
    assert_eq!(
        eu.iter()
            .map(|row| row.outcome.as_str())
            .collect::<Vec<_>>(),
        ["accepted", "invalid", "invalid", "accepted"]
    );
    assert!(
        eu[1].detail.as_deref().unwrap_or("").contains("leases"),
        "{:?}",
        eu[1].detail
    );
}

/// A dblink in `public`, executable by everyone (its default), is not used for the loopback: no
/// refusal ever opens a session as the installer that the caller could borrow.
#[cfg_attr(
    not(fencewatch_pg),
    ignore = "needs PostgreSQL: set FENCEWATCH_TEST_PG"
)]
#[tokio::test]
async fn a_dblink_everyone_may_execute_never_carries_the_loopback() {
    let db = UserDb::new(Backend::Postgres).await;
    db.run(crate::helpers::ORDERS).await;
    db.run_admin("CREATE EXTENSION dblink SCHEMA public").await;
    let (code, stdout, stderr) = fencewatch(&["fence", "install", "--database", &db.url]).await;
    assert_eq!(code, 0, "{stdout}{stderr}");
    assert!(
        stderr.contains("public") && stderr.contains("PUBLIC"),
        "install says why the loopback is not set up: {stderr}"
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
    assert_eq!(code, 0, "{stdout}{stderr}");
    db.run(SPY).await;
    let mut conn = db.connect().await;
    conn.run("INSERT INTO orders (id, tok, region) VALUES (1, 5, 'eu')")
        .await
        .unwrap();
    let (code, _) = database_error(
        &conn
            .run("UPDATE orders SET tok = NULL WHERE id = 1")
            .await
            .unwrap_err(),
    );
    assert_eq!(code, "FW400");
    assert_eq!(
        conn.text("SELECT public.dblink_get_connections()::text")
            .await,
        None,
        "no connection of the fence's is open in the caller's session"
    );
    let role = db.app_role.clone().unwrap();
    let borrowed = conn
        .run(&format!(
            "SELECT public.dblink_exec('fencewatch_audit', 'ALTER ROLE {role} SUPERUSER')"
        ))
        .await;
    assert!(borrowed.is_err(), "the caller borrowed a connection");
    conn.close().await;
    assert_nothing_ran_as_the_installer(&db).await;
}

/// With the fence's own dblink, a refusal's loopback session lives only as long as the refusal:
/// nothing of it stays in the caller's session.
#[cfg_attr(
    not(fencewatch_pg),
    ignore = "needs PostgreSQL: set FENCEWATCH_TEST_PG"
)]
#[tokio::test]
async fn the_loopback_is_never_left_open_in_the_callers_session() {
    let (db, fence) = UserDb::with_protected_orders(Backend::Postgres).await;
    let mut conn = db.connect().await;
    assert_eq!(
        conn.guard("s", Some(5), None, None, None).await,
        Guard::Accepted
    );
    let mut admin = db.connect_admin().await;
    let sessions = "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database()";
    let before = admin.int(sessions).await;
    conn.run("BEGIN").await.unwrap();
    assert!(matches!(
        conn.guard("s", Some(4), None, None, None).await,
        Guard::Refused { code, .. } if code == "FW409"
    ));
    // A closed session's backend leaves pg_stat_activity a moment after its client hung up.
    let mut now = admin.int(sessions).await;
    for _ in 0..50 {
        if now == before {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
        now = admin.int(sessions).await;
    }
    assert_eq!(
        now, before,
        "a session opened for the refusal is still connected"
    );
    conn.run("ROLLBACK").await.unwrap();
    conn.close().await;
    admin.close().await;
    assert_eq!(
        outcomes(&audit_of_scope(&fence, "s").await),
        [("accepted".into(), Some(5)), ("stale".into(), Some(4))],
        "the refusal survived the rollback"
    );
}

/// A `fencewatch` schema the application role made beforehand, or one others may create
/// objects in, is refused by install, naming it and its owner; nothing is installed.
#[cfg_attr(
    not(fencewatch_pg),
    ignore = "needs PostgreSQL: set FENCEWATCH_TEST_PG"
)]
#[tokio::test]
async fn install_refuses_a_schema_it_does_not_own() {
    let db = UserDb::new(Backend::Postgres).await;
    let role = db.app_role.clone().unwrap();
    db.run("CREATE SCHEMA fencewatch").await;
    let (code, stdout, stderr) = fencewatch(&["fence", "install", "--database", &db.url]).await;
    assert_eq!(code, 1, "{stdout}{stderr}");
    assert!(
        stderr.contains("schema fencewatch") && stderr.contains(&role),
        "{stderr}"
    );
    let (code, stdout, _) = fencewatch(&["fence", "status", "--database", &db.url]).await;
    assert_eq!(code, 0);
    assert!(stdout.starts_with("not installed"), "{stdout}");

    db.run("DROP SCHEMA fencewatch").await;
    db.run_admin(&format!(
        "CREATE SCHEMA fencewatch; GRANT USAGE, CREATE ON SCHEMA fencewatch TO {role}"
    ))
    .await;
    db.run("CREATE FUNCTION fencewatch.row_hash() RETURNS int LANGUAGE sql AS 'SELECT 1'")
        .await;
    let (code, _, stderr) = fencewatch(&["fence", "install", "--database", &db.url]).await;
    assert_eq!(code, 1, "{stderr}");
    assert!(
        stderr.contains("row_hash") && stderr.contains(&role),
        "names the object and its owner: {stderr}"
    );
    db.run("DROP FUNCTION fencewatch.row_hash()").await;
    let (code, _, stderr) = fencewatch(&["fence", "install", "--database", &db.url]).await;
    assert_eq!(code, 1, "{stderr}");
    assert!(
        stderr.contains("CREATE") && stderr.contains(&role),
        "names who may create objects in it: {stderr}"
    );
    db.run_admin(&format!("REVOKE CREATE ON SCHEMA fencewatch FROM {role}"))
        .await;
    let (code, stdout, stderr) = fencewatch(&["fence", "install", "--database", &db.url]).await;
    assert_eq!(code, 0, "{stdout}{stderr}");
}

/// After install, `status` names every object of the fence whose owner or privileges differ
/// from what install made, and exits 1 until they are put back.
#[cfg_attr(
    not(fencewatch_pg),
    ignore = "needs PostgreSQL: set FENCEWATCH_TEST_PG"
)]
#[tokio::test]
async fn status_names_privileges_and_owners_install_did_not_give() {
    let (db, _fence) = UserDb::with_protected_orders(Backend::Postgres).await;
    let role = db.app_role.clone().unwrap();
    let (code, stdout, stderr) = fencewatch(&["fence", "status", "--database", &db.url]).await;
    assert_eq!(
        code, 0,
        "the documented grants are no problem: {stdout}{stderr}"
    );
    let changes = [
        (
            format!("GRANT CREATE ON SCHEMA fencewatch TO {role}"),
            format!("REVOKE CREATE ON SCHEMA fencewatch FROM {role}"),
            "CREATE on schema fencewatch",
        ),
        (
            format!("GRANT UPDATE ON fencewatch.scopes TO {role}"),
            format!("REVOKE UPDATE ON fencewatch.scopes FROM {role}"),
            "UPDATE on table fencewatch.scopes",
        ),
        (
            format!(
                "GRANT EXECUTE ON FUNCTION fencewatch.settle(text, bigint, text, text, text, \
                 text, boolean, boolean) TO {role}"
            ),
            format!(
                "REVOKE EXECUTE ON FUNCTION fencewatch.settle(text, bigint, text, text, text, \
                 text, boolean, boolean) FROM {role}"
            ),
            "EXECUTE on function fencewatch.settle",
        ),
        (
            format!("ALTER TABLE fencewatch.audit OWNER TO {role}"),
            "ALTER TABLE fencewatch.audit OWNER TO CURRENT_USER".to_owned(),
            "table fencewatch.audit belongs to",
        ),
        (
            format!("GRANT USAGE ON FOREIGN SERVER fencewatch_loopback TO {role}"),
            format!("REVOKE USAGE ON FOREIGN SERVER fencewatch_loopback FROM {role}"),
            "USAGE on foreign server fencewatch_loopback",
        ),
    ];
    for (change, undo, named) in changes {
        db.run_admin(&change).await;
        let (code, stdout, stderr) = fencewatch(&["fence", "status", "--database", &db.url]).await;
        assert_eq!(code, 1, "{change}: {stdout}{stderr}");
        assert!(
            stdout.contains(named) && stdout.contains(&role),
            "{change}: {stdout}"
        );
        db.run_admin(&undo).await;
        let (code, stdout, _) = fencewatch(&["fence", "status", "--database", &db.url]).await;
        assert_eq!(code, 0, "{undo}: {stdout}");
    }
}

/// An UPDATE that also moves its row to another scope is judged on the scope it leaves as well
/// as the one it enters: generation 5 cannot take an `eu` row (eu accepted 8) to a fresh `us`.
#[apply(both_backends)]
#[tokio::test]
async fn a_stale_write_cannot_move_a_row_out_of_its_scope(#[case] backend: Backend) {
    let (db, fence) = UserDb::with_protected_orders(backend).await;
    eu_at_8(&db).await;
    let mut conn = db.connect().await;
    assert_eq!(
        conn.run("UPDATE orders SET region = 'us', tok = 5, val = 'stale' WHERE id = 1")
            .await
            .unwrap(),
        0,
        "refused on eu, which accepted 8"
    );
    assert_eq!(
        conn.text("SELECT region || ':' || val FROM orders WHERE id = 1")
            .await
            .as_deref(),
        Some("eu:v5")
    );
    assert_eq!(
        conn.run("UPDATE orders SET region = 'us', tok = 9, val = 'moved' WHERE id = 1")
            .await
            .unwrap(),
        1,
        "9 is at or above both"
    );
    assert_eq!(
        conn.run("UPDATE orders SET tok = 8, val = 'stale' WHERE id = 2")
            .await
            .unwrap(),
        0,
        "the move raised eu to 9"
    );
    conn.close().await;
    assert_eq!(
        outcomes(&audit_of_scope(&fence, "eu").await),
        [
            ("accepted".into(), Some(5)),
            ("accepted".into(), Some(8)),
            ("stale".into(), Some(5)),
            ("accepted".into(), Some(9)),
            ("stale".into(), Some(8)),
        ]
    );
    assert_eq!(
        outcomes(&audit_of_scope(&fence, "us").await),
        [("accepted".into(), Some(9))],
        "nothing recorded on us for the refused move"
    );
    fence.seal().await.unwrap();
    assert!(fence.verify().await.unwrap().intact());
}

/// The guard against DDL that would let a write past the fence: the event trigger install
/// creates refuses the command; with it disabled (or never created: an installer that is no
/// superuser), `protect` gives the table a statement trigger that refuses each statement
/// instead. `status` says which, and names the table while it has such a trigger or child.
async fn ddl_guard_off(db: &UserDb, protect: &[&str]) {
    db.run_admin("ALTER EVENT TRIGGER fencewatch_ddl_guard DISABLE")
        .await;
    let (code, stdout, _) = fencewatch(&["fence", "status", "--database", &db.url]).await;
    assert_eq!(
        code, 1,
        "no guard and no statement trigger is a problem: {stdout}"
    );
    assert!(stdout.contains("protect it again"), "{stdout}");
    let (code, _, stderr) = fencewatch(protect).await;
    assert_eq!(code, 0, "{stderr}");
    let (code, stdout, _) = fencewatch(&["fence", "status", "--database", &db.url]).await;
    assert_eq!(code, 0, "{stdout}");
    assert!(stdout.contains("checks before every statement"), "{stdout}");
}

/// Inheritance children are refused by protect, and adding one afterwards is refused (or,
/// without the event trigger, stops every UPDATE of the parent, which would reach its rows
/// unfenced); `status` names it.
#[cfg_attr(
    not(fencewatch_pg),
    ignore = "needs PostgreSQL: set FENCEWATCH_TEST_PG"
)]
#[tokio::test]
async fn inheritance_children_are_refused_or_stop_the_parents_writes() {
    let db = UserDb::new(Backend::Postgres).await;
    db.run(crate::helpers::ORDERS).await;
    db.run("CREATE TABLE orders_archive () INHERITS (orders)")
        .await;
    let protect = [
        "fence",
        "protect",
        "--database",
        db.url.as_str(),
        "orders",
        "--token-column",
        "tok",
        "--scope-column",
        "region",
    ];
    fencewatch(&["fence", "install", "--database", &db.url]).await;
    let (code, _, stderr) = fencewatch(&protect).await;
    assert_eq!(code, 2, "{stderr}");
    assert!(stderr.contains("orders_archive"), "{stderr}");
    db.run("DROP TABLE orders_archive").await;
    let (code, _, stderr) = fencewatch(&protect).await;
    assert_eq!(code, 0, "{stderr}");
    eu_at_8(&db).await;
    let mut conn = db.connect().await;
    let (code, message) = database_error(
        &conn
            .run("CREATE TABLE orders_archive () INHERITS (orders)")
            .await
            .unwrap_err(),
    );
    assert_eq!(code, "FW400", "{message}");
    assert!(message.contains("orders_archive"), "{message}");
    let (code, message) = database_error(
        &conn
            .run("CREATE TABLE orders_old (LIKE orders); ALTER TABLE orders_old INHERIT orders")
            .await
            .unwrap_err(),
    );
    assert_eq!(code, "FW400", "{message}");

    ddl_guard_off(&db, &protect).await;
    conn.run(
        "CREATE TABLE orders_archive () INHERITS (orders); \
         INSERT INTO orders_archive (id, tok, region, val) VALUES (100, 1, 'eu', 'archived')",
    )
    .await
    .unwrap();
    let (code, message) = database_error(
        &conn
            .run("UPDATE orders SET tok = 3, val = 'stale' WHERE id = 100")
            .await
            .unwrap_err(),
    );
    assert_eq!(code, "FW400", "{message}");
    assert!(message.contains("orders_archive"), "{message}");
    assert_eq!(
        conn.text("SELECT val FROM orders WHERE id = 100")
            .await
            .as_deref(),
        Some("archived")
    );
    conn.close().await;
    let (code, stdout, _) = fencewatch(&["fence", "status", "--database", &db.url]).await;
    assert_eq!(code, 1, "{stdout}");
    assert!(stdout.contains("orders_archive"), "{stdout}");
}

/// A BEFORE trigger of the table's own that changes the row (here: lower-cases the region) runs
/// before the fence whatever its name, so the fence judges the row as it will be stored: a name
/// that would sort after the fence's is refused when the trigger is created (or, without the
/// event trigger, stops every statement), and `status` names it.
#[cfg_attr(
    not(fencewatch_pg),
    ignore = "needs PostgreSQL: set FENCEWATCH_TEST_PG"
)]
#[tokio::test]
async fn the_fence_judges_the_row_as_the_tables_own_triggers_leave_it() {
    let (db, fence) = UserDb::with_protected_orders(Backend::Postgres).await;
    eu_at_8(&db).await;
    db.run(
        "CREATE FUNCTION normalise() RETURNS trigger LANGUAGE plpgsql \
             AS $$ BEGIN NEW.region := lower(NEW.region); RETURN NEW; END $$; \
         CREATE TRIGGER zz_normalise BEFORE INSERT OR UPDATE ON orders \
             FOR EACH ROW EXECUTE FUNCTION normalise()",
    )
    .await;
    let mut conn = db.connect().await;
    assert_eq!(
        conn.run("UPDATE orders SET region = 'EU', tok = 5, val = 'stale' WHERE id = 1")
            .await
            .unwrap(),
        0,
        "judged as eu, which accepted 8"
    );
    assert_eq!(
        conn.run("UPDATE orders SET region = 'EU', tok = 8, val = 'fresh' WHERE id = 1")
            .await
            .unwrap(),
        1
    );
    assert_eq!(audit_of_scope(&fence, "EU").await.len(), 0);

    // A name that sorts after the fence's, whatever it is.
    let late = "CREATE TRIGGER \"\u{00FF}late\" BEFORE UPDATE ON orders \
                FOR EACH ROW EXECUTE FUNCTION normalise()";
    let (code, message) = database_error(&conn.run(late).await.unwrap_err());
    assert_eq!(code, "FW400", "{message}");
    assert!(message.contains("\u{00FF}late"), "{message}");
    let (code, message) = database_error(
        &conn
            .run("ALTER TRIGGER zz_normalise ON orders RENAME TO \"\u{00FF}renamed\"")
            .await
            .unwrap_err(),
    );
    assert_eq!(code, "FW400", "{message}");

    let protect = [
        "fence",
        "protect",
        "--database",
        db.url.as_str(),
        "orders",
        "--token-column",
        "tok",
        "--scope-column",
        "region",
        "--op-column",
        "op",
        "--owner-column",
        "who",
    ];
    ddl_guard_off(&db, &protect).await;
    conn.run(late).await.unwrap();
    let (code, message) = database_error(
        &conn
            .run("UPDATE orders SET tok = 9 WHERE id = 1")
            .await
            .unwrap_err(),
    );
    assert_eq!(code, "FW400", "{message}");
    assert!(message.contains("\u{00FF}late"), "{message}");
    let (code, stdout, _) = fencewatch(&["fence", "status", "--database", &db.url]).await;
    assert_eq!(code, 1, "{stdout}");
    assert!(stdout.contains("\u{00FF}late"), "{stdout}");
    conn.run("DROP TRIGGER \"\u{00FF}late\" ON orders")
        .await
        .unwrap();
    assert_eq!(
        conn.run("UPDATE orders SET tok = 9 WHERE id = 1")
            .await
            .unwrap(),
        1
    );
    conn.close().await;
}

/// A runaway token (a writer pushed the scope to the largest generation there is) is reset by
/// `fence reset`, audited in the scope's chain; a hand edit of the scope's row is a breach
/// `audit verify` names.
#[apply(both_backends)]
#[tokio::test]
async fn a_runaway_scope_is_reset_in_its_chain_and_a_hand_edit_is_a_named_breach(
    #[case] backend: Backend,
) {
    let (db, fence) = UserDb::with_protected_orders(backend).await;
    eu_at_8(&db).await;
    let mut conn = db.connect().await;
    assert_eq!(
        conn.run(&format!(
            "UPDATE orders SET tok = {} WHERE id = 2",
            i64::MAX
        ))
        .await
        .unwrap(),
        1
    );
    assert_eq!(
        conn.run("UPDATE orders SET tok = 9 WHERE id = 1")
            .await
            .unwrap(),
        0,
        "fenced out for good"
    );
    let url = db.url.as_str();
    for (args, why) in [
        (
            vec!["nowhere", "--to", "9", "--reason", "r"],
            "no such scope",
        ),
        (vec!["eu", "--to", "0", "--reason", "r"], "not a generation"),
        (vec!["eu", "--to", "9", "--reason", ""], "no reason"),
    ] {
        let (code, _, stderr) =
            fencewatch(&[&["fence", "reset", "--database", url][..], &args[..]].concat()).await;
        assert_eq!(code, 2, "{why}: {stderr}");
    }
    let (code, stdout, stderr) = fencewatch(&[
        "fence",
        "reset",
        "--database",
        url,
        "eu",
        "--to",
        "9",
        "--reason",
        "runaway token from a test",
    ])
    .await;
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(stdout.trim(), format!("reset eu from {} to 9", i64::MAX));
    assert_eq!(
        conn.run("UPDATE orders SET tok = 9 WHERE id = 1")
            .await
            .unwrap(),
        1
    );
    conn.close().await;
    let eu = audit_of_scope(&fence, "eu").await;
    let reset = &eu[eu.len() - 2];
    assert_eq!(
        (reset.outcome.as_str(), reset.token, reset.highest_token),
        ("reset", Some(9), 9)
    );
    assert_eq!(reset.detail.as_deref(), Some("runaway token from a test"));
    fence.seal().await.unwrap();
    let (code, stdout, _) = fencewatch(&["audit", "verify", "--database", url]).await;
    assert_eq!(code, 0, "{stdout}");

    let scopes = db.scopes_table();
    for (edit, undo) in [
        (
            format!("UPDATE {scopes} SET highest_token = 1 WHERE scope = 'eu'"),
            format!("UPDATE {scopes} SET highest_token = 9 WHERE scope = 'eu'"),
        ),
        (
            format!("UPDATE {scopes} SET head_seq = head_seq - 1 WHERE scope = 'eu'"),
            format!("UPDATE {scopes} SET head_seq = head_seq + 1 WHERE scope = 'eu'"),
        ),
        (
            format!("DELETE FROM {scopes} WHERE scope = 'eu'"),
            String::new(),
        ),
    ] {
        db.run_admin(&edit).await;
        let (code, stdout, stderr) = fencewatch(&["audit", "verify", "--database", url]).await;
        assert_eq!(code, 1, "{edit}: {stdout}{stderr}");
        assert!(stdout.contains("eu"), "{edit}: {stdout}");
        if !undo.is_empty() {
            db.run_admin(&undo).await;
            let (code, stdout, _) = fencewatch(&["audit", "verify", "--database", url]).await;
            assert_eq!(code, 0, "{undo}: {stdout}");
        }
    }
}

/// What held before and must keep holding on PostgreSQL: every way SQL can write a protected
/// row is fenced (the stale write affects nothing) and audited.
#[cfg_attr(
    not(fencewatch_pg),
    ignore = "needs PostgreSQL: set FENCEWATCH_TEST_PG"
)]
#[tokio::test]
async fn every_way_postgres_writes_a_row_is_fenced() {
    let (db, fence) = UserDb::with_protected_orders(Backend::Postgres).await;
    db.run(
        "CREATE VIEW eu_orders AS SELECT * FROM orders WHERE region = 'eu'; \
         CREATE TABLE parts (id integer, tok bigint, region text NOT NULL, val text) \
             PARTITION BY LIST (region); \
         CREATE TABLE parts_eu PARTITION OF parts FOR VALUES IN ('eu'); \
         CREATE TABLE parts_us PARTITION OF parts FOR VALUES IN ('us')",
    )
    .await;
    fence
        .protect(&ProtectSpec {
            table: "parts".into(),
            token_column: "tok".into(),
            scope: ScopeSource::Column("region".into()),
            op_column: None,
            owner_column: None,
            lease: None,
            generation: None,
        })
        .await
        .unwrap();
    eu_at_8(&db).await;
    let mut conn = db.connect().await;
    conn.run("INSERT INTO parts VALUES (1, 8, 'eu', 'v8')")
        .await
        .unwrap();
    let stale = [
        "INSERT INTO orders (id, tok, region, val) VALUES (1, 5, 'eu', 'stale') \
         ON CONFLICT (id) DO UPDATE SET tok = excluded.tok, val = excluded.val",
        "MERGE INTO orders o USING (VALUES (1, 5, 'stale')) v(id, tok, val) ON o.id = v.id \
         WHEN MATCHED THEN UPDATE SET tok = v.tok, val = v.val",
        "WITH changed AS (UPDATE orders SET tok = 5, val = 'stale' WHERE id = 1 RETURNING id) \
         INSERT INTO orders (id, tok, region, val) SELECT 50, 5, 'eu', 'stale' FROM changed",
        "UPDATE eu_orders SET tok = 5, val = 'stale' WHERE id = 1",
        "INSERT INTO parts_eu VALUES (2, 5, 'eu', 'stale')",
        "UPDATE parts_eu SET tok = 5, val = 'stale' WHERE id = 1",
        "UPDATE parts SET tok = 5, val = 'stale' WHERE id = 1",
    ];
    for statement in stale {
        conn.run(statement).await.unwrap();
        assert_eq!(
            conn.int(
                "SELECT (SELECT count(*) FROM orders WHERE val = 'stale') \
                      + (SELECT count(*) FROM parts WHERE val = 'stale')"
            )
            .await,
            Some(0),
            "{statement}"
        );
    }
    // Deleted, then inserted again: the scope remembers 8.
    conn.run("DELETE FROM orders WHERE id = 2").await.unwrap();
    assert_eq!(
        conn.run("INSERT INTO orders (id, tok, region, val) VALUES (2, 5, 'eu', 'stale')")
            .await
            .unwrap(),
        0
    );
    // A savepoint rolled back takes its acceptance with it; the stale write after stays refused.
    conn.run("BEGIN").await.unwrap();
    conn.run("SAVEPOINT s").await.unwrap();
    assert_eq!(
        conn.run("UPDATE orders SET tok = 9 WHERE id = 1")
            .await
            .unwrap(),
        1
    );
    conn.run("ROLLBACK TO SAVEPOINT s").await.unwrap();
    assert_eq!(
        conn.run("UPDATE orders SET tok = 7, val = 'stale' WHERE id = 1")
            .await
            .unwrap(),
        0
    );
    conn.run("COMMIT").await.unwrap();
    // COPY: the stale row is skipped, the fresh one goes in.
    if let UserConn::Pg(pg) = &mut conn {
        let mut copy = pg
            .copy_in_raw("COPY orders (id, tok, region, val) FROM STDIN")
            .await
            .unwrap();
        copy.send(&b"3\t5\teu\tstale\n4\t9\teu\tfresh\n"[..])
            .await
            .unwrap();
        assert_eq!(copy.finish().await.unwrap(), 1);
    }
    // REPEATABLE READ: a decision that meets a newer one fails with a serialization error.
    conn.run("BEGIN ISOLATION LEVEL REPEATABLE READ")
        .await
        .unwrap();
    conn.int("SELECT count(*) FROM orders").await;
    let mut other = db.connect().await;
    assert_eq!(
        other
            .run("UPDATE orders SET tok = 10 WHERE id = 4")
            .await
            .unwrap(),
        1
    );
    other.close().await;
    let late = conn
        .run("UPDATE orders SET tok = 9, val = 'stale' WHERE id = 1")
        .await;
    match late {
        Ok(rows) => assert_eq!(rows, 0),
        Err(error) => assert_eq!(database_error(&error).0, "40001"),
    }
    conn.run("ROLLBACK").await.unwrap();
    assert_eq!(
        conn.int("SELECT count(*) FROM orders WHERE val = 'stale'")
            .await,
        Some(0)
    );
    conn.close().await;
    let eu = audit_of_scope(&fence, "eu").await;
    let stale_rows = eu.iter().filter(|row| row.outcome == "stale").count();
    assert!(
        stale_rows >= 10,
        "each refusal is audited: {:?}",
        outcomes(&eu)
    );
    assert!(fence.verify().await.unwrap().intact());
}

/// What held before and must keep holding on SQLite: its conflict clauses, REPLACE, UPSERT and
/// UPDATE FROM are fenced, and a TEMP table named like the fence's does not stand in for it.
#[tokio::test]
async fn every_way_sqlite_writes_a_row_is_fenced() {
    let (db, fence) = UserDb::with_protected_orders(Backend::Sqlite).await;
    eu_at_8(&db).await;
    let mut conn = db.connect().await;
    conn.run(
        "CREATE TEMP TABLE fencewatch_scopes (scope TEXT PRIMARY KEY, highest_token INTEGER, \
             updated_at TEXT, head_seq INTEGER DEFAULT 0, sealed_seq INTEGER DEFAULT 0, \
             sealed_hash TEXT)",
    )
    .await
    .unwrap();
    for statement in [
        "INSERT OR REPLACE INTO orders (id, tok, region, val) VALUES (1, 5, 'eu', 'stale')",
        "REPLACE INTO orders (id, tok, region, val) VALUES (1, 5, 'eu', 'stale')",
        "INSERT INTO orders (id, tok, region, val) VALUES (1, 5, 'eu', 'stale') \
         ON CONFLICT (id) DO UPDATE SET tok = excluded.tok, val = excluded.val",
        "UPDATE OR REPLACE orders SET tok = 5, val = 'stale' WHERE id = 1",
        "UPDATE orders SET tok = v.tok, val = v.val \
           FROM (SELECT 1 AS id, 5 AS tok, 'stale' AS val) AS v WHERE orders.id = v.id",
        "INSERT OR IGNORE INTO orders (id, tok, region, val) VALUES (3, 5, 'eu', 'stale')",
    ] {
        conn.run(statement).await.unwrap();
        assert_eq!(
            conn.int("SELECT count(*) FROM main.orders WHERE val = 'stale'")
                .await,
            Some(0),
            "{statement}"
        );
    }
    conn.run("DELETE FROM orders WHERE id = 2").await.unwrap();
    assert_eq!(
        conn.run("INSERT INTO orders (id, tok, region, val) VALUES (2, 5, 'eu', 'stale')")
            .await
            .unwrap(),
        0
    );
    conn.close().await;
    let eu = audit_of_scope(&fence, "eu").await;
    assert_eq!(
        eu.iter().filter(|row| row.outcome == "stale").count(),
        7,
        "{:?}",
        outcomes(&eu)
    );
}

/// A fence installed and a table protected by the version before these fixes (v2): `install`
/// upgrades it and rewrites the table's triggers, and the holes are closed for that table too
/// (a stale move on both backends; a cast of the application's on PostgreSQL). The old trigger
/// is gone, not left beside the new one. (PostgreSQL: v2's own protect(), which its
/// migration installed; SQLite's triggers are written by fencewatch, so an older build's are
/// stood in for by triggers that differ from this build's.)
#[apply(both_backends)]
#[tokio::test]
async fn an_upgrade_closes_the_holes_of_tables_protected_before(#[case] backend: Backend) {
    let db = UserDb::new(backend).await;
    db.run(crate::helpers::ORDERS).await;
    let fence = db.fence().await;
    fence
        .install_version(&InstallOptions::default(), 2)
        .await
        .unwrap();
    db.run_admin(match backend {
        Backend::Postgres => {
            "SELECT fencewatch.protect('orders', 'tok', 'region', NULL, 'op', 'who', NULL)"
        }
        Backend::Sqlite => {
            "INSERT INTO fencewatch_protected (table_name, token_column, scope_column, \
                 op_column, owner_column, insert_trigger, update_trigger) \
             VALUES ('orders', 'tok', 'region', 'op', 'who', 'fencewatch_fence_orders_insert', \
                     'fencewatch_fence_orders_update'); \
             CREATE TRIGGER fencewatch_fence_orders_insert BEFORE INSERT ON orders \
                 BEGIN SELECT 1; END; \
             CREATE TRIGGER fencewatch_fence_orders_update BEFORE UPDATE ON orders \
                 BEGIN SELECT 1; END"
        }
    })
    .await;
    if backend == Backend::Postgres {
        assert_eq!(
            db.connect_admin()
                .await
                .text(
                    "SELECT string_agg(tgname, ',') FROM pg_trigger \
                        WHERE tgrelid = 'orders'::regclass"
                )
                .await
                .as_deref(),
            Some("fencewatch_fence"),
            "v2's trigger"
        );
    }
    let (code, stdout, stderr) = fencewatch(&["fence", "install", "--database", &db.url]).await;
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(
        stdout.trim(),
        format!("upgraded v2 → v{}", fence.latest_version())
    );
    eu_at_8(&db).await;
    let mut conn = db.connect().await;
    assert_eq!(
        conn.run("UPDATE orders SET region = 'us', tok = 5 WHERE id = 1")
            .await
            .unwrap(),
        0
    );
    let triggers = match backend {
        Backend::Postgres => {
            "SELECT string_agg(tgname, ',' ORDER BY tgname) FROM pg_trigger \
              WHERE tgrelid = 'orders'::regclass"
        }
        Backend::Sqlite => {
            "SELECT group_concat(name, ',') FROM (SELECT name FROM sqlite_master \
              WHERE type = 'trigger' AND tbl_name = 'orders' ORDER BY name)"
        }
    };
    let expected = match backend {
        // The event trigger guards DDL: no check before each statement is needed; the
        // statement's refusals are recorded after it. An upgraded table keeps v2's generation
        // (the row's token): no marker of a named token column.
        Backend::Postgres => "~fencewatch_fence,~fencewatch_fence_flush",
        Backend::Sqlite => "fencewatch_fence_orders_insert,fencewatch_fence_orders_update",
    };
    assert_eq!(conn.text(triggers).await.as_deref(), Some(expected));
    conn.close().await;
    if backend == Backend::Postgres {
        db.run(SPY).await;
        db.run(
            r#"
            CREATE TYPE region_t AS ENUM ('eu', 'us');
            CREATE FUNCTION region_text(region_t) RETURNS text LANGUAGE plpgsql
                AS $$ BEGIN PERFORM public.spy(); RETURN pg_catalog.format('%s', $1); END $$;
            CREATE CAST (region_t AS text) WITH FUNCTION region_text(region_t);
            ALTER TABLE orders ALTER COLUMN region TYPE region_t USING region::region_t;
            "#,
        )
        .await;
        let mut conn = db.connect().await;
        assert_eq!(
            conn.run("UPDATE orders SET tok = 9 WHERE id = 1")
                .await
                .unwrap(),
            1
        );
        conn.close().await;
        assert_nothing_ran_as_the_installer(&db).await;
    }
    let (code, stdout, _) = fencewatch(&["fence", "status", "--database", &db.url]).await;
    assert_eq!(code, 0, "{stdout}");
}

/// The installer's own sessions: the application role owns the database and so `public`, where
/// it puts functions that match the calls fencewatch's commands make better than PostgreSQL's
/// own do (an exact argument match beats one that needs a cast, wherever it is on the search
/// path). Install, protect, status, the audit tools, unprotect and uninstall, run as the
/// superuser, call none of them.
#[cfg_attr(
    not(fencewatch_pg),
    ignore = "needs PostgreSQL: set FENCEWATCH_TEST_PG"
)]
#[tokio::test]
async fn the_installers_commands_run_nothing_the_application_put_on_their_path() {
    let db = UserDb::new(Backend::Postgres).await;
    db.run(crate::helpers::ORDERS).await;
    db.run(SPY).await;
    db.run(
        r#"
        CREATE FUNCTION public.hashtextextended(text, integer) RETURNS bigint
            LANGUAGE plpgsql AS $$ BEGIN PERFORM public.spy(); RETURN 0; END $$;
        CREATE FUNCTION public.format(text, text) RETURNS text
            LANGUAGE plpgsql AS $$ BEGIN PERFORM public.spy(); RETURN $1; END $$;
        CREATE FUNCTION public.format(text, text, text) RETURNS text
            LANGUAGE plpgsql AS $$ BEGIN PERFORM public.spy(); RETURN $1; END $$;
        CREATE FUNCTION public.format(text, text, text, text) RETURNS text
            LANGUAGE plpgsql AS $$ BEGIN PERFORM public.spy(); RETURN $1; END $$;
        CREATE FUNCTION public.encode(bytea, text) RETURNS text
            LANGUAGE plpgsql AS $$ BEGIN PERFORM public.spy(); RETURN ''; END $$;
        CREATE FUNCTION public.split_part(text, text, integer) RETURNS text
            LANGUAGE plpgsql AS $$ BEGIN PERFORM public.spy(); RETURN ''; END $$;
        "#,
    )
    .await;
    let url = db.url.as_str();
    let commands: [&[&str]; 9] = [
        &["fence", "install", "--database", url],
        &[
            "fence",
            "protect",
            "--database",
            url,
            "orders",
            "--token-column",
            "tok",
            "--scope-column",
            "region",
        ],
        &["fence", "status", "--database", url],
        &[
            "fence",
            "reset",
            "--database",
            url,
            "eu",
            "--to",
            "3",
            "--reason",
            "a test",
        ],
        &["audit", "verify", "--database", url],
        &["audit", "log", "--database", url],
        &["audit", "incidents", "--database", url],
        &["fence", "unprotect", "--database", url, "orders"],
        &["fence", "uninstall", "--database", url],
    ];
    for command in commands {
        if command[1] == "reset" {
            db.run("INSERT INTO orders (id, tok, region) VALUES (1, 5, 'eu')")
                .await;
        }
        let (code, stdout, stderr) = fencewatch(command).await;
        assert_eq!(code, 0, "{command:?}: {stdout}{stderr}");
        assert_nothing_ran_as_the_installer(&db).await;
    }
}
