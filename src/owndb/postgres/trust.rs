//! Who may do what to the fence's objects, read from the catalog: `install` refuses a schema
//! that another role owns or may create objects in (a schema owner may drop and replace any
//! function in it, which a protected write would then call as the fence's owner), and `status`
//! names every owner and privilege that differs from what install made and the documentation
//! grants, and every protected table a write could get past the fence on.
//!
//! "Trusted" is the fence's owner and any superuser: no one else may own an object of the fence
//! or hold more on it than the documented grants (USAGE on the schema, SELECT on its tables,
//! EXECUTE on `fence()`, `prune_operations()` and `autonomous_audit_problem()`).

use super::super::OwnDbError;
use sqlx::PgConnection;

/// Functions others may be granted EXECUTE on (docs/own-database.md, "Privileges").
const CALLABLE: &[&str] = &[
    "fence",
    "begin",
    "refused",
    "prune_operations",
    "drain_pending",
    "autonomous_audit_problem",
];

/// A role's name as the catalog holds it, `PUBLIC` for grantee 0.
const GRANTEE: &str = "CASE WHEN a.grantee = 0 THEN 'PUBLIC' ELSE a.grantee::regrole::text END";

/// Whether role oid `r` is trusted, given the fence owner's oid in `owner`.
fn trusted(role: &str) -> String {
    format!(
        "({role} = owner.oid OR coalesce((SELECT r.rolsuper FROM pg_roles r \
          WHERE r.oid = {role}), false))"
    )
}

/// Objects in schema `$1` owned by a role that is not trusted, and grants of CREATE on it: one
/// line each. The fence owner is the role `owner_sql` selects (its `oid`).
fn foreign_sql(owner_sql: &str) -> String {
    let not_trusted = |role: &str| format!("NOT {}", trusted(role));
    let grantee = format!("a.grantee <> ns.nspowner AND {}", not_trusted("a.grantee"));
    format!(
        "WITH owner AS ({owner_sql}), ns AS (SELECT n.* FROM pg_namespace n WHERE n.nspname = $1) \
         SELECT format('schema %I belongs to %s', ns.nspname, ns.nspowner::regrole) \
           FROM ns, owner WHERE {schema_owner} \
         UNION ALL \
         SELECT format('%s has CREATE on schema %I, and may put objects in it', {GRANTEE}, \
                       ns.nspname) \
           FROM ns, owner, aclexplode(ns.nspacl) a \
          WHERE a.privilege_type = 'CREATE' AND {grantee} \
         UNION ALL \
         SELECT format('%s %s belongs to %s', CASE c.relkind WHEN 'r' THEN 'table' \
                         WHEN 'v' THEN 'view' WHEN 'S' THEN 'sequence' WHEN 'i' THEN 'index' \
                         ELSE 'relation' END, c.oid::regclass, c.relowner::regrole) \
           FROM ns, owner, pg_class c WHERE c.relnamespace = ns.oid AND {class_owner} \
         UNION ALL \
         SELECT format('function %s belongs to %s', p.oid::regprocedure, p.proowner::regrole) \
           FROM ns, owner, pg_proc p WHERE p.pronamespace = ns.oid AND {proc_owner} \
         UNION ALL \
         SELECT format('type %s belongs to %s', t.oid::regtype, t.typowner::regrole) \
           FROM ns, owner, pg_type t \
          WHERE t.typnamespace = ns.oid AND t.typrelid = 0 AND t.typelem = 0 AND {type_owner} \
         UNION ALL \
         SELECT format('operator %s belongs to %s', o.oid::regoperator, o.oprowner::regrole) \
           FROM ns, owner, pg_operator o WHERE o.oprnamespace = ns.oid AND {operator_owner} \
         ORDER BY 1",
        schema_owner = not_trusted("ns.nspowner"),
        class_owner = not_trusted("c.relowner"),
        proc_owner = not_trusted("p.proowner"),
        type_owner = not_trusted("t.typowner"),
        operator_owner = not_trusted("o.oprowner"),
    )
}

/// Install, before anything is created in an existing schema: refuses it when a role that is
/// neither the installing role nor a superuser owns it or anything in it, or may create objects
/// in it, naming each.
pub(super) async fn refuse_foreign_schema(
    conn: &mut PgConnection,
    schema: &str,
) -> Result<(), OwnDbError> {
    let found: Vec<String> = sqlx::query_scalar(&foreign_sql(
        "SELECT r.oid FROM pg_roles r WHERE r.rolname = current_user",
    ))
    .bind(schema)
    .fetch_all(&mut *conn)
    .await?;
    match found.is_empty() {
        true => Ok(()),
        false => Err(OwnDbError::Untrusted {
            schema: schema.to_owned(),
            found,
        }),
    }
}

/// Status: every owner and privilege of the fence's objects that differs from what install made
/// and the documented grants allow, one line each. The fence's owner is the owner of its
/// `migrations` table, which install creates.
pub(super) async fn privilege_problems(
    conn: &mut PgConnection,
    schema: &str,
    server: Option<&str>,
) -> Result<Vec<String>, OwnDbError> {
    let owner_sql = "SELECT c.relowner AS oid FROM pg_class c \
                      WHERE c.oid = to_regclass(format('%I.migrations', $1::text))";
    let mut problems: Vec<String> = sqlx::query_scalar(&foreign_sql(owner_sql))
        .bind(schema)
        .fetch_all(&mut *conn)
        .await?;
    let grants = format!(
        "WITH owner AS ({owner_sql}) \
         SELECT format('%s on table %s is granted to %s (install grants only SELECT)', \
                       a.privilege_type, c.oid::regclass, {GRANTEE}) \
           FROM owner, pg_class c, aclexplode(c.relacl) a \
          WHERE c.relnamespace = $1::text::regnamespace AND a.privilege_type <> 'SELECT' \
            AND a.grantee <> c.relowner AND NOT {trusted_grantee} \
         UNION ALL \
         SELECT format('EXECUTE on function %s is granted to %s (only fence(), \
                        prune_operations() and autonomous_audit_problem() are for others)', \
                       p.oid::regprocedure, {GRANTEE}) \
           FROM owner, pg_proc p, \
                aclexplode(coalesce(p.proacl, acldefault('f', p.proowner))) a \
          WHERE p.pronamespace = $1::text::regnamespace AND p.proname <> ALL($2) \
            AND a.grantee <> p.proowner AND NOT {trusted_grantee} \
         ORDER BY 1",
        trusted_grantee = trusted("a.grantee"),
    );
    problems.extend(
        sqlx::query_scalar::<_, String>(&grants)
            .bind(schema)
            .bind(CALLABLE)
            .fetch_all(&mut *conn)
            .await?,
    );
    if let Some(server) = server {
        let loopback = format!(
            "WITH owner AS ({owner_sql}) \
             SELECT format('USAGE on foreign server %I is granted to %s', s.srvname, {GRANTEE}) \
               FROM owner, pg_foreign_server s, aclexplode(s.srvacl) a \
              WHERE s.srvname = $2 AND a.grantee <> s.srvowner AND NOT {trusted_grantee} \
             UNION ALL \
             SELECT format('foreign server %I has a user mapping for %s', s.srvname, \
                           CASE WHEN m.umuser = 0 THEN 'PUBLIC' ELSE m.umuser::regrole::text END) \
               FROM owner, pg_foreign_server s JOIN pg_user_mapping m ON m.umserver = s.oid \
              WHERE s.srvname = $2 AND NOT {trusted_user} \
             ORDER BY 1",
            trusted_grantee = trusted("a.grantee"),
            trusted_user = trusted("m.umuser"),
        );
        problems.extend(
            sqlx::query_scalar::<_, String>(&loopback)
                .bind(schema)
                .bind(server)
                .fetch_all(&mut *conn)
                .await?,
        );
    }
    Ok(problems)
}
