-- The unfenced write: one row, its own transaction.
\set id random(1, 1000)
BEGIN;
UPDATE bench_plain SET total = total + 1, fence_token = fence_token WHERE id = :id;
COMMIT;
