-- The lease authority. `token` is the lease's durable generation counter: every grant takes
-- the next value and the row is never deleted, so a generation is never issued twice.
CREATE TABLE leases (
    name            TEXT   PRIMARY KEY,
    holder          TEXT   NOT NULL,
    token           BIGINT NOT NULL CHECK (token >= 1),
    ttl_ms          BIGINT NOT NULL,
    acquired_at_us  BIGINT NOT NULL,
    expires_at_us   BIGINT NOT NULL,
    released_at_us  BIGINT
);

-- Who held which generation when: acquired, renewed, released, and expiries as observed.
CREATE TABLE lease_events (
    id             BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    at_us          BIGINT NOT NULL,
    lease          TEXT   NOT NULL,
    event          TEXT   NOT NULL,
    holder         TEXT   NOT NULL,
    token          BIGINT NOT NULL,
    expires_at_us  BIGINT NOT NULL
);
CREATE INDEX lease_events_by_lease ON lease_events (lease, id);

-- The authenticated caller (the name of its API key), when keys are configured.
ALTER TABLE audit ADD COLUMN caller TEXT;
