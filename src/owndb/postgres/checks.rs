//! What the fence's PostgreSQL side checks of what it is asked: the schema names it takes, and
//! which of the database's errors are about the request rather than the database.

use crate::owndb::OwnDbError;

/// A schema name as `--schema` takes one: lowercase letters, digits and `_`, not starting with
/// a digit, short enough that `<schema>_loopback` is still a name PostgreSQL keeps whole.
pub(super) fn check_schema_name(schema: &str) -> Result<(), OwnDbError> {
    let fits = !schema.is_empty()
        && schema.len() <= 48
        && !schema.starts_with(|c: char| c.is_ascii_digit())
        && !schema.starts_with("pg_")
        && schema
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_');
    match fits {
        true => Ok(()),
        false => Err(OwnDbError::Invalid(format!(
            "--schema {schema:?}: use lowercase letters, digits and _ (at most 48, not starting \
             with a digit or pg_)"
        ))),
    }
}

/// An error of protect's or unprotect's SQL that is about what was asked (a missing table or
/// column, a refused value), as a message for the user; anything else stays a database error.
pub(super) fn request_error(error: sqlx::Error, table: &str) -> OwnDbError {
    if let sqlx::Error::Database(db) = &error {
        match db.code().as_deref() {
            Some("FW400") => {
                let message = db.message();
                return OwnDbError::Invalid(
                    message
                        .strip_prefix("FW400: ")
                        .unwrap_or(message)
                        .to_owned(),
                );
            }
            Some("42P01") | Some("3F000") => {
                return OwnDbError::Invalid(format!("no table {table} in this database"))
            }
            Some("42602") | Some("42601") => {
                return OwnDbError::Invalid(format!("{table:?} is not a table name"))
            }
            Some("42501") => {
                return OwnDbError::Invalid(format!("not allowed on {table}: {}", db.message()))
            }
            _ => {}
        }
    }
    OwnDbError::Database(error)
}

/// `--lease-schema`: any name PostgreSQL takes (it is quoted where used).
pub(super) fn check_lease_schema(schema: &str) -> Result<&str, OwnDbError> {
    match !schema.is_empty() && schema.len() <= 63 && !schema.contains('\0') {
        true => Ok(schema),
        false => Err(OwnDbError::Invalid(format!(
            "--lease-schema {schema:?} is not a schema name"
        ))),
    }
}
