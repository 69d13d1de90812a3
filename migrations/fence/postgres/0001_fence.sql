-- The fence in the user's own PostgreSQL database, version 1: the scopes, the audit, operation
-- ids and the guard call. Applied by fencewatch's own runner (src/owndb/migrate.rs), which
-- writes the fence's schema, quoted, wherever this text says @schema@, and runs it with
-- search_path set to that schema alone (then pg_temp), so every table here lands in it.
--
-- Functions: the entry points (fence(), protect(), unprotect(), the generated trigger functions,
-- status's probe and prune_operations()) are SECURITY DEFINER with their search path fixed to
-- the schema then pg_temp (`SET search_path FROM CURRENT`): whatever the caller's search path,
-- everything below them resolves there, and pg_catalog comes first. The internal functions
-- (settle, decide, drain, guard, refuse, refuse_autonomously, row_hash) carry no SET, which
-- would stop PostgreSQL from inlining row_hash and cost a GUC switch on every call; they name
-- the fence's objects by schema and pg_catalog's functions by pg_catalog, and nobody but the
-- owner may call them.

CREATE TABLE settings (
    name  text PRIMARY KEY,
    value text NOT NULL
);
INSERT INTO settings (name, value) VALUES
    ('operation_retention', '24 hours'),
    ('lease_schema', 'public');

-- One row per scope: its highest accepted generation and the head of its audit chain (the last
-- row's seq and hash). Its row lock serializes every decision on the scope and is held until
-- the deciding transaction ends; each decision locks it once and updates it once. Only `scope`
-- is indexed and half of each page is left free, so that update stays on its page (HOT): no
-- index entry, no new page.
CREATE TABLE scopes (
    scope          text PRIMARY KEY CHECK (scope <> ''),
    highest_token  bigint NOT NULL CHECK (highest_token >= 0),
    head_seq       bigint NOT NULL CHECK (head_seq >= 0),
    head_hash      bytea  NOT NULL CHECK (octet_length(head_hash) = 32),
    updated_at     timestamptz NOT NULL
) WITH (fillfactor = 50);

-- One row per attempt, hash-chained per scope (seq from 1; prev_hash is the scope's previous
-- row's hash, 32 zero bytes for the first). Only the id is indexed: its entries go to the right
-- edge of the index. The chain's head is kept in the scope's row, which the appender holds
-- locked, so no index on (resource, seq) is needed to find it.
CREATE TABLE audit (
    id               bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    at               timestamptz NOT NULL,
    seq              bigint NOT NULL,
    highest_token    bigint NOT NULL,
    token            bigint,
    resource         text   NOT NULL,
    outcome          text   NOT NULL,
    idempotency_key  text,
    owner            text,
    lease            text,
    detail           text,
    table_name       text,
    prev_hash        bytea  NOT NULL,
    hash             bytea  NOT NULL
);

-- Refusals decided by a transaction that held the scope itself (it had decided on the scope
-- before, uncommitted), recorded by the loopback session, which could not chain them after rows
-- it cannot see. The next decision on the scope, holding its lock, moves them into the audit
-- first, in the order they were decided.
CREATE TABLE pending (
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
CREATE INDEX pending_by_scope ON pending (resource, id);

-- Operation ids applied, for replay: one per (scope, op_id), moved to the newer generation when
-- the same id is applied again under it. A record older than `operation_retention` is ignored
-- (and deleted by prune_operations()).
CREATE TABLE operations (
    scope       text   NOT NULL,
    op_id       text   NOT NULL,
    token       bigint NOT NULL,
    applied_at  timestamptz NOT NULL,
    PRIMARY KEY (scope, op_id)
);
CREATE INDEX operations_by_age ON operations (applied_at);

-- The hash of one audit row: SHA-256 of the JSON array ["fencewatch-fence-v1", seq, at in
-- microseconds, resource, outcome, token, highest_token, idempotency_key, owner, lease, detail,
-- table_name, prev_hash as lowercase hex], as domain::fence_audit::row_hash computes it in
-- fencewatch. One SQL expression with no SET: PostgreSQL inlines it into the statement that
-- calls it, planned once per session.
CREATE FUNCTION row_hash(seq bigint, at timestamptz, resource text, outcome text, token bigint,
                         highest_token bigint, idempotency_key text, owner text, lease text,
                         detail text, table_name text, prev_hash bytea)
RETURNS bytea LANGUAGE sql STABLE PARALLEL SAFE
AS $$
    SELECT pg_catalog.sha256(pg_catalog.convert_to(
        '["fencewatch-fence-v1",' || seq || ','
        || (pg_catalog.date_part('epoch', at) * 1000000)::bigint
        || ',' || pg_catalog.to_json(resource) || ',' || pg_catalog.to_json(outcome)
        || ',' || coalesce(token::text, 'null') || ',' || highest_token
        || ',' || coalesce(pg_catalog.to_json(idempotency_key)::text, 'null')
        || ',' || coalesce(pg_catalog.to_json(owner)::text, 'null')
        || ',' || coalesce(pg_catalog.to_json(lease)::text, 'null')
        || ',' || coalesce(pg_catalog.to_json(detail)::text, 'null')
        || ',' || coalesce(pg_catalog.to_json(table_name)::text, 'null')
        || ',"' || pg_catalog.encode(prev_hash, 'hex') || '"]', 'UTF8'))
$$;

-- Decides one attempt on a scope whose highest accepted generation is `p_highest` (its row
-- locked by the caller): accepted, replayed (this op_id applied under this generation within
-- the retention), unauthorized / superseded (against `p_lease`), stale or invalid. Writes
-- nothing.
CREATE FUNCTION decide(p_highest bigint, p_scope text, p_token bigint, p_op_id text,
                       p_lease text, OUT outcome text, OUT detail text)
LANGUAGE plpgsql
AS $$
DECLARE
    recorded_token bigint;
    lease_token    bigint;
    lease_expires  bigint;
    lease_released bigint;
    lease_schema   text;
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
            -- FOR SHARE: the daemon cannot issue a newer generation of the lease until this
            -- transaction ends, so what is decided here stays true to its commit.
            EXECUTE pg_catalog.format('SELECT l.token, l.expires_at_us, l.released_at_us '
                                      'FROM %I.leases l WHERE l.name = $1 FOR SHARE',
                                      lease_schema)
               INTO lease_token, lease_expires, lease_released USING p_lease;
        EXCEPTION WHEN undefined_table OR invalid_schema_name THEN
            outcome := 'invalid';
            detail := pg_catalog.format('no fencewatch leases table in schema %s of this database',
                                        lease_schema);
            RETURN;
        END;
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

-- Moves the scope's pending refusals into its chain after (p_seq, p_hash), in the order they
-- were decided; the caller holds the scope's lock and writes the returned head to the scope.
CREATE FUNCTION drain(p_scope text, INOUT p_seq bigint, INOUT p_hash bytea)
LANGUAGE plpgsql
AS $$
DECLARE
    p        record;
    new_hash bytea;
BEGIN
    FOR p IN SELECT * FROM @schema@.pending WHERE resource = p_scope ORDER BY id LOOP
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

-- Decides one attempt on a scope and records it: appends the audit row and updates the scope's
-- row (highest, chain head) in one statement, whose row lock on the scope is held until the
-- caller's transaction ends; an accepted op_id is recorded for replay. The scope is read first
-- without a lock and the update made only if its head is still the one read (any decision
-- moves it): nearly always it is, and the decision costs no separate lock (and no lock record
-- in the WAL). If it moved, or the scope has pending refusals to chain first, the scope is
-- locked (SELECT ... FOR UPDATE) and read again before deciding. A missing scope is created
-- (INSERT ... ON CONFLICT) only when the read finds none.
-- `p_record_accepted` / `p_record_refused` say which outcomes are recorded here (accepted and
-- replayed count as accepted); the others are only returned, with what a refusal recorded
-- elsewhere needs: the highest generation and the chain head the caller saw.
CREATE FUNCTION settle(p_scope text, p_token bigint, p_op_id text, p_owner text, p_lease text,
                       p_table text, p_record_accepted boolean, p_record_refused boolean,
                       OUT outcome text, OUT highest bigint, OUT detail text, OUT head bigint,
                       OUT row_id bigint)
LANGUAGE plpgsql
AS $$
DECLARE
    prev        bytea;
    seen        bigint;
    has_pending boolean;
    locked      boolean := false;
    now_at      timestamptz;
    new_highest bigint;
    new_hash    bytea;
BEGIN
    LOOP
        IF locked THEN
            SELECT s.highest_token, s.head_seq, s.head_hash,
                   EXISTS (SELECT 1 FROM @schema@.pending p WHERE p.resource = s.scope)
              INTO highest, head, prev, has_pending
              FROM @schema@.scopes s WHERE s.scope = p_scope FOR UPDATE OF s;
        ELSE
            SELECT s.highest_token, s.head_seq, s.head_hash,
                   EXISTS (SELECT 1 FROM @schema@.pending p WHERE p.resource = s.scope)
              INTO highest, head, prev, has_pending
              FROM @schema@.scopes s WHERE s.scope = p_scope;
        END IF;
        IF NOT FOUND THEN
            INSERT INTO @schema@.scopes AS s (scope, highest_token, head_seq, head_hash,
                                              updated_at)
            VALUES (p_scope, 0, 0,
                    '\x0000000000000000000000000000000000000000000000000000000000000000',
                    pg_catalog.clock_timestamp())
            ON CONFLICT (scope) DO NOTHING
            RETURNING s.highest_token, s.head_seq, s.head_hash,
                      EXISTS (SELECT 1 FROM @schema@.pending p WHERE p.resource = s.scope)
                 INTO highest, head, prev, has_pending;
            -- Not inserted: created meanwhile by another transaction, committed by now.
            CONTINUE WHEN NOT FOUND;
            -- Inserted: this transaction holds the new row.
            locked := true;
        END IF;
        IF has_pending AND NOT locked THEN
            locked := true;
            CONTINUE;
        END IF;
        seen := head;
        IF p_op_id IS NULL AND p_lease IS NULL AND p_token >= 1 THEN
            -- The common case, decided here without a call; decide() says the same.
            IF p_token < highest THEN
                outcome := 'stale';
                detail := pg_catalog.format('generation %s is below %s, the highest accepted',
                                            p_token, highest);
            ELSE
                outcome := 'accepted';
                detail := NULL;
            END IF;
        ELSE
            SELECT d.outcome, d.detail INTO outcome, detail
              FROM @schema@.decide(highest, p_scope, p_token, p_op_id, p_lease) d;
        END IF;
        IF outcome IN ('accepted', 'replayed') AND NOT p_record_accepted
           OR outcome NOT IN ('accepted', 'replayed') AND NOT p_record_refused THEN
            RETURN;
        END IF;
        IF has_pending THEN
            SELECT d.p_seq, d.p_hash INTO head, prev FROM @schema@.drain(p_scope, head, prev) d;
        END IF;
        new_highest := CASE WHEN outcome = 'accepted' AND p_token > highest THEN p_token
                            ELSE highest END;
        now_at := pg_catalog.clock_timestamp();
        new_hash := @schema@.row_hash(head + 1, now_at, p_scope, outcome, p_token, new_highest,
                                      p_op_id, p_owner, p_lease, detail, p_table, prev);
        WITH moved AS (
            UPDATE @schema@.scopes
               SET highest_token = new_highest, head_seq = head + 1, head_hash = new_hash,
                   updated_at = now_at
             WHERE scope = p_scope AND head_seq = seen
            RETURNING 1
        )
        INSERT INTO @schema@.audit (at, seq, highest_token, token, resource, outcome,
                                    idempotency_key, owner, lease, detail, table_name,
                                    prev_hash, hash)
        SELECT now_at, head + 1, new_highest, p_token, p_scope, outcome, p_op_id, p_owner,
               p_lease, detail, p_table, prev, new_hash
          FROM moved
        RETURNING id INTO row_id;
        IF FOUND THEN
            EXIT;
        END IF;
        -- Another decision came between the read and the update: decide again under the lock.
        locked := true;
    END LOOP;
    head := head + 1;
    highest := new_highest;
    IF outcome = 'accepted' AND p_op_id IS NOT NULL THEN
        INSERT INTO @schema@.operations AS o (scope, op_id, token, applied_at)
             VALUES (p_scope, p_op_id, p_token, now_at)
        ON CONFLICT (scope, op_id) DO UPDATE
            SET token = excluded.token, applied_at = excluded.applied_at;
    END IF;
END
$$;

-- Run by the loopback session (dblink, its own transaction, committed when it returns) for a
-- caller whose decision `p_outcome` was a refusal, taken with the scope's chain head at
-- `p_caller_head` and rolled back, lock and all, so that this session can lock the scope. Locks
-- the scope, decides again on its current state and, if that is still a refusal, appends it:
-- `outcome` and `detail` are then the refusal recorded, `row_id` its row. NULL `outcome`: it is
-- no longer a refusal (a lease issued this generation meanwhile) and nothing was recorded.
-- A caller whose own transaction has decided on the scope before holds its row to the end and
-- saw rows this session cannot see (a head above the committed one): its refusal is then kept
-- as decided in `pending` (`deferred`), and the next decision on the scope chains it.
CREATE FUNCTION refuse(p_caller_head bigint, p_scope text, p_token bigint, p_op_id text,
                       p_owner text, p_lease text, p_table text, p_outcome text,
                       p_highest bigint, p_detail text, OUT outcome text, OUT detail text,
                       OUT row_id bigint, OUT deferred boolean)
LANGUAGE plpgsql
AS $$
DECLARE
    committed_head bigint;
    d              record;
BEGIN
    SELECT s.head_seq INTO committed_head FROM @schema@.scopes s WHERE s.scope = p_scope;
    IF coalesce(committed_head, 0) < p_caller_head THEN
        INSERT INTO @schema@.pending AS p (at, resource, outcome, token, highest_token,
                                           idempotency_key, owner, lease, detail, table_name)
        VALUES (pg_catalog.clock_timestamp(), p_scope, p_outcome, p_token, p_highest, p_op_id,
                p_owner, p_lease, p_detail, p_table)
        RETURNING p.id INTO row_id;
        outcome := p_outcome;
        detail := p_detail;
        deferred := true;
        RETURN;
    END IF;
    d := @schema@.settle(p_scope, p_token, p_op_id, p_owner, p_lease, p_table, false, true);
    deferred := false;
    IF d.outcome NOT IN ('accepted', 'replayed') THEN
        outcome := d.outcome;
        detail := d.detail;
        row_id := d.row_id;
    END IF;
END
$$;

-- A refusal recorded by a session of its own (dblink, through the foreign server named in
-- settings), committed there, so that it stays in the audit when the caller's transaction rolls
-- back, as a refused guard call's does: the verdict refuse() returns. The dblink functions are
-- called through the schema dblink was found in at install, never through a search path.
-- `problem` says why nothing could be recorded (no dblink, no loopback server, the connection
-- refused, a lock not had in time); the caller's verdict then stands unrecorded.
CREATE FUNCTION refuse_autonomously(p_caller_head bigint, p_scope text, p_token bigint,
                                    p_op_id text, p_owner text, p_lease text, p_table text,
                                    p_outcome text, p_highest bigint, p_detail text,
                                    OUT outcome text, OUT detail text, OUT row_id bigint,
                                    OUT deferred boolean, OUT problem text)
LANGUAGE plpgsql
AS $$
DECLARE
    link       constant text := @schema_literal@ || '_audit';
    dblink_at  text;
    server     text;
    open_links text[];
    query      text;
BEGIN
    SELECT s.value INTO dblink_at FROM @schema@.settings s WHERE s.name = 'dblink_schema';
    SELECT s.value INTO server FROM @schema@.settings s WHERE s.name = 'loopback_server';
    IF dblink_at IS NULL OR server IS NULL THEN
        problem := 'the fence has no dblink loopback (see fencewatch fence status)';
        RETURN;
    END IF;
    query := pg_catalog.format(
        'SELECT r.outcome, r.detail, r.row_id, r.deferred '
        'FROM @schema@.refuse(%L, %L, %L, %L, %L, %L, %L, %L, %L, %L) r',
        p_caller_head, p_scope, p_token, p_op_id, p_owner, p_lease, p_table, p_outcome,
        p_highest, p_detail);
    FOR attempt IN 1..2 LOOP
        BEGIN
            EXECUTE pg_catalog.format('SELECT %I.dblink_get_connections()', dblink_at)
               INTO open_links;
            IF open_links IS NULL OR NOT (link = ANY (open_links)) THEN
                EXECUTE pg_catalog.format('SELECT %I.dblink_connect(%L, %L)', dblink_at, link,
                                          server);
                -- A wait longer than this is on a transaction that waits for this one's
                -- caller (a cycle PostgreSQL cannot see through dblink): give up the record.
                -- The search path is pg_catalog's alone: refuse() and what it calls name
                -- everything else by schema.
                EXECUTE pg_catalog.format('SELECT %I.dblink_exec(%L, %L)', dblink_at, link,
                                          'SET lock_timeout = ''5s''; '
                                          'SET search_path = pg_catalog, pg_temp');
            END IF;
            EXECUTE pg_catalog.format(
                'SELECT r.outcome, r.detail, r.row_id, r.deferred FROM %I.dblink(%L, %L) '
                'AS r(outcome text, detail text, row_id bigint, deferred boolean)',
                dblink_at, link, query)
               INTO outcome, detail, row_id, deferred;
            problem := NULL;
            RETURN;
        EXCEPTION WHEN OTHERS THEN
            problem := SQLERRM;
            -- A session that went away (a restart, a timeout) is opened again once.
            BEGIN
                EXECUTE pg_catalog.format('SELECT %I.dblink_disconnect(%L)', dblink_at, link);
            EXCEPTION WHEN OTHERS THEN
                NULL;
            END;
        END;
    END LOOP;
END
$$;

-- The guard, for fence() and for a protected table's row with no positive token: decides in a
-- subtransaction that holds the scope's lock; accepted or replayed, that subtransaction is kept
-- (lock and records) and the outcome returned. A refusal leaves it by a private exception,
-- which rolls it back and so releases the lock; the loopback session then locks the scope
-- itself, decides again and records the refusal, and its verdict is raised: FW409 (stale,
-- superseded), FW403 (unauthorized) or FW400 (invalid), the SQLSTATE and the message's start.
-- If the loopback's decision is no longer a refusal, everything is decided again from the start.
CREATE FUNCTION guard(p_scope text, p_token bigint, p_op_id text, p_owner text, p_lease text,
                      p_table text)
RETURNS text LANGUAGE plpgsql
AS $$
DECLARE
    d       record;
    v       record;
    verdict text;
    why     text;
    code    text;
BEGIN
    LOOP
        BEGIN
            d := @schema@.settle(p_scope, p_token, p_op_id, p_owner, p_lease, p_table, true,
                                 false);
            IF d.outcome IN ('accepted', 'replayed') THEN
                RETURN d.outcome;
            END IF;
            RAISE EXCEPTION 'refused' USING ERRCODE = 'FWXRF';
        EXCEPTION WHEN SQLSTATE 'FWXRF' THEN
            NULL;
        END;
        v := @schema@.refuse_autonomously(d.head, p_scope, p_token, p_op_id, p_owner, p_lease,
                                          p_table, d.outcome, d.highest, d.detail);
        EXIT WHEN v.problem IS NOT NULL OR v.outcome IS NOT NULL;
    END LOOP;
    verdict := coalesce(v.outcome, d.outcome);
    why := coalesce(v.detail, d.detail);
    code := CASE verdict WHEN 'invalid' THEN 'FW400' WHEN 'unauthorized' THEN 'FW403'
                         ELSE 'FW409' END;
    RAISE EXCEPTION '%: %', code, why USING ERRCODE = code,
        DETAIL = CASE
            WHEN v.problem IS NOT NULL THEN
                pg_catalog.format('outcome %s; not recorded in the audit: %s', verdict, v.problem)
            WHEN v.deferred THEN
                pg_catalog.format('outcome %s; pending refusal %s: this transaction decided on '
                                  'the scope before, and the next decision on the scope appends '
                                  'it to the audit', verdict, v.row_id)
            ELSE pg_catalog.format('outcome %s; audit row %s', verdict, v.row_id) END;
END
$$;

-- The guard call, made in the caller's transaction before its effect: `accepted` (go on),
-- `replayed` (this op_id was applied under this generation: skip the effect), or an error whose
-- SQLSTATE and message start with FW409 (stale, superseded), FW403 (a generation the lease never
-- issued) or FW400 (no scope, no positive token). A refusal is recorded autonomously, so it
-- stays in the audit when the caller rolls back. The scope's row lock is held to the caller's
-- commit.
CREATE FUNCTION fence(scope text, token bigint, op_id text DEFAULT NULL, owner text DEFAULT NULL,
                      lease text DEFAULT NULL)
RETURNS text LANGUAGE plpgsql SECURITY DEFINER
SET search_path FROM CURRENT
AS $$
BEGIN
    IF scope IS NULL OR scope = '' THEN
        RAISE EXCEPTION 'FW400: the scope must be a non-empty text' USING ERRCODE = 'FW400';
    END IF;
    RETURN @schema@.guard(scope, token, op_id, owner, lease, NULL);
END
$$;

-- Whether a refusal can be recorded autonomously, tried for real: opens the loopback session
-- and closes it again. NULL when it works, else why not.
CREATE FUNCTION autonomous_audit_problem() RETURNS text LANGUAGE plpgsql SECURITY DEFINER
SET search_path FROM CURRENT
AS $$
DECLARE
    link      constant text := @schema_literal@ || '_probe';
    dblink_at text;
    server    text;
    seen      bigint;
BEGIN
    SELECT s.value INTO dblink_at FROM @schema@.settings s WHERE s.name = 'dblink_schema';
    SELECT s.value INTO server FROM @schema@.settings s WHERE s.name = 'loopback_server';
    IF dblink_at IS NULL OR server IS NULL THEN
        RETURN coalesce((SELECT s.value FROM @schema@.settings s WHERE s.name = 'dblink_problem'),
                        'no dblink loopback was set up');
    END IF;
    BEGIN
        EXECUTE pg_catalog.format('SELECT %I.dblink_connect(%L, %L)', dblink_at, link, server);
        EXECUTE pg_catalog.format('SELECT r.n FROM %I.dblink(%L, %L) AS r(n bigint)', dblink_at,
                                  link, 'SELECT count(*) FROM @schema@.scopes WHERE false')
           INTO seen;
        EXECUTE pg_catalog.format('SELECT %I.dblink_disconnect(%L)', dblink_at, link);
        RETURN NULL;
    EXCEPTION WHEN OTHERS THEN
        BEGIN
            EXECUTE pg_catalog.format('SELECT %I.dblink_disconnect(%L)', dblink_at, link);
        EXCEPTION WHEN OTHERS THEN
            NULL;
        END;
        RETURN SQLERRM;
    END;
END
$$;

-- Deletes operation records past `operation_retention`; they are ignored already. Returns how
-- many went.
CREATE FUNCTION prune_operations() RETURNS bigint LANGUAGE sql SECURITY DEFINER
SET search_path FROM CURRENT
AS $$
    WITH gone AS (
        DELETE FROM @schema@.operations
         WHERE applied_at <= pg_catalog.clock_timestamp()
               - (SELECT s.value FROM @schema@.settings s
                   WHERE s.name = 'operation_retention')::interval
        RETURNING 1)
    SELECT count(*) FROM gone
$$;

-- Least privilege: nothing here is callable by PUBLIC. Callers of the guard are granted
-- EXECUTE on fence() and USAGE on the schema (docs/own-database.md); nobody but the owner may
-- write the fence's tables or call its internal functions, so a caller cannot lower a scope or
-- rewrite the audit.
REVOKE ALL ON ALL FUNCTIONS IN SCHEMA @schema@ FROM PUBLIC;
REVOKE ALL ON ALL TABLES IN SCHEMA @schema@ FROM PUBLIC;
