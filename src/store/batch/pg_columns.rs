//! A batch's rows as PostgreSQL takes them natively: one typed array per column, bound in the
//! binary protocol and turned back into rows by `UNNEST` in the statement. No text to parse on
//! either side, and the statement's text depends only on which steps have rows, so it stays
//! prepared whatever the batch's size.

use super::rows::{
    AuditRow, ChainHeadAdvance, ChainHeadRow, OperationRow, OverlapRow, ResourceRow, ResourceUpdate,
};
use sqlx::postgres::{PgArguments, Postgres};
use sqlx::query::Query;

pub(crate) type PgQuery<'q> = Query<'q, Postgres, PgArguments>;

/// A row type whose rows are bound column by column.
pub(crate) trait Columns<'r>: Sized {
    /// Each column's name and PostgreSQL type, in the order `bind` binds them.
    const COLUMNS: &'static [(&'static str, &'static str)];

    /// Binds one array per column, in the order of `COLUMNS`.
    fn bind(rows: &[Self], query: PgQuery<'r>) -> PgQuery<'r>;

    /// The rows as a `FROM` item named `v`, from parameter `$first` on: `UNNEST($first::text[],
    /// …) AS v (key, …)`. With `ordinal`, a last column of that name holds each row's place in
    /// the batch, from 1.
    fn unnest(first: usize, ordinal: Option<&str>) -> String {
        let arrays: Vec<String> = (first..)
            .zip(Self::COLUMNS)
            .map(|(parameter, (_, sql_type))| format!("${parameter}::{sql_type}[]"))
            .collect();
        let mut names: Vec<&str> = Self::COLUMNS.iter().map(|(name, _)| *name).collect();
        names.extend(ordinal);
        let ordinality = match ordinal {
            Some(_) => " WITH ORDINALITY",
            None => "",
        };
        format!(
            "UNNEST({}){ordinality} AS v ({})",
            arrays.join(", "),
            names.join(", ")
        )
    }
}

/// Implements `Columns` for a row type from its fields and their PostgreSQL types; every field
/// named is `Copy` (numbers, flags, borrowed text and bytes).
macro_rules! columns {
    ($row:ident { $($field:ident: $sql_type:literal),+ $(,)? }) => {
        impl<'r> Columns<'r> for $row<'r> {
            const COLUMNS: &'static [(&'static str, &'static str)] =
                &[$((stringify!($field), $sql_type)),+];

            fn bind(rows: &[Self], query: PgQuery<'r>) -> PgQuery<'r> {
                query$(.bind(rows.iter().map(|row| row.$field).collect::<Vec<_>>()))+
            }
        }
    };
}

columns!(ResourceUpdate {
    key: "text",
    accepted: "boolean",
    highest_token: "bigint",
    revision: "bigint",
    value: "bytea",
    content_type: "text",
    updated_at_us: "bigint",
    highest_owner: "text",
    chain_seq: "bigint",
    chain_hash: "text",
    observed_revision: "bigint",
    observed_chain_seq: "bigint",
    observed_chain_hash: "text",
});

columns!(ResourceRow {
    key: "text",
    highest_token: "bigint",
    revision: "bigint",
    value: "bytea",
    content_type: "text",
    updated_at_us: "bigint",
    highest_owner: "text",
    chain_seq: "bigint",
    chain_hash: "text",
});

columns!(ChainHeadAdvance {
    resource: "text",
    seq: "bigint",
    hash: "text",
    observed_seq: "bigint",
});

columns!(ChainHeadRow {
    resource: "text",
    seq: "bigint",
    hash: "text",
});

// Without `id`: PostgreSQL's statements draw the ids and give each row the one drawn for its
// place (`WITH ORDINALITY`).
columns!(AuditRow {
    at_us: "bigint",
    resource: "text",
    outcome: "text",
    token: "bigint",
    highest_token: "bigint",
    revision: "bigint",
    idempotency_key: "text",
    expected_revision: "bigint",
    owner: "text",
    lease: "text",
    body_sha256: "text",
    body_len: "bigint",
    detail: "text",
    caller: "text",
    seq: "bigint",
    prev_hash: "text",
    hash: "text",
});

// Without `recorded_at_us`: PostgreSQL records its own clock (`postgres::RECORD_OPERATIONS`).
columns!(OperationRow {
    resource: "text",
    idempotency_key: "text",
    token: "bigint",
    body_sha256: "text",
    status: "bigint",
    revision: "bigint",
    highest_token: "bigint",
    audit_id: "bigint",
});

columns!(OverlapRow {
    resource: "text",
    stale_token: "bigint",
    superseding_token: "bigint",
    stale_owner: "text",
    superseding_owner: "text",
    first_seen_us: "bigint",
    last_seen_us: "bigint",
    rejected_writes: "bigint",
});

/// The operations a batch names, as two arrays (resources, keys) for `UNNEST`.
pub(super) fn named_operations<'w>(named: &[(&'w str, &'w str)]) -> (Vec<&'w str>, Vec<&'w str>) {
    named.iter().copied().unzip()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_row_type_unnests_from_its_first_parameter_with_its_place_last() {
        assert_eq!(
            ChainHeadRow::unnest(7, None),
            "UNNEST($7::text[], $8::bigint[], $9::text[]) AS v (resource, seq, hash)"
        );
        let audit = AuditRow::unnest(2, Some("n"));
        assert!(
            audit.starts_with("UNNEST($2::bigint[], $3::text[], $4::text[], "),
            "{audit}"
        );
        assert!(
            audit.ends_with(
                ") WITH ORDINALITY AS v (at_us, resource, outcome, token, \
                 highest_token, revision, idempotency_key, expected_revision, owner, lease, \
                 body_sha256, body_len, detail, caller, seq, prev_hash, hash, n)"
            ),
            "{audit}"
        );
        assert!(
            audit.contains("$18::text[]") && !audit.contains("$19"),
            "{audit}"
        );
    }
}
