-- Ownership overlaps: a stale generation still writing after a newer one was accepted.
CREATE TABLE ownership_overlaps (
    id                 INTEGER PRIMARY KEY AUTOINCREMENT,
    resource           TEXT    NOT NULL,
    stale_token        INTEGER NOT NULL,
    superseding_token  INTEGER NOT NULL,
    stale_owner        TEXT,
    superseding_owner  TEXT,
    first_seen_us      INTEGER NOT NULL,
    last_seen_us       INTEGER NOT NULL,
    rejected_writes    INTEGER NOT NULL,
    state              TEXT    NOT NULL,
    closed_at_us       INTEGER,
    updated_at_us      INTEGER NOT NULL
);
CREATE UNIQUE INDEX overlaps_one_open ON ownership_overlaps (resource, stale_token) WHERE state = 'open';
CREATE INDEX overlaps_by_update ON ownership_overlaps (updated_at_us);

-- The owner of the write that set each resource's highest generation.
ALTER TABLE resources ADD COLUMN highest_owner TEXT;

CREATE INDEX audit_by_time ON audit (at_us);
