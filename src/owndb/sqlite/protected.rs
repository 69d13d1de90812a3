//! A SQLite fence's protected tables: the rows of `fencewatch_protected`, the triggers this
//! build's protect writes for each (`sqlite_triggers`), and whether those in the file are them.

use super::super::sqlite_triggers::{self, TableFence};
use super::super::{Generation, OwnDbError, ProtectedTable, ScopeSource};
use sqlx::SqliteConnection;

/// A protected table's row in `fencewatch_protected`.
type ProtectedRow = (
    String,
    String,
    Option<String>,
    Option<String>,
    Option<String>,
    Option<String>,
    Option<String>,
    String,
    String,
);

const PROTECTED_COLUMNS: &str = "table_name, token_column, scope_column, scope, op_column, \
     owner_column, lease, insert_trigger, update_trigger";

fn to_protected(row: ProtectedRow) -> ProtectedTable {
    let (table, token_column, scope_column, scope, op_column, owner_column, lease, _, _) = row;
    ProtectedTable {
        generation: Generation::Row,
        table,
        token_column,
        scope_column,
        scope,
        op_column,
        owner_column,
        lease,
    }
}

/// The protected tables, by name.
pub(super) async fn protected_tables(
    conn: &mut SqliteConnection,
) -> Result<Vec<ProtectedTable>, OwnDbError> {
    let rows: Vec<ProtectedRow> = sqlx::query_as(&format!(
        "SELECT {PROTECTED_COLUMNS} FROM fencewatch_protected ORDER BY table_name"
    ))
    .fetch_all(&mut *conn)
    .await?;
    Ok(rows.into_iter().map(to_protected).collect())
}

/// Why a protected table is not fenced as this build fences it.
pub(super) struct TriggerProblem {
    /// The table itself is gone.
    pub gone: bool,
    pub text: String,
}

/// Whether `protected`'s triggers are missing or differ from what this build's protect writes
/// (an older generator, or an edit by hand), or the table is gone.
pub(super) async fn trigger_problem(
    conn: &mut SqliteConnection,
    protected: &ProtectedTable,
) -> Result<Option<TriggerProblem>, OwnDbError> {
    let table = &protected.table;
    let exists: bool = sqlx::query_scalar(
        "SELECT EXISTS (SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = $1)",
    )
    .bind(table)
    .fetch_one(&mut *conn)
    .await?;
    if !exists {
        return Ok(Some(TriggerProblem {
            gone: true,
            text: format!("protected table {table} is gone: unprotect it, or protect the table that took its place"),
        }));
    }
    let (insert_sql, update_sql) = expected_triggers(protected)?;
    let (insert, update) = sqlite_triggers::trigger_names(table);
    for (name, expected) in [(insert, insert_sql), (update, update_sql)] {
        let stored: Option<String> = sqlx::query_scalar(
            "SELECT sql FROM sqlite_master WHERE type = 'trigger' AND name = $1",
        )
        .bind(&name)
        .fetch_optional(&mut *conn)
        .await?;
        let text = match stored {
            None => format!("{table} has lost its trigger {name}: protect it again"),
            Some(sql) if sql != expected => format!(
                "{table}: trigger {name} is not the one this fencewatch's protect writes \
                 (install rewrites it)"
            ),
            Some(_) => continue,
        };
        return Ok(Some(TriggerProblem { gone: false, text }));
    }
    Ok(None)
}

/// The `CREATE TRIGGER` statements protect writes for `protected`: (insert, update).
fn expected_triggers(protected: &ProtectedTable) -> Result<(String, String), OwnDbError> {
    let scope = match (&protected.scope_column, &protected.scope) {
        (Some(column), _) => ScopeSource::Column(column.clone()),
        (None, Some(scope)) => ScopeSource::Fixed(scope.clone()),
        (None, None) => {
            return Err(OwnDbError::Invalid(format!(
                "{} has neither a scope column nor a scope",
                protected.table
            )))
        }
    };
    Ok(sqlite_triggers::trigger_sql(&TableFence {
        table: &protected.table,
        token_column: &protected.token_column,
        scope: &scope,
        op_column: protected.op_column.as_deref(),
        owner_column: protected.owner_column.as_deref(),
        lease: protected.lease.as_deref(),
    }))
}

/// (Re)writes the triggers of a protected table and records them, replacing any it had.
pub(super) async fn write_triggers(
    conn: &mut SqliteConnection,
    protected: &ProtectedTable,
) -> Result<(), OwnDbError> {
    let previous: Option<(String, String)> = sqlx::query_as(
        "SELECT insert_trigger, update_trigger FROM fencewatch_protected WHERE table_name = $1",
    )
    .bind(&protected.table)
    .fetch_optional(&mut *conn)
    .await?;
    if let Some((insert, update)) = previous {
        sqlx::raw_sql(&sqlite_triggers::drop_triggers(&insert, &update))
            .execute(&mut *conn)
            .await?;
    }
    let (insert_sql, update_sql) = expected_triggers(protected)?;
    sqlx::raw_sql(&format!("{insert_sql};\n{update_sql};"))
        .execute(&mut *conn)
        .await?;
    let (insert, update) = sqlite_triggers::trigger_names(&protected.table);
    sqlx::query(&format!(
        "INSERT INTO fencewatch_protected ({PROTECTED_COLUMNS}) \
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9) \
         ON CONFLICT (table_name) DO UPDATE SET token_column = excluded.token_column, \
             scope_column = excluded.scope_column, scope = excluded.scope, \
             op_column = excluded.op_column, owner_column = excluded.owner_column, \
             lease = excluded.lease, insert_trigger = excluded.insert_trigger, \
             update_trigger = excluded.update_trigger"
    ))
    .bind(&protected.table)
    .bind(&protected.token_column)
    .bind(&protected.scope_column)
    .bind(&protected.scope)
    .bind(&protected.op_column)
    .bind(&protected.owner_column)
    .bind(&protected.lease)
    .bind(insert)
    .bind(update)
    .execute(&mut *conn)
    .await?;
    Ok(())
}
