-- The batch check of 20261202000011 for batches whose rows travel as typed arrays: the audit
-- ids the statement drew as an array, and in the error's detail as numbers separated by
-- commas. The function of 20261202000011 stays for daemons of the build before, which may share
-- this database during an upgrade.
CREATE FUNCTION fencewatch_batch_checked(ok boolean, drawn bigint[]) RETURNS bigint[]
LANGUAGE plpgsql AS $$
BEGIN
    IF ok IS NOT TRUE THEN
        RAISE EXCEPTION USING ERRCODE = 'FW409',
            MESSAGE = 'fencewatch: the batch is no longer as it was decided on',
            DETAIL = array_to_string(drawn, ',');
    END IF;
    RETURN drawn;
END
$$;
