-- The protected state: each resource's value with the highest generation it has accepted,
-- kept in the same row so that they can only change together.
CREATE TABLE resources (
    key            TEXT    PRIMARY KEY NOT NULL,
    highest_token  INTEGER NOT NULL CHECK (highest_token >= 1),
    revision       INTEGER NOT NULL CHECK (revision >= 1),
    value          BLOB    NOT NULL,
    content_type   TEXT,
    updated_at_us  INTEGER NOT NULL
);

-- One row per write attempt that names a resource. AUTOINCREMENT so that an id is never
-- reused, even after the newest rows are pruned: ids are event ids for live streams.
CREATE TABLE audit (
    id                 INTEGER PRIMARY KEY AUTOINCREMENT,
    at_us              INTEGER NOT NULL,
    resource           TEXT    NOT NULL,
    outcome            TEXT    NOT NULL,
    token              INTEGER,
    highest_token      INTEGER NOT NULL,
    revision           INTEGER NOT NULL,
    idempotency_key    TEXT,
    expected_revision  INTEGER,
    owner              TEXT,
    lease              TEXT,
    body_sha256        TEXT,
    body_len           INTEGER,
    detail             TEXT
);
CREATE INDEX audit_by_resource ON audit (resource, id);

-- Accepted operations by idempotency key, for replaying their result; pruned after the
-- retention window.
CREATE TABLE operations (
    resource         TEXT    NOT NULL,
    idempotency_key  TEXT    NOT NULL,
    token            INTEGER NOT NULL,
    body_sha256      TEXT    NOT NULL,
    status           INTEGER NOT NULL,
    revision         INTEGER NOT NULL,
    highest_token    INTEGER NOT NULL,
    audit_id         INTEGER NOT NULL,
    recorded_at_us   INTEGER NOT NULL,
    PRIMARY KEY (resource, idempotency_key)
);
CREATE INDEX operations_by_age ON operations (recorded_at_us);
