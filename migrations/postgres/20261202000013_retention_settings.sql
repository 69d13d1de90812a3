-- Retention is a setting of the database, shared by every daemon on it, not of each daemon: a
-- daemon that kept operation records for less time than another would forget an operation the
-- other still answers for, and a retry reaching it would be applied a second time. The first
-- daemon to start stores its values; `serve --set-retention` replaces them; every daemon reads
-- them again before each prune. One row, none until a daemon has started.
CREATE TABLE retention_settings (
    id                       BIGINT PRIMARY KEY CHECK (id = 1),
    idempotency_retention_us BIGINT NOT NULL CHECK (idempotency_retention_us >= 0),
    -- NULL keeps the audit for ever.
    audit_retention_us       BIGINT CHECK (audit_retention_us >= 0),
    updated_at_us            BIGINT NOT NULL
);
