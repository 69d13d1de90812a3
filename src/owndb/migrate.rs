//! The fence's own migration runner. The migrations are embedded with `sqlx::migrate!` for
//! their text and checksums only: sqlx's runner keeps its versions in `_sqlx_migrations`, which
//! in a user's database may be the user's own (or the daemon's, when the daemon's store is the
//! same database). Ours are kept in `<schema>.migrations` (PostgreSQL) or
//! `fencewatch_migrations` (SQLite), applied in one transaction with the install's settings, so
//! an install or upgrade is all or nothing.

use super::OwnDbError;
use sqlx::migrate::{Migration, Migrator};
use sqlx::{PgConnection, SqliteConnection};

static POSTGRES: Migrator = sqlx::migrate!("migrations/fence/postgres");
static SQLITE: Migrator = sqlx::migrate!("migrations/fence/sqlite");

pub fn postgres() -> &'static Migrator {
    &POSTGRES
}

pub fn sqlite() -> &'static Migrator {
    &SQLITE
}

/// The newest version in `migrator`.
pub fn latest(migrator: &Migrator) -> i64 {
    migrator.iter().map(|m| m.version).max().unwrap_or(0)
}

/// A migration recorded as applied: its version and checksum.
pub type Applied = (i64, Vec<u8>);

/// The migrations to apply to go from `applied` to `target`, in order. Refuses an installed
/// version this build does not know, an installed migration whose text changed, and a target
/// this build does not have.
pub fn plan<'m>(
    migrator: &'m Migrator,
    applied: &[Applied],
    target: i64,
) -> Result<Vec<&'m Migration>, OwnDbError> {
    let known = latest(migrator);
    if target < 1 || target > known || migrator.iter().all(|m| m.version != target) {
        return Err(OwnDbError::Invalid(format!(
            "this fencewatch has fence versions 1 to {known}, not {target}"
        )));
    }
    for (version, checksum) in applied {
        let Some(migration) = migrator.iter().find(|m| m.version == *version) else {
            return Err(OwnDbError::Newer {
                installed: applied.iter().map(|(v, _)| *v).max().unwrap_or(*version),
                known,
            });
        };
        if migration.checksum.as_ref() != checksum.as_slice() {
            return Err(OwnDbError::Altered { version: *version });
        }
    }
    Ok(migrator
        .iter()
        .filter(|m| m.version <= target && applied.iter().all(|(v, _)| *v != m.version))
        .collect())
}

/// The installed version: the highest applied.
pub fn installed(applied: &[Applied]) -> Option<i64> {
    applied.iter().map(|(version, _)| *version).max()
}

/// PostgreSQL: the applied migrations of the fence in `schema` (empty when it has none).
/// Runs inside the caller's transaction.
pub async fn postgres_applied(
    conn: &mut PgConnection,
    schema: &str,
) -> Result<Vec<Applied>, OwnDbError> {
    let exists: bool =
        sqlx::query_scalar("SELECT to_regclass(format('%I.migrations', $1::text)) IS NOT NULL")
            .bind(schema)
            .fetch_one(&mut *conn)
            .await?;
    if !exists {
        return Ok(Vec::new());
    }
    let sql = format!(
        "SELECT version, checksum FROM {}.migrations ORDER BY version",
        super::quote::ident(schema)
    );
    Ok(sqlx::query_as(&sql).fetch_all(&mut *conn).await?)
}

/// PostgreSQL: applies `pending` in the caller's transaction, whose search path is the fence's
/// schema (then pg_temp), recording each. The fence's functions name its objects by schema: a
/// migration's `@schema@` is the schema as an identifier, `@schema_literal@` its name as a
/// string literal (checksums stay those of the text as shipped).
pub async fn postgres_apply(
    conn: &mut PgConnection,
    schema: &str,
    pending: &[&Migration],
) -> Result<(), OwnDbError> {
    let ident = super::quote::ident(schema);
    sqlx::raw_sql(&format!(
        "CREATE TABLE IF NOT EXISTS {ident}.migrations (\
             version bigint PRIMARY KEY, description text NOT NULL, checksum bytea NOT NULL, \
             installed_at timestamptz NOT NULL DEFAULT clock_timestamp()); \
         REVOKE ALL ON {ident}.migrations FROM PUBLIC"
    ))
    .execute(&mut *conn)
    .await?;
    let record = format!(
        "INSERT INTO {ident}.migrations (version, description, checksum) VALUES ($1, $2, $3)"
    );
    for migration in pending {
        let sql = migration
            .sql
            .replace("@schema@", &ident)
            .replace("@schema_literal@", &super::quote::literal(schema));
        sqlx::raw_sql(&sql).execute(&mut *conn).await?;
        sqlx::query(&record)
            .bind(migration.version)
            .bind(migration.description.as_ref())
            .bind(migration.checksum.as_ref())
            .execute(&mut *conn)
            .await?;
    }
    Ok(())
}

/// SQLite: the applied migrations (empty when the file has no fence).
pub async fn sqlite_applied(conn: &mut SqliteConnection) -> Result<Vec<Applied>, OwnDbError> {
    let exists: bool = sqlx::query_scalar(
        "SELECT EXISTS (SELECT 1 FROM sqlite_master \
          WHERE type = 'table' AND name = 'fencewatch_migrations')",
    )
    .fetch_one(&mut *conn)
    .await?;
    if !exists {
        return Ok(Vec::new());
    }
    Ok(
        sqlx::query_as("SELECT version, checksum FROM fencewatch_migrations ORDER BY version")
            .fetch_all(&mut *conn)
            .await?,
    )
}

/// SQLite: applies `pending` in the caller's transaction, recording each.
pub async fn sqlite_apply(
    conn: &mut SqliteConnection,
    pending: &[&Migration],
) -> Result<(), OwnDbError> {
    sqlx::raw_sql(
        "CREATE TABLE IF NOT EXISTS fencewatch_migrations (\
             version INTEGER PRIMARY KEY NOT NULL, description TEXT NOT NULL, \
             checksum BLOB NOT NULL, \
             installed_at TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now')))",
    )
    .execute(&mut *conn)
    .await?;
    for migration in pending {
        sqlx::raw_sql(&migration.sql).execute(&mut *conn).await?;
        sqlx::query(
            "INSERT INTO fencewatch_migrations (version, description, checksum) \
             VALUES ($1, $2, $3)",
        )
        .bind(migration.version)
        .bind(migration.description.as_ref())
        .bind(migration.checksum.as_ref())
        .execute(&mut *conn)
        .await?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn applied(migrator: &Migrator, up_to: i64) -> Vec<Applied> {
        migrator
            .iter()
            .filter(|m| m.version <= up_to)
            .map(|m| (m.version, m.checksum.to_vec()))
            .collect()
    }

    #[test]
    fn both_backends_have_the_same_versions() {
        let versions = |m: &Migrator| m.iter().map(|m| m.version).collect::<Vec<_>>();
        assert_eq!(versions(postgres()), versions(sqlite()));
        assert!(latest(postgres()) >= 2, "an upgrade path exists to test");
    }

    #[test]
    fn the_plan_applies_what_is_missing_up_to_the_target() {
        let m = postgres();
        let top = latest(m);
        let all: Vec<i64> = plan(m, &[], top)
            .unwrap()
            .iter()
            .map(|m| m.version)
            .collect();
        assert_eq!(all, (1..=top).collect::<Vec<_>>());
        let rest: Vec<i64> = plan(m, &applied(m, 1), top)
            .unwrap()
            .iter()
            .map(|m| m.version)
            .collect();
        assert_eq!(rest, (2..=top).collect::<Vec<_>>());
        assert!(plan(m, &applied(m, top), top).unwrap().is_empty());
        assert_eq!(installed(&applied(m, 1)), Some(1));
    }

    #[test]
    fn newer_altered_and_unknown_targets_are_refused() {
        let m = sqlite();
        let top = latest(m);
        let mut newer = applied(m, top);
        newer.push((top + 1, vec![0]));
        assert!(matches!(
            plan(m, &newer, top),
            Err(OwnDbError::Newer { installed, known }) if installed == top + 1 && known == top
        ));
        let mut altered = applied(m, 1);
        altered[0].1 = vec![1, 2, 3];
        assert!(matches!(
            plan(m, &altered, top),
            Err(OwnDbError::Altered { version: 1 })
        ));
        assert!(matches!(plan(m, &[], top + 1), Err(OwnDbError::Invalid(_))));
        assert!(matches!(plan(m, &[], 0), Err(OwnDbError::Invalid(_))));
    }
}
