-- The fence, version 3: nothing of the application's runs with the fence owner's rights, and no
-- ordinary statement gets a stale write past it (docs/own-database.md, "Privileges" and
-- "Threat model").
--
-- - A protected table's trigger function (SECURITY DEFINER) reads the row's columns without
--   calling anything the table's owner can define: a column whose type is still the built-in
--   one protect() saw is cast to text (only a superuser can define a cast between built-in
--   types); any other value is read through its type's output function, and every type a role
--   without superuser can create (enum, composite, domain, range) prints through a built-in
--   one. The token column is read only while it is smallint, integer or bigint.
-- - An UPDATE that moves a row to another scope is judged on both scopes (settle_move()).
-- - No protected table may have a BEFORE ROW trigger that fires after the fence's (it could
--   change a row after the fence judged it) or an inheritance child (whose rows an UPDATE of
--   the table reaches without the fence): protect() refuses such a table, and the DDL that
--   would make one is refused by an event trigger (ddl_guard(), created by install where the
--   installer may: a superuser), so writes pay nothing for it. Where there is no event trigger,
--   a statement trigger checks the same before every statement (precheck()).
-- - The daemon's `leases` table is read only once it is locked and known to be a plain table
--   with the daemon's column types and no row security (lease_table_problem()).
-- - A refusal's loopback session is opened for that refusal alone and closed by dblink before
--   it returns, and only through a dblink that no one but its owner may execute
--   (loopback_problem()).
-- - reset() is the audited way back from a runaway token.
-- - The loopback proves it reaches the very database the refusal was made in (a restored or
--   renamed copy's loopback still names the original), and each protected table's name is
--   kept, so that a table dropped and replaced (an online schema change) is named.

ALTER TABLE protected ADD COLUMN check_trigger text;
-- Where a protected write's generation comes from: 'stated' (the transaction's, from begin(),
-- or the token column the statement sets; an UPDATE that states neither is refused) or 'row'
-- (the row's token column as the statement leaves it: v2's, kept for tables protected
-- before). And the statement triggers of each: the one that notes an UPDATE naming the token
-- column, and the one that records the statement's refusals.
ALTER TABLE protected ADD COLUMN generation text NOT NULL DEFAULT 'row'
    CHECK (generation IN ('row', 'stated'));
ALTER TABLE protected ADD COLUMN marker_trigger text;
ALTER TABLE protected ADD COLUMN flush_trigger text;

-- Refusals of protected writes noted during a statement, in the writer's transaction, until
-- the statement's end records them in a session of its own (record_noted()). Only the fence's
-- functions write it: what is recorded is what the fence decided. Unlogged: it only ever holds
-- rows of statements in progress.
CREATE UNLOGGED TABLE refusals_noted (
    id               bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    at               timestamptz NOT NULL,
    resource         text   NOT NULL,
    outcome          text   NOT NULL,
    token            bigint,
    highest_token    bigint NOT NULL,
    idempotency_key  text,
    owner            text,
    lease            text,
    detail           text,
    table_name       text
);

-- Transactions begun for maintenance (begin_maintenance()): their protected writes are applied
-- without a generation and audited as maintenance.
CREATE TABLE maintenance (
    xact    xid8 PRIMARY KEY,
    role    text NOT NULL,
    reason  text NOT NULL,
    at      timestamptz NOT NULL
);
-- The table's schema-qualified name when it was protected: what status names when the table is
-- gone, and what protect and unprotect match a table of that name against.
ALTER TABLE protected ADD COLUMN table_text text;

-- This database on this running server: its oid and the server's start. A copy of the
-- database (restored, renamed, on another server) has another.
CREATE FUNCTION database_identity() RETURNS text LANGUAGE sql STABLE
AS $$
    SELECT d.oid::text || '@'
           || pg_catalog.date_part('epoch', pg_catalog.pg_postmaster_start_time())::text
      FROM pg_catalog.pg_database d WHERE d.datname = pg_catalog.current_database()
$$;

-- In the loopback session: fails (so nothing is recorded) unless it is connected to the
-- database whose identity the caller passed. 0 when it is.
CREATE FUNCTION require_identity(p_identity text) RETURNS bigint LANGUAGE plpgsql
AS $$
BEGIN
    IF @schema@.database_identity() IS DISTINCT FROM p_identity THEN
        RAISE EXCEPTION 'the loopback reaches database %, not the one the refusal was made in '
                        '(a restored or renamed copy?): run fencewatch fence install there to '
                        'repair it', pg_catalog.current_database();
    END IF;
    RETURN 0;
END
$$;

-- refuse(), run by the loopback session only once require_identity() holds.
CREATE FUNCTION refuse_in(p_identity text, p_caller_head bigint, p_scope text, p_token bigint,
                          p_op_id text, p_owner text, p_lease text, p_table text,
                          p_outcome text, p_highest bigint, p_detail text, OUT outcome text,
                          OUT detail text, OUT row_id bigint, OUT deferred boolean)
LANGUAGE plpgsql
AS $$
DECLARE
    r record;
BEGIN
    PERFORM @schema@.require_identity(p_identity);
    r := @schema@.refuse(p_caller_head, p_scope, p_token, p_op_id, p_owner, p_lease, p_table,
                         p_outcome, p_highest, p_detail);
    outcome := r.outcome;
    detail := r.detail;
    row_id := r.row_id;
    deferred := r.deferred;
END
$$;

-- Why the loopback must not go through the dblink in `p_schema`: roles other than its owner,
-- the fence's owner and superusers may execute its functions (and so open, or pre-open under
-- the name the fence uses, connections of their own in a session the fence's loopback runs
-- in). NULL when none may.
CREATE FUNCTION loopback_problem(p_schema text) RETURNS text LANGUAGE sql STABLE
AS $$
    SELECT pg_catalog.format(
        'dblink (in schema %s) may be executed by %s: a refusal''s loopback through it could be '
        'borrowed. REVOKE EXECUTE on each of dblink''s functions FROM them (or DROP EXTENSION '
        'dblink, and install creates its own in the fence''s schema), then run '
        '`fencewatch fence install` again', p_schema,
        pg_catalog.string_agg(DISTINCT CASE WHEN a.grantee = 0 THEN 'PUBLIC'
                                            ELSE a.grantee::regrole::text END, ', '))
      FROM pg_catalog.pg_proc p
      JOIN pg_catalog.pg_depend d
        ON d.classid = 'pg_catalog.pg_proc'::regclass AND d.objid = p.oid AND d.deptype = 'e'
      JOIN pg_catalog.pg_extension e ON e.oid = d.refobjid AND e.extname = 'dblink'
     CROSS JOIN LATERAL pg_catalog.aclexplode(
           coalesce(p.proacl, pg_catalog.acldefault('f', p.proowner))) a
     WHERE a.privilege_type = 'EXECUTE'
       AND a.grantee <> p.proowner
       AND a.grantee <> (SELECT r.oid FROM pg_catalog.pg_roles r WHERE r.rolname = current_user)
       AND NOT coalesce((SELECT r.rolsuper FROM pg_catalog.pg_roles r WHERE r.oid = a.grantee),
                        false)
    HAVING pg_catalog.count(*) > 0
$$;

-- Why the relation `rel` is not one the lease check may read as the fence's owner: anything but
-- a plain table (a view's functions run as the reader), row security (its policies would), or
-- columns that are not the daemon's built-in types (a type of the owner's could bring an
-- implicit cast into the comparison). NULL when it is the daemon's table as it made it.
CREATE FUNCTION lease_table_problem(rel regclass) RETURNS text LANGUAGE sql STABLE
AS $$
    SELECT CASE
        WHEN c.relkind <> 'r' THEN
            pg_catalog.format('%s is not a table (relkind %s): the lease check reads only the '
                              'fencewatch daemon''s leases table', rel, c.relkind)
        WHEN c.relrowsecurity THEN
            pg_catalog.format('%s has row security enabled: the lease check does not read a '
                              'leases table whose policies could run as the fence''s owner', rel)
        WHEN (SELECT pg_catalog.count(*) FROM pg_catalog.pg_attribute a
               WHERE a.attrelid = rel AND a.attnum > 0 AND NOT a.attisdropped
                 AND ((a.attname = 'name' AND a.atttypid = 'pg_catalog.text'::regtype)
                      OR (a.attname IN ('token', 'expires_at_us', 'released_at_us')
                          AND a.atttypid = 'pg_catalog.int8'::regtype))) <> 4 THEN
            pg_catalog.format('%s does not have the fencewatch daemon''s leases columns (name '
                              'text; token, expires_at_us, released_at_us bigint)', rel)
        END
      FROM pg_catalog.pg_class c WHERE c.oid = rel
$$;

CREATE OR REPLACE FUNCTION decide(p_highest bigint, p_scope text, p_token bigint, p_op_id text,
                                  p_lease text, OUT outcome text, OUT detail text)
LANGUAGE plpgsql
AS $$
DECLARE
    recorded_token bigint;
    lease_token    bigint;
    lease_expires  bigint;
    lease_released bigint;
    lease_schema   text;
    lease_table    regclass;
BEGIN
    IF p_token IS NULL OR p_token < 1 THEN
        outcome := 'invalid';
        detail := pg_catalog.format('the token must be a positive generation, not %s',
                                    coalesce(p_token::text, 'NULL'));
        RETURN;
    END IF;
    IF p_op_id IS NOT NULL THEN
        SELECT o.token INTO recorded_token FROM @schema@.operations o
         WHERE o.scope = p_scope AND o.op_id = p_op_id
           AND o.applied_at > pg_catalog.clock_timestamp()
               - (SELECT s.value FROM @schema@.settings s
                   WHERE s.name = 'operation_retention')::interval;
        IF FOUND AND recorded_token = p_token THEN
            outcome := 'replayed';
            detail := pg_catalog.format('operation %s was applied under generation %s', p_op_id,
                                        p_token);
            RETURN;
        END IF;
    END IF;
    IF p_lease IS NOT NULL THEN
        SELECT s.value INTO lease_schema FROM @schema@.settings s WHERE s.name = 'lease_schema';
        BEGIN
            -- Locked before it is looked at: what lease_table_problem() checks is then what is
            -- read (its definition cannot change, nor another relation take its name, until
            -- this transaction ends).
            EXECUTE pg_catalog.format('LOCK TABLE %I.leases IN ACCESS SHARE MODE', lease_schema);
        EXCEPTION WHEN undefined_table OR invalid_schema_name THEN
            outcome := 'invalid';
            detail := pg_catalog.format('no fencewatch leases table in schema %s of this database',
                                        lease_schema);
            RETURN;
        END;
        lease_table := pg_catalog.to_regclass(pg_catalog.format('%I.leases', lease_schema));
        detail := @schema@.lease_table_problem(lease_table);
        IF detail IS NOT NULL THEN
            outcome := 'invalid';
            RETURN;
        END IF;
        -- FOR SHARE: the daemon cannot issue a newer generation of the lease until this
        -- transaction ends, so what is decided here stays true to its commit. ONLY: no child
        -- table's rows (or policies) come into it.
        EXECUTE pg_catalog.format('SELECT l.token, l.expires_at_us, l.released_at_us '
                                  'FROM ONLY %s l WHERE l.name = $1 FOR SHARE', lease_table)
           INTO lease_token, lease_expires, lease_released USING p_lease;
        IF lease_token IS NULL OR p_token > lease_token THEN
            outcome := 'unauthorized';
            detail := pg_catalog.format('generation %s was never issued by lease %s', p_token,
                                        p_lease);
            RETURN;
        ELSIF p_token < lease_token THEN
            outcome := 'superseded';
            detail := pg_catalog.format('generation %s of lease %s was superseded by %s', p_token,
                                        p_lease, lease_token);
            RETURN;
        ELSIF lease_released IS NOT NULL OR lease_expires
              <= (pg_catalog.date_part('epoch', pg_catalog.clock_timestamp()) * 1000000)::bigint
        THEN
            detail := pg_catalog.format('lease %s had lapsed', p_lease);
        END IF;
    END IF;
    IF p_token < p_highest THEN
        outcome := 'stale';
        detail := pg_catalog.format('generation %s is below %s, the highest accepted', p_token,
                                    p_highest);
        RETURN;
    END IF;
    outcome := 'accepted';
END
$$;

-- A refusal recorded by a session of its own, committed there, so that it stays in the audit
-- when the caller's transaction rolls back: the verdict refuse() returns. The session is opened
-- for this one query by dblink(server, query) and closed before dblink returns, on an error
-- too: nothing of it stays in the caller's session. Its search path is pg_catalog's alone (so
-- the operators refuse() and row_hash() use are the built-in ones) and its lock wait is
-- bounded: a longer wait is on a transaction that waits for this one's caller, a cycle
-- PostgreSQL cannot see through dblink. `problem` says why nothing could be recorded; the
-- caller's verdict then stands unrecorded.
CREATE OR REPLACE FUNCTION refuse_autonomously(p_caller_head bigint, p_scope text,
                                               p_token bigint, p_op_id text, p_owner text,
                                               p_lease text, p_table text, p_outcome text,
                                               p_highest bigint, p_detail text,
                                               OUT outcome text, OUT detail text,
                                               OUT row_id bigint, OUT deferred boolean,
                                               OUT problem text)
LANGUAGE plpgsql
AS $$
DECLARE
    dblink_at text;
    server    text;
    query     text;
BEGIN
    SELECT s.value INTO dblink_at FROM @schema@.settings s WHERE s.name = 'dblink_schema';
    SELECT s.value INTO server FROM @schema@.settings s WHERE s.name = 'loopback_server';
    IF dblink_at IS NULL OR server IS NULL THEN
        problem := 'the fence has no dblink loopback (see fencewatch fence status)';
        RETURN;
    END IF;
    problem := @schema@.loopback_problem(dblink_at);
    IF problem IS NOT NULL THEN
        RETURN;
    END IF;
    -- Nothing is recorded in a database that is not the caller's (refuse_in()).
    query := pg_catalog.format(
        'SET search_path = pg_catalog, pg_temp; SET lock_timeout = ''5s''; '
        'SELECT r.outcome, r.detail, r.row_id, r.deferred '
        'FROM @schema@.refuse_in(%L, %L, %L, %L, %L, %L, %L, %L, %L, %L, %L) r',
        @schema@.database_identity(), p_caller_head, p_scope, p_token, p_op_id, p_owner,
        p_lease, p_table, p_outcome, p_highest, p_detail);
    BEGIN
        EXECUTE pg_catalog.format(
            'SELECT r.outcome, r.detail, r.row_id, r.deferred FROM %I.dblink(%L, %L) '
            'AS r(outcome text, detail text, row_id bigint, deferred boolean)',
            dblink_at, server, query)
           INTO outcome, detail, row_id, deferred;
    EXCEPTION WHEN OTHERS THEN
        problem := SQLERRM;
    END;
END
$$;

-- Whether a refusal can be recorded autonomously, tried for real through a session of its own.
-- NULL when it works, else why not.
CREATE OR REPLACE FUNCTION autonomous_audit_problem() RETURNS text LANGUAGE plpgsql
SECURITY DEFINER SET search_path FROM CURRENT
AS $$
DECLARE
    dblink_at text;
    server    text;
    problem   text;
    seen      bigint;
BEGIN
    SELECT s.value INTO dblink_at FROM @schema@.settings s WHERE s.name = 'dblink_schema';
    SELECT s.value INTO server FROM @schema@.settings s WHERE s.name = 'loopback_server';
    IF dblink_at IS NULL OR server IS NULL THEN
        RETURN coalesce((SELECT s.value FROM @schema@.settings s WHERE s.name = 'dblink_problem'),
                        'no dblink loopback was set up');
    END IF;
    problem := @schema@.loopback_problem(dblink_at);
    IF problem IS NOT NULL THEN
        RETURN problem;
    END IF;
    BEGIN
        EXECUTE pg_catalog.format(
            'SELECT r.n FROM %I.dblink(%L, %L) AS r(n bigint)', dblink_at, server,
            pg_catalog.format('SET search_path = pg_catalog, pg_temp; '
                              'SELECT @schema@.require_identity(%L)',
                              @schema@.database_identity()))
           INTO seen;
        RETURN NULL;
    EXCEPTION WHEN OTHERS THEN
        RETURN SQLERRM;
    END;
END
$$;

-- Judges an UPDATE that moves a row from scope `p_from` to `p_to`: the write must be acceptable
-- on both, and is recorded on both only if it is. Both scopes' rows are created if missing and
-- locked in scope order before either decision, so nothing comes between the two decisions and
-- two moves in opposite directions cannot deadlock. Returns the decision (`accepted`, or the
-- refusal and the scope that refused, for the caller to note); a replay is recorded here.
CREATE FUNCTION settle_move(p_from text, p_to text, p_token bigint, p_op_id text,
                            p_owner text, p_lease text, p_table text, OUT outcome text,
                            OUT scope text, OUT highest bigint, OUT detail text)
LANGUAGE plpgsql
AS $$
DECLARE
    d record;
BEGIN
    INSERT INTO @schema@.scopes AS s (scope, highest_token, head_seq, head_hash, updated_at)
    SELECT x.scope, 0, 0, '\x0000000000000000000000000000000000000000000000000000000000000000',
           pg_catalog.clock_timestamp()
      FROM pg_catalog.unnest(ARRAY[p_from, p_to]) AS x(scope) ORDER BY x.scope
    ON CONFLICT ON CONSTRAINT scopes_pkey DO NOTHING;
    PERFORM 1 FROM @schema@.scopes s WHERE s.scope IN (p_from, p_to) ORDER BY s.scope
        FOR UPDATE;
    FOR step IN 1..2 LOOP
        scope := CASE step WHEN 1 THEN p_from ELSE p_to END;
        d := @schema@.settle(scope, p_token, p_op_id, p_owner, p_lease, p_table, step = 2,
                             false);
        outcome := d.outcome;
        highest := d.highest;
        detail := d.detail;
        IF outcome = 'replayed' AND step = 1 THEN
            PERFORM @schema@.settle(p_from, p_token, p_op_id, p_owner, p_lease, p_table, true,
                                    false);
        END IF;
        IF outcome <> 'accepted' THEN
            RETURN;
        END IF;
    END LOOP;
    -- The same decision as the first, on a scope this transaction has held since: recorded.
    PERFORM @schema@.settle(p_from, p_token, p_op_id, p_owner, p_lease, p_table, true, false);
END
$$;

-- The statements a protected table's trigger function uses to read column `col` of `rec` (NEW
-- or OLD) into the variable `var` as text, without calling anything the table's owner can
-- define. `protected_type` is the column's type when protect() ran: while the column still has
-- that built-in type it is cast as PostgreSQL casts it to text (only a superuser can define a
-- cast between built-in types); a column of any other type is read through its output function
-- (format's %s), which for every type a role without superuser can create is built in. Each
-- branch is a statement of its own, planned only when it runs.
CREATE FUNCTION column_text(rec text, col text, protected_type oid, var text) RETURNS text
LANGUAGE sql IMMUTABLE
AS $$
    SELECT CASE WHEN protected_type < 16384 THEN pg_catalog.format(
            'IF pg_catalog.pg_typeof(%1$s.%2$I)::oid = %3$s THEN %4$s := %1$s.%2$I::text; '
            'ELSIF %1$s.%2$I IS NULL THEN %4$s := NULL; '
            'ELSE %4$s := pg_catalog.format(''%%s'', %1$s.%2$I); END IF;',
            rec, col, protected_type, var)
        ELSE pg_catalog.format(
            'IF %1$s.%2$I IS NULL THEN %3$s := NULL; '
            'ELSE %3$s := pg_catalog.format(''%%s'', %1$s.%2$I); END IF;', rec, col, var)
        END
$$;

-- The event trigger's function (install creates the event trigger where its role may): after
-- CREATE TABLE, ALTER TABLE, CREATE TRIGGER or ALTER TRIGGER, refuses the command (FW400) if a
-- protected table now has a trigger that fires after the fence's or an inheritance child. It
-- reads only the catalog and the fence's `protected`, as the fence's owner, so that any role's
-- DDL can be checked.
CREATE FUNCTION ddl_guard() RETURNS event_trigger LANGUAGE plpgsql SECURITY DEFINER
SET search_path FROM CURRENT
AS $$
DECLARE
    problem text;
BEGIN
    SELECT p INTO problem FROM @schema@.protected_table_problems(true) p LIMIT 1;
    IF problem IS NOT NULL THEN
        RAISE EXCEPTION 'FW400: %', problem USING ERRCODE = 'FW400',
            HINT = 'fencewatch''s fence refuses this command (docs/own-database.md, '
                   '"Protected tables")';
    END IF;
END
$$;

-- Whether the event trigger that runs ddl_guard() is there and enabled.
CREATE FUNCTION ddl_guarded() RETURNS boolean LANGUAGE sql STABLE
AS $$
    SELECT EXISTS (SELECT 1 FROM pg_catalog.pg_event_trigger e
                    WHERE e.evtname = @schema_literal@ || '_ddl_guard'
                      AND e.evtfoid = '@schema@.ddl_guard()'::pg_catalog.regprocedure
                      AND e.evtenabled <> 'D')
$$;

-- Every protected table a write could get past the fence on, one line each: a BEFORE ROW
-- trigger of its own (or of a partition's) that fires after the fence's, an inheritance child,
-- and unless `p_bypass_only`, a table dropped or a trigger of the fence's gone or disabled.
CREATE FUNCTION protected_table_problems(p_bypass_only boolean) RETURNS SETOF text
LANGUAGE sql STABLE
AS $$
    SELECT pg_catalog.format('trigger %I on %s fires after the fence''s and could change a row '
                             'after the fence judged it: rename it to sort before %I',
                             g.tgname, g.tgrelid::regclass, p.trigger_name)
      FROM @schema@.protected p
      JOIN pg_catalog.pg_trigger g
        ON g.tgrelid = p.table_name
           OR g.tgrelid IN (SELECT t.relid FROM pg_catalog.pg_partition_tree(p.table_name) t)
     WHERE EXISTS (SELECT 1 FROM pg_catalog.pg_class c WHERE c.oid = p.table_name)
       AND NOT g.tgisinternal AND g.tgenabled <> 'D'
       -- ROW (1) and BEFORE (2), on INSERT (4) or UPDATE (16)
       AND g.tgtype & 3 = 3 AND g.tgtype & 20 <> 0
       AND g.tgname COLLATE "C" > p.trigger_name COLLATE "C"
       AND g.tgname NOT LIKE '~%\_fence'
    UNION ALL
    SELECT pg_catalog.format('%s has the inheritance child %s, whose rows an UPDATE of %s would '
                             'change without the fence: protect tables without inheritance '
                             'children (partitions are fine), or detach it',
                             p.table_name, i.inhrelid::regclass, p.table_name)
      FROM @schema@.protected p
      JOIN pg_catalog.pg_inherits i ON i.inhparent = p.table_name
      JOIN pg_catalog.pg_class c ON c.oid = i.inhrelid
     WHERE NOT c.relispartition
    UNION ALL
    SELECT CASE WHEN pg_catalog.to_regclass(p.table_text) IS NOT NULL
                THEN pg_catalog.format('protected table %s (oid %s) was dropped, and the table '
                                       'named %s now is not protected (swapped by a copy?): '
                                       'protect it again', p.table_text, p.table_name::oid,
                                       p.table_text)
                ELSE pg_catalog.format('protected table %s (oid %s) was dropped: unprotect it',
                                       coalesce(p.table_text, '?'), p.table_name::oid) END
      FROM @schema@.protected p
     WHERE NOT p_bypass_only
       AND NOT EXISTS (SELECT 1 FROM pg_catalog.pg_class c WHERE c.oid = p.table_name)
    UNION ALL
    SELECT pg_catalog.format('%s has lost its trigger %I: protect it again', p.table_name, t.name)
      FROM @schema@.protected p,
           LATERAL (VALUES (p.trigger_name), (p.check_trigger)) AS t(name)
     WHERE NOT p_bypass_only AND t.name IS NOT NULL
       AND EXISTS (SELECT 1 FROM pg_catalog.pg_class c WHERE c.oid = p.table_name)
       AND NOT EXISTS (SELECT 1 FROM pg_catalog.pg_trigger g
                        WHERE g.tgrelid = p.table_name AND g.tgname = t.name)
    UNION ALL
    SELECT pg_catalog.format('%s: no event trigger refuses DDL that would let a write past the '
                             'fence, and it has no statement trigger that checks instead: '
                             'protect it again (or install again as a superuser)', p.table_name)
      FROM @schema@.protected p
     WHERE NOT p_bypass_only AND p.check_trigger IS NULL AND NOT @schema@.ddl_guarded()
       AND EXISTS (SELECT 1 FROM pg_catalog.pg_class c WHERE c.oid = p.table_name)
    UNION ALL
    SELECT pg_catalog.format('%s: its trigger %I is disabled', p.table_name, g.tgname)
      FROM @schema@.protected p
      JOIN pg_catalog.pg_trigger g ON g.tgrelid = p.table_name
     WHERE NOT p_bypass_only AND g.tgname IN (p.trigger_name, p.check_trigger)
       AND g.tgenabled = 'D'
$$;

-- Where there is no event trigger: a protected table's statement trigger. It runs as the writer (it is no SECURITY DEFINER) and
-- reads only the catalog. It stops the statement (FW400) when a BEFORE ROW trigger of the
-- table's own (of a partition's, for a partitioned table) would fire after the fence's and so
-- could change a row after it was judged, or when an UPDATE of the table would reach rows of
-- an inheritance child, which the fence's trigger does not see. TG_ARGV: the fence's row
-- trigger's name, and 'p' for a partitioned table.
CREATE FUNCTION precheck() RETURNS trigger LANGUAGE plpgsql
SET search_path FROM CURRENT
AS $$
DECLARE
    later text;
    child text;
BEGIN
    SELECT pg_catalog.format('%I on %s', t.tgname, t.tgrelid::regclass) INTO later
      FROM pg_catalog.pg_trigger t
     WHERE (t.tgrelid = TG_RELID
            OR TG_ARGV[1] = 'p' AND t.tgrelid IN (SELECT p.relid
                                                    FROM pg_catalog.pg_partition_tree(TG_RELID) p))
       AND NOT t.tgisinternal AND t.tgenabled <> 'D'
       -- ROW (1) and BEFORE (2), on INSERT (4) or UPDATE (16)
       AND t.tgtype & 3 = 3 AND t.tgtype & 20 <> 0
       AND t.tgname COLLATE "C" > TG_ARGV[0] COLLATE "C"
       AND t.tgname NOT LIKE '~%\_fence'
     ORDER BY t.tgname COLLATE "C" LIMIT 1;
    IF later IS NOT NULL THEN
        RAISE EXCEPTION 'FW400: trigger % fires after the fence''s (%) and could change a row '
                        'after the fence judged it: rename it to sort before %', later,
                        TG_ARGV[0], TG_ARGV[0] USING ERRCODE = 'FW400';
    END IF;
    IF TG_OP = 'UPDATE' THEN
        SELECT i.inhrelid::regclass::text INTO child
          FROM pg_catalog.pg_inherits i JOIN pg_catalog.pg_class c ON c.oid = i.inhrelid
         WHERE i.inhparent = TG_RELID AND NOT c.relispartition
         LIMIT 1;
        IF child IS NOT NULL THEN
            RAISE EXCEPTION 'FW400: % has the inheritance child %, whose rows this UPDATE would '
                            'change without the fence: protect % too and update each table '
                            'on its own, or detach it', TG_RELID::regclass, child, child
                USING ERRCODE = 'FW400';
        END IF;
    END IF;
    RETURN NULL;
END
$$;

-- Chains the scope's pending refusals after (p_seq, p_hash), in the order they were recorded;
-- the caller holds the scope's lock and writes the returned head to the scope. A refusal is
-- chained with the scope's highest generation as it is now if that rose since it was decided,
-- so that the chain's last row always holds the scope's highest (audit verify checks it).
CREATE OR REPLACE FUNCTION drain(p_scope text, INOUT p_seq bigint, INOUT p_hash bytea)
LANGUAGE plpgsql
AS $$
DECLARE
    p        record;
    new_hash bytea;
    now_high bigint;
BEGIN
    SELECT s.highest_token INTO now_high FROM @schema@.scopes s WHERE s.scope = p_scope;
    FOR p IN SELECT * FROM @schema@.pending WHERE resource = p_scope ORDER BY id LOOP
        p.highest_token := greatest(p.highest_token, coalesce(now_high, 0));
        p_seq := p_seq + 1;
        new_hash := @schema@.row_hash(p_seq, p.at, p.resource, p.outcome, p.token,
                                      p.highest_token, p.idempotency_key, p.owner, p.lease,
                                      p.detail, p.table_name, p_hash);
        INSERT INTO @schema@.audit (at, seq, highest_token, token, resource, outcome,
                                    idempotency_key, owner, lease, detail, table_name, prev_hash,
                                    hash)
        VALUES (p.at, p_seq, p.highest_token, p.token, p.resource, p.outcome, p.idempotency_key,
                p.owner, p.lease, p.detail, p.table_name, p_hash, new_hash);
        DELETE FROM @schema@.pending WHERE id = p.id;
        p_hash := new_hash;
    END LOOP;
END
$$;

-- Locks scope `p_scope`'s row (creating it, at generation 0, if there is none) unless that
-- would wait: false when a transaction holds it (or is creating it).
CREATE FUNCTION lock_scope_now(p_scope text) RETURNS boolean LANGUAGE plpgsql
AS $$
BEGIN
    PERFORM 1 FROM @schema@.scopes s WHERE s.scope = p_scope FOR UPDATE NOWAIT;
    IF FOUND THEN
        RETURN true;
    END IF;
    -- No row that this session sees; one being inserted by a transaction still running would
    -- make this insert wait for it: a moment at most.
    PERFORM pg_catalog.set_config('lock_timeout', '20ms', true);
    INSERT INTO @schema@.scopes (scope, highest_token, head_seq, head_hash, updated_at)
    VALUES (p_scope, 0, 0, '\x0000000000000000000000000000000000000000000000000000000000000000',
            pg_catalog.clock_timestamp())
    ON CONFLICT ON CONSTRAINT scopes_pkey DO NOTHING;
    PERFORM pg_catalog.set_config('lock_timeout', '5s', true);
    PERFORM 1 FROM @schema@.scopes s WHERE s.scope = p_scope FOR UPDATE NOWAIT;
    RETURN FOUND;
EXCEPTION WHEN lock_not_available THEN
    RETURN false;
END
$$;

-- Run by the loopback session: the refusals of one statement (JSON, from refusals_noted),
-- identical ones (same scope, outcome, token, op id, owner, lease and table) as one row that
-- says how many, committed there. Each goes into its scope's chain at once, after the scope's
-- pending refusals, unless a transaction holds the scope (the writer itself, when it decided on
-- the scope before in this transaction, or another): then it waits in `pending` for the
-- scope's next decision or drain_pending(). Nothing here waits for a lock.
CREATE FUNCTION record_refusals(p_identity text, p_rows text) RETURNS bigint LANGUAGE plpgsql
AS $$
DECLARE
    r        record;
    head     bigint;
    prev     bytea;
    highest  bigint;
    new_hash bytea;
    n        bigint := 0;
BEGIN
    PERFORM @schema@.require_identity(p_identity);
    FOR r IN
        SELECT pg_catalog.min(x.at) AS at, x.resource, x.outcome, x.token,
               pg_catalog.max(x.highest_token) AS highest_token, x.idempotency_key, x.owner,
               x.lease,
               CASE WHEN pg_catalog.count(*) > 1
                    THEN pg_catalog.min(x.detail)
                         || pg_catalog.format(' (%s rows of one statement)', pg_catalog.count(*))
                    ELSE pg_catalog.min(x.detail) END AS detail,
               x.table_name
          FROM pg_catalog.json_to_recordset(p_rows::json) AS x(at timestamptz, resource text,
               outcome text, token bigint, highest_token bigint, idempotency_key text,
               owner text, lease text, detail text, table_name text)
         GROUP BY x.resource, x.outcome, x.token, x.idempotency_key, x.owner, x.lease,
                  x.table_name
         ORDER BY pg_catalog.min(x.at)
    LOOP
        n := n + 1;
        IF @schema@.lock_scope_now(r.resource) THEN
            SELECT s.highest_token, s.head_seq, s.head_hash INTO highest, head, prev
              FROM @schema@.scopes s WHERE s.scope = r.resource;
        ELSE
            INSERT INTO @schema@.pending (at, resource, outcome, token, highest_token,
                                          idempotency_key, owner, lease, detail, table_name)
            VALUES (r.at, r.resource, r.outcome, r.token, r.highest_token, r.idempotency_key,
                    r.owner, r.lease, r.detail, r.table_name);
            CONTINUE;
        END IF;
        SELECT d.p_seq, d.p_hash INTO head, prev FROM @schema@.drain(r.resource, head, prev) d;
        -- Chained with the scope's highest as it is now (the chain's last row holds it).
        new_hash := @schema@.row_hash(head + 1, r.at, r.resource, r.outcome, r.token, highest,
                                      r.idempotency_key, r.owner, r.lease, r.detail,
                                      r.table_name, prev);
        INSERT INTO @schema@.audit (at, seq, highest_token, token, resource, outcome,
                                    idempotency_key, owner, lease, detail, table_name,
                                    prev_hash, hash)
        VALUES (r.at, head + 1, highest, r.token, r.resource, r.outcome, r.idempotency_key,
                r.owner, r.lease, r.detail, r.table_name, prev, new_hash);
        UPDATE @schema@.scopes
           SET head_seq = head + 1, head_hash = new_hash,
               updated_at = pg_catalog.clock_timestamp()
         WHERE scope = r.resource;
    END LOOP;
    RETURN n;
END
$$;

-- Records the refusals noted so far in this transaction (and takes them from refusals_noted):
-- through the loopback, so that they stay when the writer rolls back; without one, in
-- `pending` in this transaction (kept if it commits). How many rows were noted.
CREATE FUNCTION record_noted() RETURNS bigint LANGUAGE plpgsql
AS $$
DECLARE
    noted     text;
    n         bigint;
    dblink_at text;
    server    text;
    problem   text;
BEGIN
    SELECT pg_catalog.json_agg(r ORDER BY r.id)::text, pg_catalog.count(*) INTO noted, n
      FROM @schema@.refusals_noted r;
    IF n = 0 THEN
        RETURN 0;
    END IF;
    DELETE FROM @schema@.refusals_noted;
    PERFORM pg_catalog.set_config(@schema_literal@ || '.noted', '', true);
    SELECT s.value INTO dblink_at FROM @schema@.settings s WHERE s.name = 'dblink_schema';
    SELECT s.value INTO server FROM @schema@.settings s WHERE s.name = 'loopback_server';
    problem := CASE WHEN dblink_at IS NULL OR server IS NULL THEN 'no loopback'
                    ELSE @schema@.loopback_problem(dblink_at) END;
    IF problem IS NULL THEN
        BEGIN
            EXECUTE pg_catalog.format(
                'SELECT r.n FROM %I.dblink(%L, %L) AS r(n bigint)', dblink_at, server,
                pg_catalog.format('SET search_path = pg_catalog, pg_temp; '
                                  'SELECT @schema@.record_refusals(%L, %L)',
                                  @schema@.database_identity(), noted))
               INTO n;
        EXCEPTION WHEN OTHERS THEN
            problem := SQLERRM;
        END;
    END IF;
    IF problem IS NULL THEN
        -- Those the loopback left pending on scopes this transaction holds: chained here (a
        -- rollback puts them back in `pending`).
        PERFORM @schema@.drain_scopes(ARRAY(
            SELECT DISTINCT x.resource FROM pg_catalog.json_to_recordset(noted::json)
                AS x(resource text)));
        RETURN n;
    END IF;
    -- No loopback: the refusals stay only if this transaction commits.
    INSERT INTO @schema@.pending (at, resource, outcome, token, highest_token, idempotency_key,
                                  owner, lease, detail, table_name)
    SELECT r.at, r.resource, r.outcome, r.token, r.highest_token, r.idempotency_key, r.owner,
           r.lease, r.detail, r.table_name
      FROM pg_catalog.json_to_recordset(noted::json) AS r(at timestamptz, resource text,
           outcome text, token bigint, highest_token bigint, idempotency_key text, owner text,
           lease text, detail text, table_name text);
    RETURN n;
END
$$;

-- Notes a protected write's refusal, to be recorded at the statement's end, and counts it for
-- refused().
CREATE FUNCTION note_refusal(p_scope text, p_token bigint, p_op_id text, p_owner text,
                             p_lease text, p_table text, p_outcome text, p_highest bigint,
                             p_detail text) RETURNS void LANGUAGE plpgsql
AS $$
BEGIN
    INSERT INTO @schema@.refusals_noted (at, resource, outcome, token, highest_token,
                                         idempotency_key, owner, lease, detail, table_name)
    VALUES (pg_catalog.clock_timestamp(), p_scope, p_outcome, p_token, coalesce(p_highest, 0),
            p_op_id, p_owner, p_lease, p_detail, p_table);
    PERFORM pg_catalog.set_config(@schema_literal@ || '.noted', 'on', true);
    PERFORM pg_catalog.set_config(@schema_literal@ || '.refused',
        (coalesce(nullif(pg_catalog.current_setting(@schema_literal@ || '.refused',
                                                               true), ''), '0')::bigint + 1)::text,
        true);
END
$$;

-- A protected write that states no generation, in a table whose generation is 'stated':
-- recorded at once (the statement is failing) and refused with FW400.
CREATE FUNCTION refuse_unstated(p_scope text, p_token bigint, p_op_id text, p_owner text,
                                p_lease text, p_table text) RETURNS void LANGUAGE plpgsql
AS $$
DECLARE
    why constant text := pg_catalog.format(
        'an UPDATE of %s that leaves its token column out states no generation: state it with '
        'SELECT fencewatch.begin(token => …) in the transaction first, or set the column',
        p_table);
BEGIN
    PERFORM @schema@.note_refusal(p_scope, p_token, p_op_id, p_owner, p_lease, p_table,
        'invalid', (SELECT s.highest_token FROM @schema@.scopes s WHERE s.scope = p_scope), why);
    PERFORM @schema@.record_noted();
    RAISE EXCEPTION 'FW400: %', why USING ERRCODE = 'FW400';
END
$$;

-- A protected table's statement trigger after INSERT and UPDATE: records the statement's
-- refusals (record_noted()). Runs as the fence's owner, who may use the loopback; reads
-- nothing of the writer's but the flag note_refusal() sets.
CREATE FUNCTION flush_refusals() RETURNS trigger LANGUAGE plpgsql SECURITY DEFINER
SET search_path FROM CURRENT
AS $$
BEGIN
    IF pg_catalog.current_setting(@schema_literal@ || '.noted', true) = 'on' THEN
        PERFORM @schema@.record_noted();
    END IF;
    RETURN NULL;
END
$$;

-- A protected table's row trigger before an UPDATE that names the token column (a 'stated'
-- table): notes that this row's statement states its generation, for the fence's trigger.
CREATE FUNCTION mark_token_named() RETURNS trigger LANGUAGE plpgsql
AS $$
BEGIN
    PERFORM pg_catalog.set_config(TG_ARGV[0], 'on', true);
    RETURN NEW;
END
$$;

-- States the writer's generation (and op id, owner, lease) for every protected write of the
-- transaction: each is judged with it whatever its statement sets, and its token column is set
-- to it. ORMs that leave unchanged columns out of an UPDATE need it.
CREATE FUNCTION begin(token bigint, owner text DEFAULT NULL, op_id text DEFAULT NULL,
                      lease text DEFAULT NULL) RETURNS void LANGUAGE plpgsql
SET search_path FROM CURRENT
AS $$
BEGIN
    IF token IS NULL OR token < 1 THEN
        RAISE EXCEPTION 'FW400: the token must be a positive generation, not %',
            coalesce(token::text, 'NULL') USING ERRCODE = 'FW400';
    END IF;
    PERFORM pg_catalog.set_config(@schema_literal@ || '.token', token::text, true);
    PERFORM pg_catalog.set_config(@schema_literal@ || '.owner', coalesce(owner, ''), true);
    PERFORM pg_catalog.set_config(@schema_literal@ || '.op_id', coalesce(op_id, ''), true);
    PERFORM pg_catalog.set_config(@schema_literal@ || '.lease', coalesce(lease, ''), true);
END
$$;

-- How many protected writes of this transaction the fence refused (they affected zero rows):
-- what an application checks before it commits, where a refused INSERT would otherwise go
-- unnoticed.
CREATE FUNCTION refused() RETURNS bigint LANGUAGE sql STABLE
AS $$
    SELECT coalesce(nullif(pg_catalog.current_setting(@schema_literal@ || '.refused',
                                                                 true), ''), '0')::bigint
$$;

-- Begins maintenance: the transaction's protected writes are applied without a generation and
-- without moving any scope, each audited `accepted` with `maintenance` and the reason in its
-- detail (a backfill is not a stale owner, and opens no overlap). For the fence's owner and
-- the roles it grants this to.
CREATE FUNCTION begin_maintenance(reason text) RETURNS void LANGUAGE plpgsql SECURITY DEFINER
SET search_path FROM CURRENT
AS $$
BEGIN
    IF reason IS NULL OR reason = '' THEN
        RAISE EXCEPTION 'FW400: say why' USING ERRCODE = 'FW400';
    END IF;
    INSERT INTO @schema@.maintenance (xact, role, reason, at)
    VALUES (pg_catalog.pg_current_xact_id(), session_user, reason, pg_catalog.clock_timestamp())
    ON CONFLICT (xact) DO UPDATE SET reason = excluded.reason;
    PERFORM pg_catalog.set_config(@schema_literal@ || '.maintenance', 'on', true);
END
$$;

-- A protected write of a maintenance transaction: appended `accepted` with the scope's
-- highest as it is, under its lock. False when this transaction did not begin maintenance
-- (its flag was set by hand).
CREATE FUNCTION record_maintenance(p_scope text, p_token bigint, p_op_id text, p_owner text,
                                   p_table text) RETURNS boolean LANGUAGE plpgsql
AS $$
DECLARE
    m        record;
    head     bigint;
    prev     bytea;
    highest  bigint;
    now_at   timestamptz;
    why      text;
    new_hash bytea;
BEGIN
    SELECT * INTO m FROM @schema@.maintenance x WHERE x.xact = pg_catalog.pg_current_xact_id();
    IF NOT FOUND THEN
        RETURN false;
    END IF;
    INSERT INTO @schema@.scopes (scope, highest_token, head_seq, head_hash, updated_at)
    VALUES (p_scope, 0, 0, '\x0000000000000000000000000000000000000000000000000000000000000000',
            pg_catalog.clock_timestamp())
    ON CONFLICT ON CONSTRAINT scopes_pkey DO NOTHING;
    SELECT s.highest_token, s.head_seq, s.head_hash INTO highest, head, prev
      FROM @schema@.scopes s WHERE s.scope = p_scope FOR UPDATE;
    SELECT d.p_seq, d.p_hash INTO head, prev FROM @schema@.drain(p_scope, head, prev) d;
    now_at := pg_catalog.clock_timestamp();
    why := pg_catalog.format('maintenance by %s: %s', m.role, m.reason);
    new_hash := @schema@.row_hash(head + 1, now_at, p_scope, 'accepted', p_token, highest,
                                  p_op_id, p_owner, NULL, why, p_table, prev);
    INSERT INTO @schema@.audit (at, seq, highest_token, token, resource, outcome,
                                idempotency_key, owner, lease, detail, table_name, prev_hash,
                                hash)
    VALUES (now_at, head + 1, highest, p_token, p_scope, 'accepted', p_op_id, p_owner, NULL,
            why, p_table, prev, new_hash);
    UPDATE @schema@.scopes
       SET head_seq = head + 1, head_hash = new_hash, updated_at = now_at
     WHERE scope = p_scope;
    RETURN true;
END
$$;

-- Chains the pending refusals of the scopes among `p_scopes` that no other transaction holds
-- now (this one's own are chained). How many rows it chained.
CREATE FUNCTION drain_scopes(p_scopes text[]) RETURNS bigint LANGUAGE plpgsql
AS $$
DECLARE
    r      record;
    head   bigint;
    prev   bytea;
    before bigint;
    n      bigint := 0;
BEGIN
    FOR r IN SELECT DISTINCT p.resource FROM @schema@.pending p
              WHERE p.resource = ANY (p_scopes) LOOP
        CONTINUE WHEN NOT @schema@.lock_scope_now(r.resource);
        SELECT s.head_seq, s.head_hash INTO head, prev FROM @schema@.scopes s
         WHERE s.scope = r.resource;
        before := head;
        SELECT d.p_seq, d.p_hash INTO head, prev FROM @schema@.drain(r.resource, head, prev) d;
        UPDATE @schema@.scopes
           SET head_seq = head, head_hash = prev, updated_at = pg_catalog.clock_timestamp()
         WHERE scope = r.resource;
        n := n + head - before;
    END LOOP;
    RETURN n;
END
$$;

-- Chains every scope's pending refusals that no transaction holds now (a watcher calls it
-- each poll, so that a refusal waiting for its scope reaches the audit without waiting for the
-- scope's next decision). How many rows it chained.
CREATE FUNCTION drain_pending() RETURNS bigint LANGUAGE sql SECURITY DEFINER
SET search_path FROM CURRENT
AS $$
    SELECT @schema@.drain_scopes(ARRAY(SELECT DISTINCT p.resource FROM @schema@.pending p))
$$;

-- Protects `tab`. Changes nothing of the table but the triggers it adds: the row trigger
-- (named to sort after the table's own, so that the fence judges a row as they leave it) and,
-- where no event trigger guards DDL, the statement trigger precheck(). Refuses a table that
-- already has a trigger firing after the fence's or an inheritance child. Protecting it again
-- rewrites the triggers for the columns given.
DROP FUNCTION protect(regclass, text, text, text, text, text, text);
CREATE FUNCTION protect(tab regclass, token_column text, scope_column text DEFAULT NULL,
                        scope text DEFAULT NULL, op_column text DEFAULT NULL,
                        owner_column text DEFAULT NULL, lease text DEFAULT NULL,
                        generation text DEFAULT 'stated')
RETURNS void LANGUAGE plpgsql
SET search_path FROM CURRENT
AS $$
DECLARE
    fn         text := format('fence_%s', tab::oid);
    trig       text := '~' || @schema_literal@ || '_fence';
    check_trig text := '~' || @schema_literal@ || '_fence_check';
    -- Sorts before the fence's row trigger, so that its note is there when the fence reads it.
    marker     text := '~' || @schema_literal@ || '_a_token';
    flush      text := '~' || @schema_literal@ || '_fence_flush';
    col        text;
    token_type regtype;
    kind       "char";
    child      text;
    previous   @schema@.protected%ROWTYPE;
    type_of    oid;
    reads      text := '';
    move       text := '';
    lease_expr text;
    unstated   text := '';
    part       regclass;
BEGIN
    IF (scope_column IS NULL) = (scope IS NULL) THEN
        RAISE EXCEPTION 'FW400: give a scope column or a scope, not both'
            USING ERRCODE = 'FW400';
    END IF;
    IF scope = '' THEN
        RAISE EXCEPTION 'FW400: the scope must be a non-empty text' USING ERRCODE = 'FW400';
    END IF;
    IF generation IS NULL OR generation NOT IN ('row', 'stated') THEN
        RAISE EXCEPTION 'FW400: the generation comes from ''stated'' or ''row'', not %',
            coalesce(generation, 'NULL') USING ERRCODE = 'FW400';
    END IF;
    SELECT c.relkind INTO kind FROM pg_class c WHERE c.oid = tab;
    IF kind IS NULL OR kind NOT IN ('r', 'p') THEN
        RAISE EXCEPTION 'FW400: % is not a table', tab USING ERRCODE = 'FW400';
    END IF;
    SELECT i.inhrelid::regclass::text INTO child
      FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid
     WHERE i.inhparent = tab AND NOT c.relispartition LIMIT 1;
    IF child IS NOT NULL THEN
        RAISE EXCEPTION 'FW400: % has the inheritance child %, whose rows an UPDATE of % would '
                        'change without the fence: protect tables without inheritance children '
                        '(partitions are fine)', tab, child, tab USING ERRCODE = 'FW400';
    END IF;
    SELECT format('%I on %s', g.tgname, g.tgrelid::regclass) INTO child
      FROM pg_trigger g
     WHERE (g.tgrelid = tab OR g.tgrelid IN (SELECT t.relid FROM pg_partition_tree(tab) t))
       AND NOT g.tgisinternal AND g.tgenabled <> 'D'
       AND g.tgtype & 3 = 3 AND g.tgtype & 20 <> 0
       AND g.tgname COLLATE "C" > trig COLLATE "C" AND g.tgname NOT LIKE '~%\_fence'
     ORDER BY g.tgname COLLATE "C" LIMIT 1;
    IF child IS NOT NULL THEN
        RAISE EXCEPTION 'FW400: trigger % would fire after the fence''s and could change a row '
                        'after the fence judged it: rename it to sort before %', child, trig
            USING ERRCODE = 'FW400';
    END IF;
    FOREACH col IN ARRAY array_remove(ARRAY[token_column, scope_column, op_column, owner_column],
                                      NULL) LOOP
        IF NOT EXISTS (SELECT 1 FROM pg_attribute a WHERE a.attrelid = tab AND a.attname = col
                        AND a.attnum > 0 AND NOT a.attisdropped) THEN
            RAISE EXCEPTION 'FW400: table % has no column %', tab, col USING ERRCODE = 'FW400';
        END IF;
    END LOOP;
    SELECT a.atttypid::regtype INTO token_type FROM pg_attribute a
     WHERE a.attrelid = tab AND a.attname = token_column;
    IF token_type NOT IN ('smallint'::regtype, 'integer'::regtype, 'bigint'::regtype) THEN
        RAISE EXCEPTION 'FW400: the token column %.% is %, not an integer type', tab,
            token_column, token_type USING ERRCODE = 'FW400';
    END IF;
    -- A lease named per scope (`orders/{scope}`) is the scope's own; with none, the lease the
    -- transaction stated with begin(lease => …), if any.
    lease_expr := CASE
        WHEN lease IS NULL THEN format('nullif(pg_catalog.current_setting(%L, '
                                       'true), %L)', @schema_literal@ || '.lease', '')
        WHEN strpos(lease, '{scope}') > 0 THEN format('pg_catalog.replace(%L, %L, s)', lease,
                                                      '{scope}')
        ELSE quote_literal(lease) END;
    IF generation = 'stated' THEN
        -- An UPDATE that states no generation (none begun, the token column not named) is
        -- refused: an ORM leaves an unchanged column out, and the row's token is then a
        -- newer owner's.
        unstated := format('ELSIF TG_OP = %L THEN '
                           'IF pg_catalog.current_setting(%L, true) = %L '
                           'OR NEW.%I IS DISTINCT FROM OLD.%I THEN '
                           'PERFORM pg_catalog.set_config(%L, %L, true); '
                           'ELSE PERFORM @schema@.refuse_unstated(s, t, op, who, %s, %L); '
                           'END IF;', 'UPDATE', @schema_literal@ || '.token_named', 'on',
                           token_column, token_column,
                           @schema_literal@ || '.token_named', '', lease_expr, tab::text);
    END IF;
    IF scope_column IS NULL THEN
        reads := format('s := %L;', scope);
    ELSE
        SELECT a.atttypid INTO type_of FROM pg_attribute a
         WHERE a.attrelid = tab AND a.attname = scope_column;
        reads := @schema@.column_text('NEW', scope_column, type_of, 's');
        -- An UPDATE that moves the row to another scope is judged on both.
        move := format('IF TG_OP = %1$L THEN %2$s '
                       'IF was IS DISTINCT FROM s AND was <> %3$L THEN '
                       'd := @schema@.settle_move(was, s, t, op, who, %4$s, %5$L); '
                       'IF d.outcome = %6$L THEN RETURN NEW; END IF; '
                       'IF d.outcome <> %7$L THEN '
                       'PERFORM @schema@.note_refusal(d.scope, t, op, who, %4$s, %5$L, '
                       'd.outcome, d.highest, d.detail); END IF; '
                       'RETURN NULL; END IF; END IF;',
                       'UPDATE', @schema@.column_text('OLD', scope_column, type_of, 'was'), '',
                       lease_expr, tab::text, 'accepted', 'replayed');
    END IF;
    IF op_column IS NOT NULL THEN
        SELECT a.atttypid INTO type_of FROM pg_attribute a
         WHERE a.attrelid = tab AND a.attname = op_column;
        reads := reads || ' ' || @schema@.column_text('NEW', op_column, type_of, 'op');
    END IF;
    IF owner_column IS NOT NULL THEN
        SELECT a.atttypid INTO type_of FROM pg_attribute a
         WHERE a.attrelid = tab AND a.attname = owner_column;
        reads := reads || ' ' || @schema@.column_text('NEW', owner_column, type_of, 'who');
    END IF;
    -- Every value written into the function's text goes through %I or %L (quote_literal): a
    -- table or column name cannot inject SQL into a SECURITY DEFINER function. The token is
    -- read only while its column is a built-in integer: an assignment cast of the owner's into
    -- bigint would run here. The transaction's stated generation (begin()) replaces the row's.
    -- A refusal is noted and the row skipped (zero rows, no error); the statement's end
    -- records the notes in a session of its own (flush_refusals()). A row with no positive
    -- token goes through the guard, which records it autonomously and raises FW400.
    EXECUTE format($f$
        CREATE OR REPLACE FUNCTION @schema@.%1$I() RETURNS trigger LANGUAGE plpgsql
        SECURITY DEFINER SET search_path FROM CURRENT AS $body$
        DECLARE
            s   text;
            was text;
            t   bigint;
            op  text;
            who text;
            g   text;
            d   record;
        BEGIN
            IF pg_catalog.pg_typeof(NEW.%3$I)::oid NOT IN (20, 21, 23) THEN
                RAISE EXCEPTION 'FW400: the token column %% of %% is of type %%, not smallint, '
                                'integer or bigint: protect the table again once it is',
                                %8$L, %6$L, pg_catalog.pg_typeof(NEW.%3$I)
                    USING ERRCODE = 'FW400';
            END IF;
            t := NEW.%3$I;
            %2$s
            IF s IS NULL OR s = '' THEN
                RAISE EXCEPTION 'FW400: a row of %% has no scope', %6$L USING ERRCODE = 'FW400';
            END IF;
            g := pg_catalog.current_setting(%9$L, true);
            IF g <> '' THEN
                t := g::bigint;
                NEW.%3$I := t;
                op := coalesce(nullif(pg_catalog.current_setting(%10$L, true), ''),
                               op);
                who := coalesce(nullif(pg_catalog.current_setting(%11$L, true), ''),
                                who);
            %5$s
            END IF;
            IF pg_catalog.current_setting(%12$L, true) = 'on'
               AND @schema@.record_maintenance(s, t, op, who, %6$L) THEN
                RETURN NEW;
            END IF;
            IF t IS NULL OR t < 1 THEN
                PERFORM @schema@.guard(s, t, op, who, %7$s, %6$L);
            END IF;
            %4$s
            d := @schema@.settle(s, t, op, who, %7$s, %6$L, true, false);
            IF d.outcome = 'accepted' THEN
                RETURN NEW;
            END IF;
            IF d.outcome <> 'replayed' THEN
                PERFORM @schema@.note_refusal(s, t, op, who, %7$s, %6$L, d.outcome, d.highest,
                                              d.detail);
            END IF;
            RETURN NULL;
        END
        $body$ $f$,
        fn, reads, token_column, move, unstated, tab::text, lease_expr, token_column,
        @schema_literal@ || '.token', @schema_literal@ || '.op_id',
        @schema_literal@ || '.owner', @schema_literal@ || '.maintenance');
    EXECUTE format('REVOKE ALL ON FUNCTION @schema@.%I() FROM PUBLIC', fn);
    -- A table of this name protected before and dropped since (replaced by a copy): this one
    -- takes its place.
    FOR previous IN SELECT * FROM @schema@.protected p
                     WHERE p.table_text = tab::text AND p.table_name <> tab
                       AND NOT EXISTS (SELECT 1 FROM pg_class c WHERE c.oid = p.table_name) LOOP
        EXECUTE format('DROP FUNCTION IF EXISTS @schema@.%I()', previous.function_name);
        DELETE FROM @schema@.protected p WHERE p.table_name = previous.table_name;
    END LOOP;
    SELECT * INTO previous FROM @schema@.protected p WHERE p.table_name = tab;
    IF FOUND THEN
        -- An older version's names, or this one's.
        EXECUTE format('DROP TRIGGER IF EXISTS %I ON %s', previous.trigger_name, tab);
        IF previous.check_trigger IS NOT NULL THEN
            EXECUTE format('DROP TRIGGER IF EXISTS %I ON %s', previous.check_trigger, tab);
        END IF;
    END IF;
    EXECUTE format('DROP TRIGGER IF EXISTS %I ON %s', trig, tab);
    EXECUTE format('DROP TRIGGER IF EXISTS %I ON %s', check_trig, tab);
    EXECUTE format('DROP TRIGGER IF EXISTS %I ON %s', marker, tab);
    EXECUTE format('CREATE TRIGGER %I BEFORE INSERT OR UPDATE ON %s FOR EACH ROW '
                   'EXECUTE FUNCTION @schema@.%I()', trig, tab, fn);
    -- The statement's refusals are recorded at its end: on the table and each partition (a
    -- statement on a partition fires that partition's statement triggers only).
    FOR part IN SELECT tab UNION SELECT t.relid FROM pg_partition_tree(tab) t LOOP
        EXECUTE format('DROP TRIGGER IF EXISTS %I ON %s', flush, part);
        -- Its condition, read before anything is queued, spares the statements without a
        -- refusal a call.
        EXECUTE format('CREATE TRIGGER %I AFTER INSERT OR UPDATE ON %s FOR EACH STATEMENT '
                       'WHEN (pg_catalog.current_setting(%L, true) = %L) '
                       'EXECUTE FUNCTION @schema@.flush_refusals()', flush, part,
                       @schema_literal@ || '.noted', 'on');
    END LOOP;
    IF generation = 'stated' THEN
        -- Only where the fence cannot tell otherwise: a token that changed was set by the
        -- statement, and a transaction's stated generation makes the column's irrelevant.
        EXECUTE format('CREATE TRIGGER %I BEFORE UPDATE OF %I ON %s FOR EACH ROW '
                       'WHEN (NEW.%I IS NOT DISTINCT FROM OLD.%I AND '
                       'coalesce(pg_catalog.current_setting(%L, true), %L) = %L) '
                       'EXECUTE FUNCTION @schema@.mark_token_named(%L)', marker, token_column,
                       tab, token_column, token_column, @schema_literal@ || '.token', '', '',
                       @schema_literal@ || '.token_named');
    ELSE
        marker := NULL;
    END IF;
    IF NOT @schema@.ddl_guarded() THEN
        EXECUTE format('CREATE TRIGGER %I BEFORE INSERT OR UPDATE ON %s FOR EACH STATEMENT '
                       'EXECUTE FUNCTION @schema@.precheck(%L, %L)', check_trig, tab, trig, kind);
    ELSE
        check_trig := NULL;
    END IF;
    INSERT INTO @schema@.protected (table_name, token_column, scope_column, scope, op_column,
                                    owner_column, lease, trigger_name, function_name,
                                    check_trigger, table_text, generation, marker_trigger,
                                    flush_trigger)
    VALUES (tab, token_column, scope_column, scope, op_column, owner_column, lease, trig, fn,
            check_trig, tab::text, generation, marker, flush)
    ON CONFLICT (table_name) DO UPDATE SET token_column = excluded.token_column,
        scope_column = excluded.scope_column, scope = excluded.scope,
        op_column = excluded.op_column, owner_column = excluded.owner_column,
        lease = excluded.lease, trigger_name = excluded.trigger_name,
        function_name = excluded.function_name, check_trigger = excluded.check_trigger,
        table_text = excluded.table_text, generation = excluded.generation,
        marker_trigger = excluded.marker_trigger, flush_trigger = excluded.flush_trigger;
END
$$;

-- Removes exactly what protect() added to `tab`, or the record of a table of its name that
-- was protected and dropped since. False when neither was protected.
CREATE OR REPLACE FUNCTION unprotect(tab regclass) RETURNS boolean LANGUAGE plpgsql
SET search_path FROM CURRENT
AS $$
DECLARE
    p    @schema@.protected%ROWTYPE;
    part regclass;
BEGIN
    SELECT * INTO p FROM @schema@.protected WHERE table_name = tab;
    IF NOT FOUND THEN
        RETURN @schema@.unprotect_dropped(tab::text);
    END IF;
    EXECUTE format('DROP TRIGGER IF EXISTS %I ON %s', p.trigger_name, tab);
    IF p.check_trigger IS NOT NULL THEN
        EXECUTE format('DROP TRIGGER IF EXISTS %I ON %s', p.check_trigger, tab);
    END IF;
    IF p.marker_trigger IS NOT NULL THEN
        EXECUTE format('DROP TRIGGER IF EXISTS %I ON %s', p.marker_trigger, tab);
    END IF;
    IF p.flush_trigger IS NOT NULL THEN
        FOR part IN SELECT tab UNION SELECT t.relid FROM pg_partition_tree(tab) t LOOP
            EXECUTE format('DROP TRIGGER IF EXISTS %I ON %s', p.flush_trigger, part);
        END LOOP;
    END IF;
    EXECUTE format('DROP FUNCTION IF EXISTS @schema@.%I()', p.function_name);
    DELETE FROM @schema@.protected WHERE table_name = tab;
    RETURN true;
END
$$;

-- Forgets the record of the protected table named `name` (schema-qualified as protect()
-- recorded it) that was dropped since, and its trigger function. False when there is none.
CREATE FUNCTION unprotect_dropped(name text) RETURNS boolean LANGUAGE plpgsql
SET search_path FROM CURRENT
AS $$
DECLARE
    p       @schema@.protected%ROWTYPE;
    removed boolean := false;
BEGIN
    FOR p IN SELECT * FROM @schema@.protected q
              WHERE q.table_text = name
                AND NOT EXISTS (SELECT 1 FROM pg_class c WHERE c.oid = q.table_name) LOOP
        EXECUTE format('DROP FUNCTION IF EXISTS @schema@.%I()', p.function_name);
        DELETE FROM @schema@.protected q WHERE q.table_name = p.table_name;
        removed := true;
    END LOOP;
    RETURN removed;
END
$$;

-- Sets scope `p_scope`'s highest accepted generation to `p_to` (the way back from a runaway
-- token), appended to the scope's chain as outcome `reset` with the role that reset it as
-- owner and `p_reason` as detail, under the scope's lock (pending refusals chained first).
-- `previous` is the highest before. Run by `fencewatch fence reset` as the fence's owner; no
-- one else may call it.
CREATE FUNCTION reset(p_scope text, p_to bigint, p_reason text, OUT previous bigint,
                      OUT row_id bigint)
LANGUAGE plpgsql
SET search_path FROM CURRENT
AS $$
DECLARE
    head     bigint;
    prev     bytea;
    now_at   timestamptz;
    new_hash bytea;
    who      text := current_user;
BEGIN
    IF p_to IS NULL OR p_to < 1 THEN
        RAISE EXCEPTION 'FW400: reset to a positive generation, not %', coalesce(p_to::text, 'NULL')
            USING ERRCODE = 'FW400';
    END IF;
    IF p_reason IS NULL OR p_reason = '' THEN
        RAISE EXCEPTION 'FW400: say why the scope is reset' USING ERRCODE = 'FW400';
    END IF;
    SELECT s.highest_token, s.head_seq, s.head_hash INTO previous, head, prev
      FROM @schema@.scopes s WHERE s.scope = p_scope FOR UPDATE;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'FW400: no scope % in this fence', p_scope USING ERRCODE = 'FW400';
    END IF;
    SELECT d.p_seq, d.p_hash INTO head, prev FROM @schema@.drain(p_scope, head, prev) d;
    now_at := pg_catalog.clock_timestamp();
    new_hash := @schema@.row_hash(head + 1, now_at, p_scope, 'reset', p_to, p_to, NULL, who,
                                  NULL, p_reason, NULL, prev);
    INSERT INTO @schema@.audit (at, seq, highest_token, token, resource, outcome,
                                idempotency_key, owner, lease, detail, table_name, prev_hash,
                                hash)
    VALUES (now_at, head + 1, p_to, p_to, p_scope, 'reset', NULL, who, NULL, p_reason, NULL,
            prev, new_hash)
    RETURNING id INTO row_id;
    UPDATE @schema@.scopes
       SET highest_token = p_to, head_seq = head + 1, head_hash = new_hash, updated_at = now_at
     WHERE scope = p_scope;
END
$$;

REVOKE ALL ON ALL FUNCTIONS IN SCHEMA @schema@ FROM PUBLIC;
REVOKE ALL ON ALL TABLES IN SCHEMA @schema@ FROM PUBLIC;
