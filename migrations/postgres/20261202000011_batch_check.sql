-- A batch is applied as one statement that must change exactly what its decision was made on
-- (see the daemon's write engine). The statement hands its check to this function, which fails
-- it, and with it the whole statement and any transaction around it, when the check does not
-- hold: a concurrent commit came between. `drawn` (the audit ids the statement drew, as JSON)
-- travels in the error's detail, so the live feed need not wait to learn they will never have
-- a row.
CREATE FUNCTION fencewatch_batch_as_observed(ok boolean, drawn text) RETURNS text
LANGUAGE plpgsql AS $$
BEGIN
    IF ok IS NOT TRUE THEN
        RAISE EXCEPTION USING ERRCODE = 'FW409',
            MESSAGE = 'fencewatch: the batch is no longer as it was decided on',
            DETAIL = drawn;
    END IF;
    RETURN drawn;
END
$$;
