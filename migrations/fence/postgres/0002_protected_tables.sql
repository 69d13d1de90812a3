-- The fence, version 2: protected tables. A protected table gets one BEFORE INSERT OR UPDATE
-- trigger whose function has the table's columns written into it; a stale write affects zero
-- rows, with its audit row appended in the writer's transaction.

CREATE TABLE protected (
    table_name    regclass PRIMARY KEY,
    token_column  text NOT NULL,
    scope_column  text,
    scope         text,
    op_column     text,
    owner_column  text,
    lease         text,
    trigger_name  text NOT NULL,
    function_name text NOT NULL,
    CHECK ((scope_column IS NULL) <> (scope IS NULL))
);

-- Protects `tab`. Changes nothing of the table but the trigger it adds; protecting it again
-- replaces the trigger with one for the new columns.
CREATE FUNCTION protect(tab regclass, token_column text, scope_column text DEFAULT NULL,
                        scope text DEFAULT NULL, op_column text DEFAULT NULL,
                        owner_column text DEFAULT NULL, lease text DEFAULT NULL)
RETURNS void LANGUAGE plpgsql
SET search_path FROM CURRENT
AS $$
DECLARE
    fn         text := format('fence_%s', tab::oid);
    trig       text := @schema_literal@ || '_fence';
    col        text;
    token_type regtype;
    scope_expr text;
BEGIN
    IF (scope_column IS NULL) = (scope IS NULL) THEN
        RAISE EXCEPTION 'FW400: give a scope column or a scope, not both'
            USING ERRCODE = 'FW400';
    END IF;
    IF scope = '' THEN
        RAISE EXCEPTION 'FW400: the scope must be a non-empty text' USING ERRCODE = 'FW400';
    END IF;
    IF NOT EXISTS (SELECT 1 FROM pg_class c WHERE c.oid = tab AND c.relkind IN ('r', 'p')) THEN
        RAISE EXCEPTION 'FW400: % is not a table', tab USING ERRCODE = 'FW400';
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
    scope_expr := CASE WHEN scope_column IS NULL THEN quote_literal(scope)
                       ELSE format('NEW.%I::text', scope_column) END;
    -- Every value written into the function's text goes through %I or %L (quote_literal): a
    -- table or column name cannot inject SQL into a SECURITY DEFINER function. A refusal is
    -- recorded in the writer's transaction and the row skipped (zero rows, no error); a row
    -- with no positive token goes through the guard, which records it autonomously and raises
    -- FW400.
    EXECUTE format($f$
        CREATE OR REPLACE FUNCTION @schema@.%1$I() RETURNS trigger LANGUAGE plpgsql
        SECURITY DEFINER SET search_path FROM CURRENT AS $body$
        DECLARE
            s text := %2$s;
            t bigint := NEW.%3$I;
        BEGIN
            IF s IS NULL OR s = '' THEN
                RAISE EXCEPTION 'FW400: a row of %% has no scope', %6$L USING ERRCODE = 'FW400';
            END IF;
            IF t IS NULL OR t < 1 THEN
                PERFORM @schema@.guard(s, t, %4$s, %5$s, %7$s, %6$L);
            END IF;
            IF (@schema@.settle(s, t, %4$s, %5$s, %7$s, %6$L, true, true)).outcome = 'accepted'
            THEN
                RETURN NEW;
            END IF;
            RETURN NULL;
        END
        $body$ $f$,
        fn, scope_expr, token_column,
        CASE WHEN op_column IS NULL THEN 'NULL' ELSE format('NEW.%I::text', op_column) END,
        CASE WHEN owner_column IS NULL THEN 'NULL' ELSE format('NEW.%I::text', owner_column) END,
        tab::text, coalesce(quote_literal(lease), 'NULL'));
    EXECUTE format('REVOKE ALL ON FUNCTION @schema@.%I() FROM PUBLIC', fn);
    EXECUTE format('DROP TRIGGER IF EXISTS %I ON %s', trig, tab);
    EXECUTE format('CREATE TRIGGER %I BEFORE INSERT OR UPDATE ON %s FOR EACH ROW '
                   'EXECUTE FUNCTION @schema@.%I()', trig, tab, fn);
    INSERT INTO @schema@.protected (table_name, token_column, scope_column, scope, op_column,
                           owner_column, lease, trigger_name, function_name)
    VALUES (tab, token_column, scope_column, scope, op_column, owner_column, lease, trig, fn)
    ON CONFLICT (table_name) DO UPDATE SET token_column = excluded.token_column,
        scope_column = excluded.scope_column, scope = excluded.scope,
        op_column = excluded.op_column, owner_column = excluded.owner_column,
        lease = excluded.lease, trigger_name = excluded.trigger_name,
        function_name = excluded.function_name;
END
$$;

-- Removes exactly what protect() added to `tab`. False when it was not protected.
CREATE FUNCTION unprotect(tab regclass) RETURNS boolean LANGUAGE plpgsql
SET search_path FROM CURRENT
AS $$
DECLARE
    p @schema@.protected%ROWTYPE;
BEGIN
    SELECT * INTO p FROM @schema@.protected WHERE table_name = tab;
    IF NOT FOUND THEN
        RETURN false;
    END IF;
    EXECUTE format('DROP TRIGGER IF EXISTS %I ON %s', p.trigger_name, tab);
    EXECUTE format('DROP FUNCTION IF EXISTS @schema@.%I()', p.function_name);
    DELETE FROM @schema@.protected WHERE table_name = tab;
    RETURN true;
END
$$;

REVOKE ALL ON ALL FUNCTIONS IN SCHEMA @schema@ FROM PUBLIC;
REVOKE ALL ON ALL TABLES IN SCHEMA @schema@ FROM PUBLIC;
