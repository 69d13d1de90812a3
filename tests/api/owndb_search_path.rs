//! The fence's internal functions carry no search path of their own: they name the fence's
//! objects by schema and pg_catalog's functions by pg_catalog, and only its entry points (the
//! guard, the trigger functions) fix a search path. A caller whose search path puts look-alikes
//! first, even ahead of pg_catalog, gets the fence's own answers, and nothing of theirs runs.

use crate::helpers::{audit_of_scope, Backend, Guard, UserDb};

/// Look-alikes of the fence's tables and functions and of the built-ins it uses, in a schema of
/// the caller's: every function raises, so any call to one fails the statement, and the tables
/// start empty.
const LOOK_ALIKES: &str = r#"
CREATE SCHEMA evil;
CREATE TABLE evil.scopes (LIKE fencewatch.scopes);
CREATE TABLE evil.audit (LIKE fencewatch.audit);
CREATE TABLE evil.pending (LIKE fencewatch.pending);
CREATE TABLE evil.operations (LIKE fencewatch.operations);
CREATE TABLE evil.settings (name text, value text);
CREATE FUNCTION evil.hijacked() RETURNS text LANGUAGE plpgsql
    AS $$ BEGIN RAISE EXCEPTION 'hijacked'; END $$;
CREATE FUNCTION evil.settle(text, bigint, text, text, text, text, boolean, boolean,
    OUT outcome text, OUT highest bigint, OUT detail text, OUT head bigint, OUT row_id bigint)
    LANGUAGE plpgsql AS $$ BEGIN PERFORM evil.hijacked(); END $$;
CREATE FUNCTION evil.guard(text, bigint, text, text, text, text) RETURNS text
    LANGUAGE sql AS $$ SELECT evil.hijacked() $$;
CREATE FUNCTION evil.decide(bigint, text, bigint, text, text, OUT outcome text,
    OUT detail text) LANGUAGE plpgsql AS $$ BEGIN PERFORM evil.hijacked(); END $$;
CREATE FUNCTION evil.row_hash(bigint, timestamptz, text, text, bigint, bigint, text, text,
    text, text, text, bytea) RETURNS bytea
    LANGUAGE sql AS $$ SELECT evil.hijacked()::bytea $$;
CREATE FUNCTION evil.sha256(bytea) RETURNS bytea
    LANGUAGE sql AS $$ SELECT evil.hijacked()::bytea $$;
CREATE FUNCTION evil.to_json(text) RETURNS json
    LANGUAGE sql AS $$ SELECT evil.hijacked()::json $$;
CREATE FUNCTION evil.encode(bytea, text) RETURNS text
    LANGUAGE sql AS $$ SELECT evil.hijacked() $$;
CREATE FUNCTION evil.clock_timestamp() RETURNS timestamptz
    LANGUAGE sql AS $$ SELECT evil.hijacked()::timestamptz $$;
CREATE FUNCTION evil.cat(text, text) RETURNS text
    LANGUAGE sql AS $$ SELECT evil.hijacked() $$;
CREATE OPERATOR evil.|| (LEFTARG = text, RIGHTARG = text, FUNCTION = evil.cat);
"#;

#[cfg_attr(
    not(fencewatch_pg),
    ignore = "needs PostgreSQL: set FENCEWATCH_TEST_PG"
)]
#[tokio::test]
async fn a_callers_search_path_cannot_redirect_the_fence() {
    let (db, fence) = UserDb::with_protected_orders(Backend::Postgres).await;
    // The look-alikes copy the fence's tables' columns (LIKE needs SELECT on them).
    db.grant_audit_reads().await;
    db.run(LOOK_ALIKES).await;
    let mut conn = db.connect().await;
    conn.run("SET search_path = evil, pg_catalog, public")
        .await
        .unwrap();
    assert!(
        conn.run("SELECT 'a' || 'b'").await.is_err(),
        "the look-alikes are first in the caller's search path"
    );

    assert_eq!(
        conn.guard("s", Some(3), Some("op-3"), Some("me"), None)
            .await,
        Guard::Accepted
    );
    assert_eq!(
        conn.guard("s", Some(3), Some("op-3"), Some("me"), None)
            .await,
        Guard::Replayed
    );
    let refused = conn.guard("s", Some(2), None, Some("me"), None).await;
    assert!(
        matches!(&refused, Guard::Refused { code, .. } if code == "FW409"),
        "{refused:?}"
    );
    assert_eq!(
        conn.run("INSERT INTO public.orders (id, tok, region) VALUES (1, 5, 'eu')")
            .await
            .unwrap(),
        1
    );
    assert_eq!(
        conn.run("UPDATE public.orders SET tok = 4 WHERE id = 1")
            .await
            .unwrap(),
        0,
        "stale"
    );
    let invalid = conn
        .run("UPDATE public.orders SET tok = NULL WHERE id = 1")
        .await
        .unwrap_err();
    assert!(invalid.to_string().contains("FW400"), "{invalid}");

    for table in ["scopes", "audit", "pending", "operations", "settings"] {
        assert_eq!(
            conn.int(&format!("SELECT count(*) FROM evil.{table}"))
                .await,
            Some(0),
            "evil.{table} was written"
        );
    }
    conn.close().await;
    let outcomes = |rows: Vec<fencewatch::domain::fence_audit::FenceAuditRow>| {
        rows.into_iter().map(|row| row.outcome).collect::<Vec<_>>()
    };
    assert_eq!(
        outcomes(audit_of_scope(&fence, "s").await),
        ["accepted", "replayed", "stale"]
    );
    assert_eq!(
        outcomes(audit_of_scope(&fence, "eu").await),
        ["accepted", "stale", "invalid"]
    );
    assert!(fence.verify().await.unwrap().intact());
}
