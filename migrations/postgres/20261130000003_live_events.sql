-- Ownership overlaps: a stale generation still writing after a newer one was accepted.
CREATE TABLE ownership_overlaps (
    id                 BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    resource           TEXT   NOT NULL,
    stale_token        BIGINT NOT NULL,
    superseding_token  BIGINT NOT NULL,
    stale_owner        TEXT,
    superseding_owner  TEXT,
    first_seen_us      BIGINT NOT NULL,
    last_seen_us       BIGINT NOT NULL,
    rejected_writes    BIGINT NOT NULL,
    state              TEXT   NOT NULL,
    closed_at_us       BIGINT,
    updated_at_us      BIGINT NOT NULL
);
CREATE UNIQUE INDEX overlaps_one_open ON ownership_overlaps (resource, stale_token) WHERE state = 'open';
CREATE INDEX overlaps_by_update ON ownership_overlaps (updated_at_us);

-- The owner of the write that set each resource's highest generation.
ALTER TABLE resources ADD COLUMN highest_owner TEXT;

CREATE INDEX audit_by_time ON audit (at_us);
