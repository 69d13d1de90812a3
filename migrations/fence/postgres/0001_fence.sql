-- The fence in the user's own PostgreSQL database, version 1: the scopes, the audit, operation
-- ids and the guard call. Applied by fencewatch's own runner (src/owndb/migrate.rs) with
-- search_path set to the fence's schema alone (then pg_temp), so every name here is created in
-- that schema and every function keeps that search_path (`SET search_path FROM CURRENT`).

CREATE TABLE settings (
    name  text PRIMARY KEY,
    value text NOT NULL
);
INSERT INTO settings (name, value) VALUES
    ('operation_retention', '24 hours'),
    ('lease_schema', 'public');

-- One row per scope: the highest accepted generation. Its row lock serializes every decision
-- on the scope, and is held until the deciding transaction ends.
CREATE TABLE scopes (
    scope          text PRIMARY KEY CHECK (scope <> ''),
    highest_token  bigint NOT NULL CHECK (highest_token >= 0),
    updated_at     timestamptz NOT NULL
);

-- One row per attempt, hash-chained per scope. The chain's head is the scope's last row, so an
-- append reads the index on (resource, seq) and updates nothing: an autonomous append (below)
-- never waits on a row its caller has locked.
CREATE TABLE audit (
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
    table_name       text,
    seq              bigint NOT NULL CHECK (seq >= 1),
    prev_hash        text   NOT NULL,
    hash             text   NOT NULL,
    UNIQUE (resource, seq)
);

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
-- table_name, prev_hash], as domain::fence_audit::row_hash computes it in fencewatch.
CREATE FUNCTION row_hash(seq bigint, at timestamptz, resource text, outcome text, token bigint,
                         highest_token bigint, idempotency_key text, owner text, lease text,
                         detail text, table_name text, prev_hash text)
RETURNS text LANGUAGE sql IMMUTABLE PARALLEL SAFE
SET search_path FROM CURRENT
AS $$
    SELECT encode(sha256(convert_to(
        '["fencewatch-fence-v1",' || seq || ',' || (extract(epoch FROM at) * 1000000)::bigint
        || ',' || to_json(resource) || ',' || to_json(outcome)
        || ',' || coalesce(token::text, 'null') || ',' || highest_token
        || ',' || coalesce(to_json(idempotency_key)::text, 'null')
        || ',' || coalesce(to_json(owner)::text, 'null')
        || ',' || coalesce(to_json(lease)::text, 'null')
        || ',' || coalesce(to_json(detail)::text, 'null')
        || ',' || coalesce(to_json(table_name)::text, 'null')
        || ',' || to_json(prev_hash) || ']', 'UTF8')), 'hex')
$$;

-- Appends one row to its scope's chain. Watchers find new rows by polling their ids: a
-- notification would take a database-wide lock at each commit, serializing writers. Appends to a scope are serialized by the scope's row
-- lock, which every caller holds (an autonomous append's caller holds it for it). Under
-- REPEATABLE READ a head this transaction cannot see makes the insert conflict: ON CONFLICT then
-- raises a serialization failure (40001), which the caller retries, instead of forking the
-- chain.
CREATE FUNCTION append_audit(p_scope text, p_outcome text, p_token bigint, p_highest bigint,
                             p_op_id text, p_owner text, p_lease text, p_detail text,
                             p_table text)
RETURNS bigint LANGUAGE plpgsql
SET search_path FROM CURRENT
AS $$
DECLARE
    head_seq  bigint;
    head_hash text;
    now_at    timestamptz := clock_timestamp();
    new_id    bigint;
BEGIN
    SELECT a.seq, a.hash INTO head_seq, head_hash
      FROM audit a WHERE a.resource = p_scope ORDER BY a.seq DESC LIMIT 1;
    IF NOT FOUND THEN
        head_seq := 0;
        head_hash := repeat('0', 64);
    END IF;
    INSERT INTO audit (at, resource, outcome, token, highest_token, idempotency_key, owner,
                       lease, detail, table_name, seq, prev_hash, hash)
    VALUES (now_at, p_scope, p_outcome, p_token, p_highest, p_op_id, p_owner, p_lease, p_detail,
            p_table, head_seq + 1, head_hash,
            row_hash(head_seq + 1, now_at, p_scope, p_outcome, p_token, p_highest, p_op_id,
                     p_owner, p_lease, p_detail, p_table, head_hash))
    ON CONFLICT (resource, seq) DO NOTHING
    RETURNING id INTO new_id;
    IF new_id IS NULL THEN
        RAISE EXCEPTION 'the audit of scope % moved since this transaction''s snapshot', p_scope
            USING ERRCODE = 'serialization_failure';
    END IF;
    RETURN new_id;
END
$$;

-- Run by the autonomous session on behalf of a caller that holds the scope's lock and sees
-- `p_caller_head` as the scope's last seq. A committed head below that means the caller's own
-- transaction appended to the scope and has not committed: a row here could not chain after
-- those, so nothing is appended (NULL) rather than waiting for a commit that waits for this.
CREATE FUNCTION append_audit_autonomously(p_caller_head bigint, p_scope text, p_outcome text,
                                          p_token bigint, p_highest bigint, p_op_id text,
                                          p_owner text, p_lease text, p_detail text,
                                          p_table text)
RETURNS bigint LANGUAGE plpgsql
SET search_path FROM CURRENT
AS $$
DECLARE
    committed_head bigint;
BEGIN
    SELECT coalesce(max(a.seq), 0) INTO committed_head FROM audit a WHERE a.resource = p_scope;
    IF committed_head < p_caller_head THEN
        RETURN NULL;
    END IF;
    RETURN append_audit(p_scope, p_outcome, p_token, p_highest, p_op_id, p_owner, p_lease,
                        p_detail, p_table);
END
$$;

-- A refusal's row, appended and committed by a session of its own (dblink, through the foreign
-- server named in settings), so that it stays in the audit when the caller's transaction rolls
-- back, as a refused guard call's does. The dblink functions are called through the schema
-- dblink was found in at install, never through search_path. `problem` says why nothing could
-- be appended: no dblink, no loopback server, the connection refused, or this transaction's own
-- unfinished rows on the scope.
CREATE FUNCTION append_autonomous(p_scope text, p_outcome text, p_token bigint, p_highest bigint,
                                  p_op_id text, p_owner text, p_lease text, p_detail text,
                                  p_table text, OUT id bigint, OUT problem text)
LANGUAGE plpgsql
SET search_path FROM CURRENT
AS $$
DECLARE
    link        constant text := current_schema() || '_audit';
    dblink_at   text;
    server      text;
    caller_head bigint;
    open_links  text[];
    query       text;
BEGIN
    SELECT value INTO dblink_at FROM settings WHERE name = 'dblink_schema';
    SELECT value INTO server FROM settings WHERE name = 'loopback_server';
    IF dblink_at IS NULL OR server IS NULL THEN
        problem := 'the fence has no dblink loopback (see fencewatch fence status)';
        RETURN;
    END IF;
    SELECT coalesce(max(a.seq), 0) INTO caller_head FROM audit a WHERE a.resource = p_scope;
    query := format('SELECT %I.append_audit_autonomously(%L, %L, %L, %L, %L, %L, %L, %L, %L, %L)',
                    current_schema(), caller_head, p_scope, p_outcome, p_token, p_highest,
                    p_op_id, p_owner, p_lease, p_detail, p_table);
    FOR attempt IN 1..2 LOOP
        BEGIN
            EXECUTE format('SELECT %I.dblink_get_connections()', dblink_at) INTO open_links;
            IF open_links IS NULL OR NOT (link = ANY (open_links)) THEN
                EXECUTE format('SELECT %I.dblink_connect(%L, %L)', dblink_at, link, server);
                -- The caller holds the scope's lock, so no other append can be in the way: a
                -- wait could only be on this caller, which waits for this.
                EXECUTE format('SELECT %I.dblink_exec(%L, %L)', dblink_at, link,
                               'SET lock_timeout = ''5s''');
            END IF;
            EXECUTE format('SELECT r.id FROM %I.dblink(%L, %L) AS r(id bigint)', dblink_at, link,
                           query) INTO id;
            IF id IS NULL THEN
                problem := 'this transaction has unfinished audit rows of its own on this scope';
            END IF;
            RETURN;
        EXCEPTION WHEN OTHERS THEN
            problem := SQLERRM;
            -- A session that went away (a restart, a timeout) is opened again once.
            BEGIN
                EXECUTE format('SELECT %I.dblink_disconnect(%L)', dblink_at, link);
            EXCEPTION WHEN OTHERS THEN
                NULL;
            END;
        END;
    END LOOP;
END
$$;

-- Decides one attempt on a scope, holding the scope's row lock until the caller's transaction
-- ends, and applies an accepted one (the scope's highest generation, the operation record).
-- Appends nothing: the caller records the outcome, in its transaction or autonomously.
CREATE FUNCTION judge(p_scope text, p_token bigint, p_op_id text, p_owner text, p_lease text,
                      p_table text, OUT outcome text, OUT highest bigint, OUT detail text)
LANGUAGE plpgsql
SET search_path FROM CURRENT
AS $$
DECLARE
    recorded_token bigint;
    lease_token    bigint;
    lease_expires  bigint;
    lease_released bigint;
    lease_schema   text;
    now_us         bigint := (extract(epoch FROM clock_timestamp()) * 1000000)::bigint;
BEGIN
    SELECT s.highest_token INTO highest FROM scopes s WHERE s.scope = p_scope FOR UPDATE;
    IF NOT FOUND THEN
        INSERT INTO scopes (scope, highest_token, updated_at)
             VALUES (p_scope, 0, clock_timestamp())
        ON CONFLICT (scope) DO NOTHING;
        SELECT s.highest_token INTO highest FROM scopes s WHERE s.scope = p_scope FOR UPDATE;
    END IF;
    IF p_token IS NULL OR p_token < 1 THEN
        outcome := 'invalid';
        detail := format('the token must be a positive generation, not %s',
                         coalesce(p_token::text, 'NULL'));
        RETURN;
    END IF;
    IF p_op_id IS NOT NULL THEN
        SELECT o.token INTO recorded_token FROM operations o
         WHERE o.scope = p_scope AND o.op_id = p_op_id
           AND o.applied_at > clock_timestamp()
               - (SELECT value FROM settings WHERE name = 'operation_retention')::interval;
        IF FOUND AND recorded_token = p_token THEN
            outcome := 'replayed';
            detail := format('operation %s was applied under generation %s', p_op_id, p_token);
            RETURN;
        END IF;
    END IF;
    IF p_lease IS NOT NULL THEN
        SELECT value INTO lease_schema FROM settings WHERE name = 'lease_schema';
        BEGIN
            -- FOR SHARE: the daemon cannot issue a newer generation of the lease until this
            -- transaction ends, so what is decided here stays true to its commit.
            EXECUTE format('SELECT token, expires_at_us, released_at_us FROM %I.leases '
                           'WHERE name = $1 FOR SHARE', lease_schema)
               INTO lease_token, lease_expires, lease_released USING p_lease;
        EXCEPTION WHEN undefined_table OR invalid_schema_name THEN
            outcome := 'invalid';
            detail := format('no fencewatch leases table in schema %s of this database',
                             lease_schema);
            RETURN;
        END;
        IF lease_token IS NULL OR p_token > lease_token THEN
            outcome := 'unauthorized';
            detail := format('generation %s was never issued by lease %s', p_token, p_lease);
            RETURN;
        ELSIF p_token < lease_token THEN
            outcome := 'superseded';
            detail := format('generation %s of lease %s was superseded by %s', p_token, p_lease,
                             lease_token);
            RETURN;
        ELSIF lease_released IS NOT NULL OR lease_expires <= now_us THEN
            detail := format('lease %s had lapsed', p_lease);
        END IF;
    END IF;
    IF p_token < highest THEN
        outcome := 'stale';
        detail := format('generation %s is below %s, the highest accepted', p_token, highest);
        RETURN;
    END IF;
    IF p_token > highest THEN
        UPDATE scopes SET highest_token = p_token, updated_at = clock_timestamp()
         WHERE scope = p_scope;
        highest := p_token;
    END IF;
    IF p_op_id IS NOT NULL THEN
        INSERT INTO operations (scope, op_id, token, applied_at)
             VALUES (p_scope, p_op_id, p_token, clock_timestamp())
        ON CONFLICT (scope, op_id) DO UPDATE
            SET token = excluded.token, applied_at = excluded.applied_at;
    END IF;
    outcome := 'accepted';
END
$$;

-- The guard call, made in the caller's transaction before its effect: `accepted` (go on),
-- `replayed` (this op_id was applied under this generation: skip the effect), or an error whose
-- SQLSTATE and message start with FW409 (stale, superseded), FW403 (a generation the lease never
-- issued) or FW400 (no scope, no positive token). A refusal is appended autonomously, so it
-- stays in the audit when the caller rolls back.
CREATE FUNCTION fence(scope text, token bigint, op_id text DEFAULT NULL, owner text DEFAULT NULL,
                      lease text DEFAULT NULL)
RETURNS text LANGUAGE plpgsql SECURITY DEFINER
SET search_path FROM CURRENT
AS $$
DECLARE
    d         record;
    code      text;
    recorded  record;
BEGIN
    IF scope IS NULL OR scope = '' THEN
        RAISE EXCEPTION 'FW400: the scope must be a non-empty text' USING ERRCODE = 'FW400';
    END IF;
    d := judge(scope, token, op_id, owner, lease, NULL);
    IF d.outcome IN ('accepted', 'replayed') THEN
        PERFORM append_audit(scope, d.outcome, token, d.highest, op_id, owner, lease, d.detail,
                             NULL);
        RETURN d.outcome;
    END IF;
    recorded := append_autonomous(scope, d.outcome, token, d.highest, op_id, owner, lease,
                                  d.detail, NULL);
    code := CASE d.outcome WHEN 'invalid' THEN 'FW400' WHEN 'unauthorized' THEN 'FW403'
                           ELSE 'FW409' END;
    IF recorded.id IS NULL THEN
        RAISE EXCEPTION '%: %', code, d.detail USING ERRCODE = code,
            DETAIL = format('outcome %s; not recorded in the audit: %s', d.outcome,
                            recorded.problem);
    END IF;
    RAISE EXCEPTION '%: %', code, d.detail USING ERRCODE = code,
        DETAIL = format('outcome %s; audit row %s', d.outcome, recorded.id);
END
$$;

-- Whether a refusal can be appended autonomously, tried for real: opens the loopback session
-- and closes it again. NULL when it works, else why not.
CREATE FUNCTION autonomous_audit_problem() RETURNS text LANGUAGE plpgsql SECURITY DEFINER
SET search_path FROM CURRENT
AS $$
DECLARE
    link      constant text := current_schema() || '_probe';
    dblink_at text;
    server    text;
    seen      bigint;
BEGIN
    SELECT value INTO dblink_at FROM settings WHERE name = 'dblink_schema';
    SELECT value INTO server FROM settings WHERE name = 'loopback_server';
    IF dblink_at IS NULL OR server IS NULL THEN
        RETURN coalesce((SELECT value FROM settings WHERE name = 'dblink_problem'),
                        'no dblink loopback was set up');
    END IF;
    BEGIN
        EXECUTE format('SELECT %I.dblink_connect(%L, %L)', dblink_at, link, server);
        EXECUTE format('SELECT r.n FROM %I.dblink(%L, %L) AS r(n bigint)', dblink_at, link,
                       format('SELECT count(*) FROM %I.scopes WHERE false', current_schema()))
           INTO seen;
        EXECUTE format('SELECT %I.dblink_disconnect(%L)', dblink_at, link);
        RETURN NULL;
    EXCEPTION WHEN OTHERS THEN
        BEGIN
            EXECUTE format('SELECT %I.dblink_disconnect(%L)', dblink_at, link);
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
        DELETE FROM operations
         WHERE applied_at <= clock_timestamp()
               - (SELECT value FROM settings WHERE name = 'operation_retention')::interval
        RETURNING 1)
    SELECT count(*) FROM gone
$$;

-- Least privilege: nothing here is callable by PUBLIC. Callers of the guard are granted
-- EXECUTE on fence() and USAGE on the schema (docs/own-database.md); nobody but the owner may
-- write the fence's tables, so a caller cannot lower a scope or rewrite the audit.
DO $$
BEGIN
    EXECUTE format('REVOKE ALL ON ALL FUNCTIONS IN SCHEMA %I FROM PUBLIC', current_schema());
    EXECUTE format('REVOKE ALL ON ALL TABLES IN SCHEMA %I FROM PUBLIC', current_schema());
END
$$;
