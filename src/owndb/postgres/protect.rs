//! protect and unprotect: a table named by the user, looked up on the user's search path by
//! casts only (the sessions' own path is pg_catalog's, `SESSION_SEARCH_PATH`), and the
//! protected tables read back under the names that path shows.

use super::super::{
    Generation, OwnDbError, ProtectSpec, ProtectedTable, ScopeSource, UnprotectOutcome,
};
use super::checks::request_error;
use super::{PgFence, SESSION_SEARCH_PATH};
use sqlx::postgres::types::Oid;
use sqlx::PgConnection;

impl PgFence {
    /// Sets the search path for the rest of the caller's transaction: the user's, or the
    /// session's own.
    async fn use_search_path(&self, tx: &mut PgConnection, users: bool) -> Result<(), OwnDbError> {
        sqlx::query("SELECT pg_catalog.set_config('search_path', $1, true)")
            .bind(match users {
                true => self.user_search_path.as_str(),
                false => SESSION_SEARCH_PATH,
            })
            .execute(&mut *tx)
            .await?;
        Ok(())
    }

    /// The table `name` names on the user's search path, by oid, in the caller's transaction.
    /// Only casts run while that path is in force (a cast's function is fixed by its types, not
    /// looked up on the path), and the session's own path is back before anything else runs.
    async fn resolve_table(&self, tx: &mut PgConnection, name: &str) -> Result<Oid, OwnDbError> {
        // In a savepoint: a name that finds no table fails its statement, and rolling the
        // savepoint back also puts the session's path back.
        let mut lookup = sqlx::Connection::begin(&mut *tx).await?;
        self.use_search_path(&mut lookup, true).await?;
        let resolved = sqlx::query_scalar("SELECT $1::text::regclass::oid")
            .bind(name)
            .fetch_one(&mut *lookup)
            .await;
        match resolved {
            Ok(oid) => {
                self.use_search_path(&mut lookup, false).await?;
                lookup.commit().await?;
                Ok(oid)
            }
            Err(error) => {
                lookup.rollback().await?;
                Err(request_error(error, name))
            }
        }
    }

    /// Table `oid`'s name as the user's search path shows it (`orders`, or `billing.orders`
    /// where `billing` is not on it), read the same way as [`Self::resolve_table`] reads one.
    async fn display_name(&self, tx: &mut PgConnection, oid: Oid) -> Result<String, OwnDbError> {
        self.use_search_path(tx, true).await?;
        let name = sqlx::query_scalar("SELECT $1::oid::regclass::text")
            .bind(oid)
            .fetch_one(&mut *tx)
            .await;
        self.use_search_path(tx, false).await?;
        Ok(name?)
    }

    pub(in crate::owndb) async fn protect(
        &self,
        spec: &ProtectSpec,
    ) -> Result<ProtectedTable, OwnDbError> {
        let mut tx = self.pool.begin().await?;
        self.require_current(&mut tx).await?;
        let table = self.resolve_table(&mut tx, &spec.table).await?;
        let in_fence: bool = sqlx::query_scalar(
            "SELECT c.relnamespace = $2::text::regnamespace FROM pg_class c WHERE c.oid = $1",
        )
        .bind(table)
        .bind(&self.schema)
        .fetch_one(&mut *tx)
        .await?;
        if in_fence {
            return Err(OwnDbError::Invalid(format!(
                "{} is one of the fence's own tables; protect your tables, not the fence",
                spec.table
            )));
        }
        if let Some(lease) = &spec.lease {
            let lease_schema = self
                .settings(&mut tx)
                .await?
                .remove("lease_schema")
                .unwrap_or_else(|| "public".into());
            let found: bool =
                sqlx::query_scalar("SELECT to_regclass(format('%I.leases', $1::text)) IS NOT NULL")
                    .bind(&lease_schema)
                    .fetch_one(&mut *tx)
                    .await?;
            if !found {
                return Err(OwnDbError::Invalid(format!(
                    "--lease {lease} needs the leases table of a fencewatch daemon whose store is \
                     this database, in schema {lease_schema}: there is none (start `fencewatch \
                     serve` on this database once, or install with --lease-schema)"
                )));
            }
        }
        let (scope_column, scope) = match &spec.scope {
            ScopeSource::Column(column) => (Some(column.as_str()), None),
            ScopeSource::Fixed(scope) => (None, Some(scope.as_str())),
        };
        sqlx::query(&format!(
            "SELECT {}.protect($1::oid::regclass, $2, $3, $4, $5, $6, $7, $8)",
            self.ident()
        ))
        .bind(table)
        .bind(&spec.token_column)
        .bind(scope_column)
        .bind(scope)
        .bind(spec.op_column.as_deref())
        .bind(spec.owner_column.as_deref())
        .bind(spec.lease.as_deref())
        .bind(spec.generation.unwrap_or(Generation::Stated).as_str())
        .execute(&mut *tx)
        .await
        .map_err(|e| request_error(e, &spec.table))?;
        let protected = self
            .protected_tables(&mut tx, Some(table))
            .await?
            .into_iter()
            .next()
            .ok_or_else(|| OwnDbError::Invalid(format!("{} was not protected", spec.table)))?;
        tx.commit().await?;
        Ok(protected)
    }

    pub(in crate::owndb) async fn unprotect(
        &self,
        table: &str,
    ) -> Result<UnprotectOutcome, OwnDbError> {
        let mut tx = self.pool.begin().await?;
        self.require_current(&mut tx).await?;
        let removed: bool = match self.resolve_table(&mut tx, table).await {
            Ok(oid) => sqlx::query_scalar(&format!(
                "SELECT {}.unprotect($1::oid::regclass)",
                self.ident()
            ))
            .bind(oid)
            .fetch_one(&mut *tx)
            .await
            .map_err(|e| request_error(e, table))?,
            // No such table now: the record of one of that name, protected and dropped since.
            Err(OwnDbError::Invalid(missing)) => match self.dropped_named(&mut tx, table).await? {
                Some(recorded) => {
                    sqlx::query_scalar(&format!("SELECT {}.unprotect_dropped($1)", self.ident()))
                        .bind(recorded)
                        .fetch_one(&mut *tx)
                        .await?
                }
                None => return Err(OwnDbError::Invalid(missing)),
            },
            Err(other) => return Err(other),
        };
        tx.commit().await?;
        Ok(match removed {
            true => UnprotectOutcome::Unprotected,
            false => UnprotectOutcome::WasNotProtected,
        })
    }

    /// The name (as protect recorded it) of the dropped protected table `name` names: its
    /// schema-qualified name, or its name alone when one such table has it.
    async fn dropped_named(
        &self,
        tx: &mut PgConnection,
        name: &str,
    ) -> Result<Option<String>, OwnDbError> {
        let names: Vec<String> = sqlx::query_scalar(&format!(
            "SELECT DISTINCT p.table_text FROM {}.protected p \
              WHERE (p.table_text = $1 OR right(p.table_text, length($1) + 1) = '.' || $1) \
                AND NOT EXISTS (SELECT 1 FROM pg_class c WHERE c.oid = p.table_name)",
            self.ident()
        ))
        .bind(name)
        .fetch_all(&mut *tx)
        .await?;
        match names.len() {
            0 | 1 => Ok(names.into_iter().next()),
            _ => Err(OwnDbError::Invalid(format!(
                "{name} names more than one dropped protected table ({}): give the schema too",
                names.join(", ")
            ))),
        }
    }

    /// The protected tables, or the one `only` is, named as the user's search path shows them.
    pub(super) async fn protected_tables(
        &self,
        conn: &mut PgConnection,
        only: Option<Oid>,
    ) -> Result<Vec<ProtectedTable>, OwnDbError> {
        type Row = (
            Oid,
            Option<String>,
            String,
            Option<String>,
            Option<String>,
            Option<String>,
            Option<String>,
            Option<String>,
            String,
        );
        let rows: Vec<Row> = sqlx::query_as(&format!(
            "SELECT p.table_name::oid, \
                    CASE WHEN NOT EXISTS (SELECT 1 FROM pg_class c WHERE c.oid = p.table_name) \
                         THEN coalesce(to_jsonb(p) ->> 'table_text', '?') END, \
                    p.token_column, p.scope_column, p.scope, p.op_column, p.owner_column, p.lease, \
                    coalesce(to_jsonb(p) ->> 'generation', 'row') \
               FROM {}.protected p \
              WHERE $1::oid IS NULL OR p.table_name = $1::oid",
            self.ident()
        ))
        .bind(only)
        .fetch_all(&mut *conn)
        .await?;
        let mut tx = sqlx::Connection::begin(&mut *conn).await?;
        let mut tables = Vec::with_capacity(rows.len());
        for (
            oid,
            dropped,
            token_column,
            scope_column,
            scope,
            op_column,
            owner_column,
            lease,
            generation,
        ) in rows
        {
            let table = match dropped {
                None => self.display_name(&mut tx, oid).await?,
                Some(name) => format!("{name} (dropped, oid {})", oid.0),
            };
            tables.push(ProtectedTable {
                table,
                token_column,
                scope_column,
                scope,
                op_column,
                owner_column,
                lease,
                generation: Generation::parse(&generation).unwrap_or(Generation::Row),
            });
        }
        tx.commit().await?;
        tables.sort_by(|a, b| a.table.cmp(&b.table));
        Ok(tables)
    }
}
