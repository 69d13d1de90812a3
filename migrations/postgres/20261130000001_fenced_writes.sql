-- The protected state: each resource's value with the highest generation it has accepted,
-- kept in the same row so that they can only change together.
CREATE TABLE resources (
    key            TEXT   PRIMARY KEY,
    highest_token  BIGINT NOT NULL CHECK (highest_token >= 1),
    revision       BIGINT NOT NULL CHECK (revision >= 1),
    value          BYTEA  NOT NULL,
    content_type   TEXT,
    updated_at_us  BIGINT NOT NULL
);

-- One row per write attempt that names a resource.
CREATE TABLE audit (
    id                 BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    at_us              BIGINT NOT NULL,
    resource           TEXT   NOT NULL,
    outcome            TEXT   NOT NULL,
    token              BIGINT,
    highest_token      BIGINT NOT NULL,
    revision           BIGINT NOT NULL,
    idempotency_key    TEXT,
    expected_revision  BIGINT,
    owner              TEXT,
    lease              TEXT,
    body_sha256        TEXT,
    body_len           BIGINT,
    detail             TEXT
);
CREATE INDEX audit_by_resource ON audit (resource, id);

-- Accepted operations by idempotency key, for replaying their result; pruned after the
-- retention window.
CREATE TABLE operations (
    resource         TEXT   NOT NULL,
    idempotency_key  TEXT   NOT NULL,
    token            BIGINT NOT NULL,
    body_sha256      TEXT   NOT NULL,
    status           BIGINT NOT NULL,
    revision         BIGINT NOT NULL,
    highest_token    BIGINT NOT NULL,
    audit_id         BIGINT NOT NULL,
    recorded_at_us   BIGINT NOT NULL,
    PRIMARY KEY (resource, idempotency_key)
);
CREATE INDEX operations_by_age ON operations (recorded_at_us);
