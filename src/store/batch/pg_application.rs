//! The text of the statement that applies a batch on PostgreSQL (`postgres`): a part per
//! table that has rows, each run once and to completion, and the check of what they changed.

use super::pg_columns::{Columns, PgQuery};
use super::rows::{
    join_open_overlap, AuditRow, ChainHeadAdvance, ChainHeadRow, Encoded, OperationRow, OverlapRow,
    ResourceRow, ResourceUpdate,
};

/// The audit ids of the batch, `$1` of them, numbered by the rows' places in it: drawn after
/// the transaction id is taken, so that a gap the live tail sees belongs to a transaction its
/// snapshots can wait out (see `tx::begin_audited`).
const DRAW_IDS: &str = "\
      drawn AS MATERIALIZED (SELECT n, nextval('audit_id_seq') AS id \
        FROM (SELECT pg_current_xact_id() AS xid) AS xact, generate_series(1, $1::bigint) AS n \
        WHERE xact.xid IS NOT NULL)";

/// The parts of the statement that applies a batch, each run once and to completion, `{}` its
/// rows (`pg_columns`, a `FROM` item named `v`); `application` names them. A part with no rows is left out: even empty, it would
/// open and lock its table and every index of it, and with dozens of backends those locks
/// overflow each one's fast path into the shared lock table (measured: docs/performance.md).
/// One statement for every resource with a row, accepted or only audited, so that each
/// batch locks its resources in one key order.
const UPDATE_RESOURCES: &str = "\
      UPDATE resources AS r SET highest_token = v.highest_token, revision = v.revision, \
          value = CASE WHEN v.accepted THEN v.value ELSE r.value END, \
          content_type = CASE WHEN v.accepted THEN v.content_type ELSE r.content_type END, \
          updated_at_us = CASE WHEN v.accepted THEN v.updated_at_us ELSE r.updated_at_us END, \
          highest_owner = CASE WHEN v.accepted THEN v.highest_owner ELSE r.highest_owner END, \
          chain_seq = v.chain_seq, chain_hash = v.chain_hash \
        FROM {} \
        WHERE r.key = v.key AND r.revision = v.observed_revision \
          AND r.highest_token <= v.highest_token AND r.chain_seq = v.observed_chain_seq \
          AND r.chain_hash = v.observed_chain_hash \
        RETURNING 1";
const INSERT_RESOURCES: &str = "\
      INSERT INTO resources (key, highest_token, revision, value, content_type, updated_at_us, \
          highest_owner, chain_seq, chain_hash) \
        SELECT v.key, v.highest_token, v.revision, v.value, v.content_type, \
          v.updated_at_us, v.highest_owner, v.chain_seq, v.chain_hash \
        FROM {} \
        ON CONFLICT (key) DO NOTHING \
        RETURNING 1";
/// Each row takes the id drawn for its place in the batch (`n`). The digests travel as hex and
/// are stored as their bytes, decoded here by each backend rather than on the group-commit
/// thread, the write path's one serial stage.
const INSERT_AUDIT: &str = "\
      INSERT INTO audit (at_us, resource, outcome, token, highest_token, revision, \
          idempotency_key, expected_revision, owner, lease, body_sha256, body_len, detail, \
          caller, seq, prev_hash, hash, id) OVERRIDING SYSTEM VALUE \
        SELECT v.at_us, v.resource, v.outcome, v.token, v.highest_token, v.revision, \
          v.idempotency_key, v.expected_revision, v.owner, v.lease, \
          decode(v.body_sha256, 'hex'), v.body_len, v.detail, v.caller, v.seq, \
          decode(v.prev_hash, 'hex'), decode(v.hash, 'hex'), drawn.id \
        FROM {} \
          JOIN drawn ON drawn.n = v.n";
/// Audit rows outside a batch (`refused`), in a transaction that took its id first (see
/// `tx::begin_audited`): `$1` rows, then the `AuditRow`s' columns. Answers each row's id,
/// resource and seq.
pub(crate) fn insert_audit_alone() -> String {
    format!(
        "WITH {DRAW_IDS}, audited AS ({} RETURNING id, resource, seq) \
         SELECT id, resource, seq FROM audited",
        INSERT_AUDIT.replacen("{}", &AuditRow::unnest(2, Some(ORDINAL)), 1)
    )
}

/// Binds audit rows for `insert_audit_alone`.
pub(crate) fn bind_audit_alone<'q>(rows: &'q [AuditRow<'q>], query: PgQuery<'q>) -> PgQuery<'q> {
    AuditRow::bind(rows, query.bind(count_of(rows.len())))
}

/// The column holding an audit row's place in its batch.
const ORDINAL: &str = "n";
const ADVANCE_CHAINS: &str = "\
      UPDATE chain_heads AS c SET seq = v.seq, hash = v.hash \
        FROM {} \
        WHERE c.resource = v.resource AND c.seq = v.observed_seq \
        RETURNING 1";
const START_CHAINS: &str = "\
      INSERT INTO chain_heads (resource, seq, hash) \
        SELECT v.resource, v.seq, v.hash \
        FROM {} \
        ON CONFLICT (resource) DO NOTHING \
        RETURNING 1";
/// `audit_id` is the audit row's place in the batch, as in `INSERT_AUDIT`. `recorded_at_us` is
/// the database's clock, as the cut-off that prunes it is (`retention`): by the daemons' own
/// clocks, one running behind would record operations that every daemon then forgets early.
const RECORD_OPERATIONS: &str = "\
      INSERT INTO operations (resource, idempotency_key, token, body_sha256, status, revision, \
          highest_token, audit_id, recorded_at_us) \
        SELECT v.resource, v.idempotency_key, v.token, v.body_sha256, v.status, v.revision, \
          v.highest_token, drawn.id, (EXTRACT(EPOCH FROM clock_timestamp()) * 1000000)::BIGINT \
        FROM {} \
          JOIN drawn ON drawn.n = v.audit_id";
const RECORD_SIGHTINGS: &str = concat!(
    "\
      INSERT INTO ownership_overlaps AS o (resource, stale_token, superseding_token, \
          stale_owner, superseding_owner, first_seen_us, last_seen_us, rejected_writes, state, \
          updated_at_us) \
        SELECT v.resource, v.stale_token, v.superseding_token, v.stale_owner, \
          v.superseding_owner, v.first_seen_us, v.last_seen_us, v.rejected_writes, 'open', \
          v.last_seen_us \
        FROM {} ",
    join_open_overlap!()
);
/// Operations the batch names that were recorded before it, `{}` their resources and `{}` their
/// keys: a batch decided on known state assumed there were none.
const RECORDED_BEFORE: &str = "\
      SELECT count(*) FROM UNNEST({}::text[], {}::text[]) AS named (resource, key) \
        JOIN operations AS o \
        ON o.resource = named.resource AND o.idempotency_key = named.key";

/// A part of the statement that applies a batch: one table's rows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Part {
    Updated,
    Inserted,
    Advanced,
    Started,
    Audited,
    Recorded,
    Sighted,
}

impl Part {
    /// In the order they run: resources before chain heads, as every batch locks them.
    const ALL: [Part; 7] = [
        Part::Updated,
        Part::Inserted,
        Part::Advanced,
        Part::Started,
        Part::Audited,
        Part::Recorded,
        Part::Sighted,
    ];

    fn name(self) -> &'static str {
        match self {
            Part::Updated => "updated",
            Part::Inserted => "inserted",
            Part::Advanced => "advanced",
            Part::Started => "started",
            Part::Audited => "audited",
            Part::Recorded => "recorded",
            Part::Sighted => "sighted",
        }
    }

    /// Whether it must change exactly its rows: the compare-and-set.
    fn checked(self) -> bool {
        matches!(
            self,
            Part::Updated | Part::Inserted | Part::Advanced | Part::Started
        )
    }

    fn statement(self) -> &'static str {
        match self {
            Part::Updated => UPDATE_RESOURCES,
            Part::Inserted => INSERT_RESOURCES,
            Part::Advanced => ADVANCE_CHAINS,
            Part::Started => START_CHAINS,
            Part::Audited => INSERT_AUDIT,
            Part::Recorded => RECORD_OPERATIONS,
            Part::Sighted => RECORD_SIGHTINGS,
        }
    }

    fn rows(self, rows: &Encoded<'_>) -> usize {
        match self {
            Part::Updated => rows.updates.len(),
            Part::Inserted => rows.inserts.len(),
            Part::Advanced => rows.head_advances.len(),
            Part::Started => rows.head_starts.len(),
            Part::Audited => rows.audit.len(),
            Part::Recorded => rows.operations.len(),
            Part::Sighted => rows.sightings.len(),
        }
    }

    /// Its rows as a `FROM` item whose columns start at parameter `$first`, and how many
    /// parameters they take.
    fn source(self, first: usize) -> (String, usize) {
        fn of<'r, R: Columns<'r>>(first: usize, ordinal: Option<&str>) -> (String, usize) {
            (R::unnest(first, ordinal), R::COLUMNS.len())
        }
        match self {
            Part::Updated => of::<ResourceUpdate>(first, None),
            Part::Inserted => of::<ResourceRow>(first, None),
            Part::Advanced => of::<ChainHeadAdvance>(first, None),
            Part::Started => of::<ChainHeadRow>(first, None),
            Part::Audited => of::<AuditRow>(first, Some(ORDINAL)),
            Part::Recorded => of::<OperationRow>(first, None),
            Part::Sighted => of::<OverlapRow>(first, None),
        }
    }

    pub(super) fn bind<'q>(self, rows: &'q Encoded<'q>, query: PgQuery<'q>) -> PgQuery<'q> {
        match self {
            Part::Updated => ResourceUpdate::bind(&rows.updates, query),
            Part::Inserted => ResourceRow::bind(&rows.inserts, query),
            Part::Advanced => ChainHeadAdvance::bind(&rows.head_advances, query),
            Part::Started => ChainHeadRow::bind(&rows.head_starts, query),
            Part::Audited => AuditRow::bind(&rows.audit, query),
            Part::Recorded => OperationRow::bind(&rows.operations, query),
            Part::Sighted => OverlapRow::bind(&rows.sightings, query),
        }
    }
}

/// The statement applying `rows`, and the parts it binds, in order. Its parameters: `$1` the
/// number of audit rows, `$2` to `$5` how many resources it must update and insert and chains
/// it must advance and start, then the columns of each part that has rows, in turn, and last,
/// when the batch was decided on known state (`must_be_unrecorded`), the operations it names
/// (their resources, then their keys). It answers the audit ids in order, or fails with
/// `fencewatch_batch_checked`'s error. The counts are read in that order, and reading a part
/// runs it: so a batch locks its resources before its chain heads, and each part takes its
/// rows in key order, as every batch does.
pub(super) fn application(rows: &Encoded<'_>, must_be_unrecorded: bool) -> (String, Vec<Part>) {
    const FIRST_PART_PARAMETER: usize = 6;
    let mut next = FIRST_PART_PARAMETER;
    let mut ctes = vec![DRAW_IDS.to_owned()];
    let mut bound = Vec::with_capacity(Part::ALL.len());
    let mut counts = Vec::new();
    for part in Part::ALL {
        let (name, present) = (part.name(), part.rows(rows) > 0);
        if present {
            let (source, parameters) = part.source(next);
            next += parameters;
            bound.push(part);
            let statement = part.statement().replacen("{}", &source, 1);
            ctes.push(format!("{name} AS ( {statement})"));
        }
        if part.checked() {
            counts.push(match present {
                true => format!("(SELECT count(*) FROM {name}) AS {name}"),
                false => format!("0::bigint AS {name}"),
            });
        }
    }
    let unrecorded = match must_be_unrecorded {
        true => {
            let recorded = RECORDED_BEFORE
                .replacen("{}", &format!("${next}"), 1)
                .replacen("{}", &format!("${}", next + 1), 1);
            format!("({recorded}) = 0")
        }
        false => "true".to_owned(),
    };
    let sql = format!(
        "WITH {}, counts AS MATERIALIZED (SELECT {}) \
         SELECT fencewatch_batch_checked(updated = $2 AND inserted = $3 AND advanced = $4 \
           AND started = $5 AND {unrecorded}, \
           (SELECT COALESCE(array_agg(id ORDER BY n), '{{}}') FROM drawn)) AS ids FROM counts",
        ctes.join(", "),
        counts.join(", ")
    );
    (sql, bound)
}

pub(super) fn count_of(rows: usize) -> i64 {
    i64::try_from(rows).unwrap_or(i64::MAX)
}

#[cfg(test)]
mod tests {
    use super::super::rows::tests::test_encoded;
    use super::*;

    #[test]
    fn parts_without_rows_are_left_out_and_their_columns_follow_in_order() {
        let rows = test_encoded(0, 1, 1, 0);
        let (sql, parts) = application(&rows, false);
        assert_eq!(parts, [Part::Advanced, Part::Audited, Part::Sighted]);
        for absent in [
            "updated AS (",
            "inserted AS (",
            "started AS (",
            "recorded AS (",
        ] {
            assert!(!sql.contains(absent), "{absent} in {sql}");
        }
        // The ids are drawn first, then the parts, their columns after the five counts: chain
        // heads' four from $6, the audit's seventeen from $10, the sightings' eight from $27.
        assert!(sql.starts_with("WITH drawn AS MATERIALIZED ("), "{sql}");
        assert!(
            sql.contains(
                "), advanced AS ( UPDATE chain_heads AS c SET seq = v.seq, hash = v.hash \
                 FROM UNNEST($6::text[], $7::bigint[], $8::text[], $9::bigint[]) \
                 AS v (resource, seq, hash, observed_seq) WHERE"
            ),
            "{sql}"
        );
        assert!(
            sql.contains("FROM UNNEST($10::bigint[], $11::text[], $12::text[], $13::bigint[]"),
            "{sql}"
        );
        assert!(
            sql.contains("$26::text[]) WITH ORDINALITY AS v (at_us, resource,"),
            "{sql}"
        );
        assert!(
            sql.contains("FROM UNNEST($27::text[], $28::bigint[]"),
            "{sql}"
        );
        assert!(
            sql.contains(
                "$34::bigint[]) AS v (resource, stale_token, superseding_token, \
                 stale_owner, superseding_owner, first_seen_us, last_seen_us, rejected_writes) \
                 ON CONFLICT"
            ),
            "{sql}"
        );
        assert!(!sql.contains("$35"), "{sql}");
        assert!(
            sql.contains(
                "counts AS MATERIALIZED (SELECT 0::bigint AS updated, 0::bigint AS inserted, \
                 (SELECT count(*) FROM advanced) AS advanced, 0::bigint AS started)"
            ),
            "{sql}"
        );
        assert!(sql.contains("AND started = $5 AND true,"), "{sql}");

        let rows = test_encoded(3, 0, 0, 2);
        let (sql, parts) = application(&rows, true);
        assert_eq!(parts, [Part::Updated, Part::Started, Part::Audited]);
        assert!(
            sql.contains("), updated AS ( UPDATE resources AS r SET"),
            "{sql}"
        );
        assert!(
            sql.contains(
                "counts AS MATERIALIZED (SELECT (SELECT count(*) FROM updated) AS updated, \
                 0::bigint AS inserted, 0::bigint AS advanced, \
                 (SELECT count(*) FROM started) AS started)"
            ),
            "{sql}"
        );
        // The operations named must not have been recorded before: the last two parameters,
        // after the updates' thirteen columns, the starts' three and the audit's seventeen.
        assert!(
            sql.contains("FROM UNNEST($39::text[], $40::text[]) AS named (resource, key)"),
            "{sql}"
        );
        assert!(!sql.contains("$41"), "{sql}");
    }
}
