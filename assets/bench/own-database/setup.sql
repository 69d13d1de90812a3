SET client_min_messages = warning;
-- Two identical tables of 1,000 rows each: run.sh protects bench_fenced (one scope per row,
-- its id) and leaves bench_plain as it is, so the two transaction scripts differ only in the
-- fence. Dropped and created anew on each run.
DROP TABLE IF EXISTS bench_plain, bench_fenced;
CREATE TABLE bench_plain (
    id          integer PRIMARY KEY,
    total       bigint NOT NULL DEFAULT 0,
    fence_token bigint NOT NULL DEFAULT 1
);
CREATE TABLE bench_fenced (LIKE bench_plain INCLUDING ALL);
INSERT INTO bench_plain (id) SELECT generate_series(1, 1000);
INSERT INTO bench_fenced (id) SELECT generate_series(1, 1000);
VACUUM ANALYZE bench_plain, bench_fenced;
