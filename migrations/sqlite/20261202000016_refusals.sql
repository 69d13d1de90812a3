-- Requests refused before the fence (no or a wrong API key, a key's scopes, a foreign origin or
-- Host, an address over its budget), aggregated: one row per interval, source (a key's name, or
-- the client's address) and reason, counted in memory and written once per interval. A flood
-- adds rows at a bounded rate however many requests it sends, and no resource row or chain head
-- is touched. Pruned with the audit (`--audit-retention`, `audit prune`).
CREATE TABLE refusals (
    id                INTEGER PRIMARY KEY,
    interval_start_us INTEGER NOT NULL,
    source_kind       TEXT    NOT NULL,
    source            TEXT    NOT NULL,
    reason            TEXT    NOT NULL,
    count             INTEGER NOT NULL,
    first_at_us       INTEGER NOT NULL,
    last_at_us        INTEGER NOT NULL,
    sample_resource   TEXT,
    sample_request    TEXT    NOT NULL,
    detail            TEXT    NOT NULL,
    UNIQUE (interval_start_us, source_kind, source, reason)
);
CREATE INDEX refusals_by_last ON refusals (last_at_us);
