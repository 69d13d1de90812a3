-- Every write inserts an audit row, and every index on the audit is a page each commit must
-- write. (resource, token) served only lookups of one resource's token, which the
-- (resource, id) index answers by scanning that resource's rows; it cost each write one more
-- randomly placed page.
DROP INDEX audit_by_token;
