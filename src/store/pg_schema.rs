//! `serve --schema NAME`: the PostgreSQL schema that holds the daemon's tables, so that a
//! database shared with an application keeps them apart from its own `resources` or `audit`.

use std::fmt;
use std::str::FromStr;

/// A schema name PostgreSQL takes as written: lowercase letters, digits and `_`, not starting
/// with a digit, at most 63 bytes (longer names are cut short by the server, silently).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PgSchema(String);

#[derive(Debug, thiserror::Error, PartialEq, Eq)]
#[error(
    "{0:?} is not a schema name fencewatch uses: lowercase letters, digits and _, \
     not starting with a digit, at most 63 characters"
)]
pub struct InvalidSchema(String);

impl FromStr for PgSchema {
    type Err = InvalidSchema;

    fn from_str(name: &str) -> Result<Self, Self::Err> {
        let valid = !name.is_empty()
            && name.len() <= 63
            && !name.starts_with(|c: char| c.is_ascii_digit())
            && name
                .chars()
                .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_');
        match valid {
            true => Ok(PgSchema(name.to_owned())),
            false => Err(InvalidSchema(name.to_owned())),
        }
    }
}

impl PgSchema {
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// The statement every session runs first, so that unqualified names (every query and
    /// migration, and sqlx's `_sqlx_migrations`) resolve in this schema alone.
    pub(super) fn search_path(&self) -> String {
        format!("SET search_path TO \"{}\"", self.0)
    }

    pub(super) fn create(&self) -> String {
        format!("CREATE SCHEMA IF NOT EXISTS \"{}\"", self.0)
    }
}

impl fmt::Display for PgSchema {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_names_postgres_takes_as_written_are_accepted() {
        for name in ["fw", "fencewatch_prod", "_x", "a1"] {
            assert_eq!(name.parse::<PgSchema>().unwrap().as_str(), name);
        }
        let too_long = "a".repeat(64);
        for name in ["", "Fw", "1fw", "fw-prod", "fw\"; DROP", "fw.x", &too_long] {
            assert!(name.parse::<PgSchema>().is_err(), "{name:?}");
        }
    }

    #[test]
    fn statements_name_the_schema() {
        let schema: PgSchema = "fw".parse().unwrap();
        assert_eq!(schema.search_path(), "SET search_path TO \"fw\"");
        assert_eq!(schema.create(), "CREATE SCHEMA IF NOT EXISTS \"fw\"");
    }
}
