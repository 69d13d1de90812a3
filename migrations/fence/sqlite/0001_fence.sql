-- The fence in the user's own SQLite file, version 1: the scopes, the audit, operation ids and
-- the guard (`INSERT INTO fencewatch_guard`). Applied by fencewatch's own runner
-- (src/owndb/migrate.rs). Every object is named fencewatch_*. SQLite's one writer serializes
-- every decision.

CREATE TABLE fencewatch_settings (
    name  TEXT PRIMARY KEY NOT NULL,
    value TEXT NOT NULL
);
INSERT INTO fencewatch_settings (name, value) VALUES ('operation_retention_us', '86400000000');

-- One row per scope: its highest accepted generation, the head of its audit chain (the last
-- row's seq, moved by fencewatch_audit_head on every append) and the last sealed row's seq and
-- hash (moved by the seal), so that neither an append nor a seal looks for a row of the chain.
CREATE TABLE fencewatch_scopes (
    scope          TEXT PRIMARY KEY NOT NULL CHECK (scope <> ''),
    highest_token  INTEGER NOT NULL CHECK (highest_token >= 0),
    updated_at     TEXT NOT NULL,
    head_seq       INTEGER NOT NULL DEFAULT 0,
    sealed_seq     INTEGER NOT NULL DEFAULT 0,
    sealed_hash    TEXT
);

-- The daemon's audit row shape. No AUTOINCREMENT: it would create sqlite_sequence, a table
-- that cannot be dropped again, and uninstall leaves the file's schema as it found it. Rows are
-- written unsealed (prev_hash and hash NULL: SQLite has no SHA-256 in SQL) and sealed in seq
-- order by `fencewatch fence seal` or a watching daemon. Only the id is indexed (and the
-- unsealed rows): the chain's head and sealed head are in the scope's row.
CREATE TABLE fencewatch_audit (
    id               INTEGER PRIMARY KEY,
    at               TEXT    NOT NULL,
    resource         TEXT    NOT NULL,
    outcome          TEXT    NOT NULL,
    token            INTEGER,
    highest_token    INTEGER NOT NULL,
    idempotency_key  TEXT,
    owner            TEXT,
    lease            TEXT,
    detail           TEXT,
    table_name       TEXT,
    seq              INTEGER NOT NULL CHECK (seq >= 1),
    prev_hash        TEXT,
    hash             TEXT
);
CREATE INDEX fencewatch_audit_unsealed ON fencewatch_audit (id) WHERE hash IS NULL;

-- Every append advances its scope's head (creating the scope's row for a refusal on a scope
-- nothing was accepted on). SQLite's one writer serializes appends.
CREATE TRIGGER fencewatch_audit_head AFTER INSERT ON fencewatch_audit
BEGIN
    INSERT INTO fencewatch_scopes (scope, highest_token, updated_at, head_seq)
    VALUES (NEW.resource, 0, NEW.at, NEW.seq)
    ON CONFLICT (scope) DO UPDATE SET head_seq = excluded.head_seq;
END;

CREATE TABLE fencewatch_operations (
    scope          TEXT    NOT NULL,
    op_id          TEXT    NOT NULL,
    token          INTEGER NOT NULL,
    applied_at_us  INTEGER NOT NULL,
    PRIMARY KEY (scope, op_id)
);

-- The time of a statement, as the audit records it and as operation ids age.
CREATE VIEW fencewatch_clock AS SELECT
    strftime('%Y-%m-%dT%H:%M:%fZ', 'now') AS at,
    CAST((julianday('now') - 2440587.5) * 86400000000 AS INTEGER) AS now_us;

-- The guard: one INSERT per attempt. Accepted: the row goes in (changes() = 1) and is deleted
-- again at once. Replayed: audited, the row ignored (changes() = 0). Refused: audited, then the
-- statement fails with a message starting FW409 or FW400; RAISE(FAIL) keeps the audit row in
-- the caller's transaction (a rollback removes it).
CREATE TABLE fencewatch_guard (
    scope  TEXT,
    token  INTEGER,
    op_id  TEXT,
    owner  TEXT
);

CREATE TRIGGER fencewatch_guard_decide BEFORE INSERT ON fencewatch_guard
BEGIN
    SELECT RAISE(FAIL, 'FW400: the scope must be a non-empty text')
     WHERE NEW.scope IS NULL OR NEW.scope = '';
    INSERT INTO fencewatch_audit (at, resource, outcome, token, highest_token, idempotency_key,
                                  owner, detail, seq)
    SELECT c.at, NEW.scope, 'invalid', NEW.token, coalesce(s.highest_token, 0), NEW.op_id,
           NEW.owner, 'the token must be a positive generation',
           coalesce((SELECT h.head_seq FROM fencewatch_scopes h WHERE h.scope = NEW.scope), 0) + 1
      FROM fencewatch_clock c LEFT JOIN fencewatch_scopes s ON s.scope = NEW.scope
     WHERE NEW.token IS NULL OR typeof(NEW.token) <> 'integer' OR NEW.token < 1;
    SELECT RAISE(FAIL, 'FW400: the token must be a positive generation')
     WHERE NEW.token IS NULL OR typeof(NEW.token) <> 'integer' OR NEW.token < 1;
    INSERT INTO fencewatch_audit (at, resource, outcome, token, highest_token, idempotency_key,
                                  owner, detail, seq)
    SELECT c.at, NEW.scope, 'replayed', NEW.token, coalesce(s.highest_token, 0), NEW.op_id,
           NEW.owner, 'operation ' || NEW.op_id || ' was applied under generation ' || NEW.token,
           coalesce((SELECT h.head_seq FROM fencewatch_scopes h WHERE h.scope = NEW.scope), 0) + 1
      FROM fencewatch_clock c LEFT JOIN fencewatch_scopes s ON s.scope = NEW.scope
     WHERE EXISTS (SELECT 1 FROM fencewatch_operations o
                    WHERE o.scope = NEW.scope AND o.op_id = NEW.op_id AND o.token = NEW.token
                      AND o.applied_at_us > c.now_us - (SELECT CAST(value AS INTEGER)
                          FROM fencewatch_settings WHERE name = 'operation_retention_us'));
    SELECT RAISE(IGNORE) FROM fencewatch_clock c
     WHERE EXISTS (SELECT 1 FROM fencewatch_operations o
                    WHERE o.scope = NEW.scope AND o.op_id = NEW.op_id AND o.token = NEW.token
                      AND o.applied_at_us > c.now_us - (SELECT CAST(value AS INTEGER)
                          FROM fencewatch_settings WHERE name = 'operation_retention_us'));
    INSERT INTO fencewatch_audit (at, resource, outcome, token, highest_token, idempotency_key,
                                  owner, detail, seq)
    SELECT c.at, NEW.scope, 'stale', NEW.token, s.highest_token, NEW.op_id, NEW.owner,
           'generation ' || NEW.token || ' is below ' || s.highest_token || ', the highest accepted',
           coalesce((SELECT h.head_seq FROM fencewatch_scopes h WHERE h.scope = NEW.scope), 0) + 1
      FROM fencewatch_clock c JOIN fencewatch_scopes s ON s.scope = NEW.scope
     WHERE NEW.token < s.highest_token;
    SELECT RAISE(FAIL, 'FW409: stale generation: a higher one was accepted on this scope')
      FROM fencewatch_scopes s WHERE s.scope = NEW.scope AND NEW.token < s.highest_token;
    INSERT INTO fencewatch_scopes (scope, highest_token, updated_at)
    SELECT NEW.scope, NEW.token, c.at FROM fencewatch_clock c WHERE true
    ON CONFLICT (scope) DO UPDATE SET highest_token = excluded.highest_token,
                                      updated_at = excluded.updated_at;
    INSERT INTO fencewatch_operations (scope, op_id, token, applied_at_us)
    SELECT NEW.scope, NEW.op_id, NEW.token, c.now_us FROM fencewatch_clock c
     WHERE NEW.op_id IS NOT NULL
    ON CONFLICT (scope, op_id) DO UPDATE SET token = excluded.token,
                                             applied_at_us = excluded.applied_at_us;
    INSERT INTO fencewatch_audit (at, resource, outcome, token, highest_token, idempotency_key,
                                  owner, seq)
    SELECT c.at, NEW.scope, 'accepted', NEW.token, NEW.token, NEW.op_id, NEW.owner,
           coalesce((SELECT h.head_seq FROM fencewatch_scopes h WHERE h.scope = NEW.scope), 0) + 1
      FROM fencewatch_clock c;
END;

CREATE TRIGGER fencewatch_guard_forget AFTER INSERT ON fencewatch_guard
BEGIN
    DELETE FROM fencewatch_guard WHERE rowid = NEW.rowid;
END;
