//! The triggers that protect one SQLite table. SQLite has no dynamic SQL, so each table gets its
//! own BEFORE INSERT and BEFORE UPDATE triggers with its columns written in. Every name and
//! value goes in quoted (`"…"` identifiers, `'…'` literals), so a table or column name cannot
//! inject SQL into them.
//!
//! Each trigger decides in order: no scope or no positive token → the statement fails (`FW400`,
//! RAISE(ABORT): a multi-row statement is undone whole); an operation id applied under this
//! generation → `replayed`; with a lease, a generation the lease never issued → `unauthorized`,
//! one it superseded → `superseded`; an UPDATE that moves the row to another scope, below the
//! highest of the scope it leaves → `stale` there; below the scope's highest → `stale`. Each
//! refusal appends its audit row, then `RAISE(IGNORE)` skips the row (zero rows, no error) and
//! keeps the audit row. Otherwise the scope (and a scope the row leaves) moves up, the
//! operation is recorded and `accepted` is appended (on both scopes of a move).

use super::quote::{ident, literal};
use super::ScopeSource;

/// What a protected table's triggers are built from.
pub struct TableFence<'a> {
    pub table: &'a str,
    pub token_column: &'a str,
    pub scope: &'a ScopeSource,
    pub op_column: Option<&'a str>,
    pub owner_column: Option<&'a str>,
    pub lease: Option<&'a str>,
}

/// The names of the two triggers of `table`: (insert, update).
pub fn trigger_names(table: &str) -> (String, String) {
    (
        format!("fencewatch_fence_{table}_insert"),
        format!("fencewatch_fence_{table}_update"),
    )
}

/// Each trigger's `CREATE TRIGGER` statement as SQLite keeps it in `sqlite_master.sql` (no
/// trailing semicolon): (insert, update). What install compares the stored ones with.
pub fn trigger_sql(fence: &TableFence<'_>) -> (String, String) {
    let (insert, update) = trigger_names(fence.table);
    (
        format!(
            "CREATE TRIGGER {} BEFORE INSERT ON {} BEGIN {} END",
            ident(&insert),
            ident(fence.table),
            body(fence, false),
        ),
        format!(
            "CREATE TRIGGER {} BEFORE UPDATE ON {} BEGIN {} END",
            ident(&update),
            ident(fence.table),
            body(fence, true),
        ),
    )
}

/// The statements that drop both triggers, whether or not they exist.
pub fn drop_triggers(insert_trigger: &str, update_trigger: &str) -> String {
    format!(
        "DROP TRIGGER IF EXISTS {}; DROP TRIGGER IF EXISTS {};",
        ident(insert_trigger),
        ident(update_trigger)
    )
}

fn column_text(column: Option<&str>) -> String {
    column.map_or_else(
        || "NULL".to_owned(),
        |c| format!("CAST(NEW.{} AS TEXT)", ident(c)),
    )
}

/// One trigger's program; `on_update`: the UPDATE trigger's, which also judges a move to
/// another scope on the scope the row leaves.
fn body(fence: &TableFence<'_>, on_update: bool) -> String {
    let scope = match fence.scope {
        ScopeSource::Column(column) => format!("CAST(NEW.{} AS TEXT)", ident(column)),
        ScopeSource::Fixed(scope) => literal(scope),
    };
    // The scope an UPDATE moves the row out of, where it moves one.
    let left = match (fence.scope, on_update) {
        (ScopeSource::Column(column), true) => Some(format!("CAST(OLD.{} AS TEXT)", ident(column))),
        _ => None,
    };
    let token = format!("NEW.{}", ident(fence.token_column));
    let op = column_text(fence.op_column);
    let owner = column_text(fence.owner_column);
    let lease = fence.lease.map_or_else(|| "NULL".to_owned(), literal);
    let table = literal(fence.table);
    // An audit row of `outcome` on scope `on` with `detail`, selected from `from` where
    // `condition` holds.
    let audit_on =
        |on: &str, outcome: &str, highest: &str, detail: &str, from: &str, condition: &str| {
            let next_seq = format!(
            "coalesce((SELECT h.head_seq FROM fencewatch_scopes h WHERE h.scope = {on}), 0) + 1"
        );
            format!(
                "INSERT INTO fencewatch_audit (at, resource, outcome, token, highest_token, \
                 idempotency_key, owner, lease, detail, table_name, seq) \
             SELECT c.at, {on}, '{outcome}', {token}, {highest}, {op}, {owner}, {lease}, \
                    {detail}, {table}, {next_seq} \
               FROM {from} WHERE {condition};"
            )
        };
    let audit = |outcome: &str, highest: &str, detail: &str, from: &str, condition: &str| {
        audit_on(&scope, outcome, highest, detail, from, condition)
    };
    let with_scope = "fencewatch_clock c LEFT JOIN fencewatch_scopes s ON s.scope = ";
    let mut program = vec![
        format!(
            "SELECT RAISE(ABORT, 'FW400: a protected row has no scope') \
              WHERE {scope} IS NULL OR {scope} = '';"
        ),
        format!(
            "SELECT RAISE(ABORT, 'FW400: the token must be a positive generation') \
              WHERE {token} IS NULL OR typeof({token}) <> 'integer' OR {token} < 1;"
        ),
    ];
    if fence.op_column.is_some() {
        let applied = format!(
            "EXISTS (SELECT 1 FROM fencewatch_operations o \
                      WHERE o.scope = {scope} AND o.op_id = {op} AND o.token = {token} \
                        AND o.applied_at_us > c.now_us - (SELECT CAST(value AS INTEGER) \
                            FROM fencewatch_settings WHERE name = 'operation_retention_us'))"
        );
        program.push(audit(
            "replayed",
            "coalesce(s.highest_token, 0)",
            &format!("'operation ' || {op} || ' was applied under generation ' || {token}"),
            &format!("{with_scope}{scope}"),
            &applied,
        ));
        program.push(format!(
            "SELECT RAISE(IGNORE) FROM fencewatch_clock c WHERE {applied};"
        ));
    }
    if fence.lease.is_some() {
        let issued = format!(
            "EXISTS (SELECT 1 FROM leases l WHERE l.name = {lease} AND {token} <= l.token)"
        );
        program.push(audit(
            "unauthorized",
            "coalesce(s.highest_token, 0)",
            &format!("'generation ' || {token} || ' was never issued by lease ' || {lease}"),
            &format!("{with_scope}{scope}"),
            &format!("NOT {issued}"),
        ));
        program.push(format!("SELECT RAISE(IGNORE) WHERE NOT {issued};"));
        program.push(audit(
            "superseded",
            "coalesce(s.highest_token, 0)",
            &format!(
                "'generation ' || {token} || ' of lease ' || {lease} || ' was superseded by ' \
                 || l.token"
            ),
            &format!("{with_scope}{scope} JOIN leases l ON l.name = {lease}"),
            &format!("{token} < l.token"),
        ));
        program.push(format!(
            "SELECT RAISE(IGNORE) FROM leases l WHERE l.name = {lease} AND {token} < l.token;"
        ));
    }
    if let Some(left) = &left {
        let moves = format!("{left} IS NOT {scope} AND {left} <> ''");
        program.push(audit_on(
            left,
            "stale",
            "s.highest_token",
            &format!(
                "'generation ' || {token} || ' is below ' || s.highest_token \
                 || ', the highest accepted'"
            ),
            &format!("fencewatch_clock c JOIN fencewatch_scopes s ON s.scope = {left}"),
            &format!("{moves} AND {token} < s.highest_token"),
        ));
        program.push(format!(
            "SELECT RAISE(IGNORE) FROM fencewatch_scopes s \
              WHERE {moves} AND s.scope = {left} AND {token} < s.highest_token;"
        ));
    }
    program.push(audit(
        "stale",
        "s.highest_token",
        &format!(
            "'generation ' || {token} || ' is below ' || s.highest_token \
             || ', the highest accepted'"
        ),
        &format!("fencewatch_clock c JOIN fencewatch_scopes s ON s.scope = {scope}"),
        &format!("{token} < s.highest_token"),
    ));
    program.push(format!(
        "SELECT RAISE(IGNORE) FROM fencewatch_scopes s \
          WHERE s.scope = {scope} AND {token} < s.highest_token;"
    ));
    program.push(format!(
        "INSERT INTO fencewatch_scopes (scope, highest_token, updated_at) \
         SELECT {scope}, {token}, c.at FROM fencewatch_clock c WHERE true \
         ON CONFLICT (scope) DO UPDATE SET highest_token = excluded.highest_token, \
                                           updated_at = excluded.updated_at;"
    ));
    if fence.op_column.is_some() {
        program.push(format!(
            "INSERT INTO fencewatch_operations (scope, op_id, token, applied_at_us) \
             SELECT {scope}, {op}, {token}, c.now_us FROM fencewatch_clock c \
              WHERE {op} IS NOT NULL \
             ON CONFLICT (scope, op_id) DO UPDATE SET token = excluded.token, \
                                                      applied_at_us = excluded.applied_at_us;"
        ));
    }
    let lapsed = match fence.lease {
        Some(name) => format!(
            "CASE WHEN EXISTS (SELECT 1 FROM leases l WHERE l.name = {lease} \
                   AND (l.released_at_us IS NOT NULL OR l.expires_at_us <= c.now_us)) \
                  THEN {} END",
            literal(&format!("lease {name} had lapsed"))
        ),
        None => "NULL".to_owned(),
    };
    program.push(audit(
        "accepted",
        &token,
        &lapsed,
        "fencewatch_clock c",
        "true",
    ));
    if let Some(left) = &left {
        let moves = format!("{left} IS NOT {scope} AND {left} <> ''");
        program.push(format!(
            "INSERT INTO fencewatch_scopes (scope, highest_token, updated_at) \
             SELECT {left}, {token}, c.at FROM fencewatch_clock c WHERE {moves} \
             ON CONFLICT (scope) DO UPDATE SET highest_token = excluded.highest_token, \
                                               updated_at = excluded.updated_at;"
        ));
        program.push(audit_on(
            left,
            "accepted",
            &token,
            &lapsed,
            "fencewatch_clock c",
            &moves,
        ));
    }
    program.join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_and_values_are_quoted() {
        let scope = ScopeSource::Fixed("o'brien".into());
        let (insert, update) = trigger_sql(&TableFence {
            table: "or\"ders",
            token_column: "tok",
            scope: &scope,
            op_column: None,
            owner_column: Some("who"),
            lease: Some("jobs'1"),
        });
        let sql = format!("{insert};\n{update};");
        assert!(sql.contains("BEFORE INSERT ON \"or\"\"ders\""), "{sql}");
        assert!(sql.contains("'o''brien'"));
        assert!(sql.contains("'jobs''1'"));
        assert!(sql.contains("CAST(NEW.\"who\" AS TEXT)"));
        assert!(
            !sql.contains("fencewatch_operations o"),
            "no op column, no replay"
        );
    }
}
