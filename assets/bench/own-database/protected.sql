-- The same write to the protected table: its trigger judges the row's token against its scope
-- and appends the audit row, in this transaction.
\set id random(1, 1000)
BEGIN;
UPDATE bench_fenced SET total = total + 1, fence_token = fence_token WHERE id = :id;
COMMIT;
