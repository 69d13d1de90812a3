-- The lease authority. `token` is the lease's durable generation counter: every grant takes
-- the next value and the row is never deleted, so a generation is never issued twice.
CREATE TABLE leases (
    name            TEXT    PRIMARY KEY NOT NULL,
    holder          TEXT    NOT NULL,
    token           INTEGER NOT NULL CHECK (token >= 1),
    ttl_ms          INTEGER NOT NULL,
    acquired_at_us  INTEGER NOT NULL,
    expires_at_us   INTEGER NOT NULL,
    released_at_us  INTEGER
);

-- Who held which generation when: acquired, renewed, released, and expiries as observed.
CREATE TABLE lease_events (
    id             INTEGER PRIMARY KEY AUTOINCREMENT,
    at_us          INTEGER NOT NULL,
    lease          TEXT    NOT NULL,
    event          TEXT    NOT NULL,
    holder         TEXT    NOT NULL,
    token          INTEGER NOT NULL,
    expires_at_us  INTEGER NOT NULL
);
CREATE INDEX lease_events_by_lease ON lease_events (lease, id);

-- The authenticated caller (the name of its API key), when keys are configured.
ALTER TABLE audit ADD COLUMN caller TEXT;
