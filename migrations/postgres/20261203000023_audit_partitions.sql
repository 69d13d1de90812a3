-- The audit, partitioned by day of `at_us` (UTC), so that retention drops a whole partition
-- instead of deleting its rows one by one: with autovacuum off, deleted rows stay as dead space
-- for ever, and a dropped partition takes its space with it. A day, not a week: a prune then
-- deletes row by row at most the part of one day its cut-off falls in (dead rows that go with
-- that partition when it is dropped a day later), while a year's retention is still a few
-- hundred partitions. The daemon creates the coming days' partitions (`store::partitions`);
-- a row for a day without one lands in `audit_default`.
--
-- The columns are copied from the table as the migrations before left it (types, defaults,
-- NOT NULL and CHECK constraints), and so are its secondary indexes, whatever they are by now.
ALTER TABLE audit RENAME TO audit_old;
CREATE TABLE audit (LIKE audit_old INCLUDING DEFAULTS INCLUDING CONSTRAINTS)
    PARTITION BY RANGE (at_us);

-- A partitioned table takes no identity column on this PostgreSQL (15): ids come from a
-- sequence default instead. It keeps the name `audit_id_seq` (the write path draws its ids with
-- nextval('audit_id_seq') and inserts them with OVERRIDING SYSTEM VALUE, which a column
-- without an identity accepts as it is) and carries on where the identity's sequence stopped.
-- It is made under another name first: the identity's own is dropped with the old table.
CREATE SEQUENCE audit_id_seq_partitioned AS BIGINT;
SELECT setval('audit_id_seq_partitioned', last_value, is_called) FROM audit_id_seq;
ALTER TABLE audit ALTER COLUMN id SET DEFAULT nextval('audit_id_seq_partitioned');

-- A partition per day that has rows, and for today and the next three days by the server's
-- clock (the daemons add theirs by their own clocks); days outside years 1970 to 9999 have
-- none, and their rows, like any for a day without a partition, go to the default one.
DO $$
DECLARE
    day_us CONSTANT BIGINT := 86400000000;
    last_day CONSTANT BIGINT := DATE '9999-12-30' - DATE '1970-01-01';
    today BIGINT := floor(extract(epoch FROM now()) / 86400)::BIGINT;
    day BIGINT;
BEGIN
    FOR day IN
        SELECT DISTINCT d FROM (
            SELECT floor(at_us / 86400000000.0)::BIGINT AS d FROM audit_old
            UNION ALL SELECT today + k FROM generate_series(0, 3) AS k
        ) AS days
        WHERE d BETWEEN 0 AND last_day
        ORDER BY d
    LOOP
        EXECUTE format(
            'CREATE TABLE %I PARTITION OF audit FOR VALUES FROM (%s) TO (%s)',
            'audit_' || to_char(DATE '1970-01-01' + day::INT, 'YYYYMMDD'),
            day * day_us,
            (day + 1) * day_us
        );
    END LOOP;
END
$$;
CREATE TABLE audit_default PARTITION OF audit DEFAULT;

-- One statement: every row routed to its day's partition.
INSERT INTO audit SELECT * FROM audit_old;

-- The old table's indexes, built again on the partitioned one (each partition gets its own),
-- once the rows are in. Its primary key is not: a unique index of a partitioned table must
-- include the partition key, and (id, at_us) would not make ids unique either (the same id at
-- another time would pass) while costing every write a wider index entry. Ids are unique
-- because the sequence is their one source; lookups by id (the live tail, `audit log`'s
-- paging) are served by a plain index on id. Privileges granted on the old table go to the new.
DO $$
DECLARE
    old_table CONSTANT TEXT := quote_ident(current_schema()) || '.audit_old';
    definitions TEXT[];
    grants TEXT[];
    definition TEXT;
    statement TEXT;
BEGIN
    SELECT array_agg(pg_get_indexdef(i.indexrelid) ORDER BY i.indexrelid)
        INTO definitions
        FROM pg_index AS i
        WHERE i.indrelid = 'audit_old'::regclass AND NOT i.indisprimary;
    SELECT array_agg(format('GRANT %s ON audit TO %s', a.privilege_type,
               CASE WHEN a.grantee = 0 THEN 'PUBLIC' ELSE quote_ident(r.rolname) END))
        INTO grants
        FROM pg_class AS c
        CROSS JOIN LATERAL aclexplode(c.relacl) AS a
        LEFT JOIN pg_roles AS r ON r.oid = a.grantee
        WHERE c.oid = 'audit_old'::regclass AND a.grantee <> c.relowner;
    -- Frees the index names, and drops the identity's sequence with it.
    DROP TABLE audit_old;
    FOREACH definition IN ARRAY coalesce(definitions, ARRAY[]::TEXT[]) LOOP
        statement := replace(definition, ' ON ' || old_table || ' USING ', ' ON audit USING ');
        IF statement = definition THEN
            RAISE EXCEPTION 'fencewatch: cannot rebuild the audit index %', definition;
        END IF;
        EXECUTE statement;
    END LOOP;
    FOREACH statement IN ARRAY coalesce(grants, ARRAY[]::TEXT[]) LOOP
        EXECUTE statement;
    END LOOP;
END
$$;
CREATE INDEX audit_by_id ON audit (id);

ALTER SEQUENCE audit_id_seq_partitioned RENAME TO audit_id_seq;
ALTER SEQUENCE audit_id_seq OWNED BY audit.id;
