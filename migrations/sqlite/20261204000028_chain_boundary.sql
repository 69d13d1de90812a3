-- Only rows written before the audit was chained (migration 5) may lack a place in a chain
-- (`seq`). What an upgraded database held of them is recorded here, once: the highest id of
-- an unchained row when this migration ran (0 when there was none). `audit verify` counts
-- unchained rows at or below it and reports any above it as added outside fencewatch.
CREATE TABLE audit_chain_boundary (
    id                  INTEGER PRIMARY KEY CHECK (id = 1),
    last_unchained_id   INTEGER NOT NULL CHECK (last_unchained_id >= 0)
);

-- The rows without a position: none are written any more, so the index stays empty and costs
-- a write nothing; it lets every verify find rows added outside fencewatch without a scan.
CREATE INDEX audit_unchained ON audit (id) WHERE seq IS NULL;

INSERT INTO audit_chain_boundary (id, last_unchained_id)
SELECT 1, coalesce(max(id), 0) FROM audit WHERE seq IS NULL;
