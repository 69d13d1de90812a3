-- Fewer bytes a write (docs/performance.md, "Bytes per write"). The audit's digests (`hash`,
-- `prev_hash`, `body_sha256`) are kept as their 32 bytes, not as 64 hex characters: the store
-- turns them back into hex when it reads them, so the API, exports and the canonical encoding
-- (`row_hash` hashes the hex) are as before. SQLite cannot change a column's type in place, so
-- the table is rebuilt: its rows copied converting, then its indexes made anew.
CREATE TABLE audit_bytes (
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
    body_sha256        BLOB,
    body_len           INTEGER,
    detail             TEXT,
    caller             TEXT,
    seq                INTEGER,
    prev_hash          BLOB,
    hash               BLOB
);
INSERT INTO audit_bytes (id, at_us, resource, outcome, token, highest_token, revision,
    idempotency_key, expected_revision, owner, lease, body_sha256, body_len, detail, caller,
    seq, prev_hash, hash)
SELECT id, at_us, resource, outcome, token, highest_token, revision, idempotency_key,
    expected_revision, owner, lease, unhex(body_sha256), body_len, detail, caller, seq,
    unhex(prev_hash), unhex(hash)
FROM audit ORDER BY id;
-- Ids are never reused (they are event ids): the new table goes on from the highest id the old
-- one ever issued, not only from the highest it still holds.
DELETE FROM sqlite_sequence WHERE name = 'audit_bytes';
INSERT INTO sqlite_sequence (name, seq)
SELECT 'audit_bytes', max(seq) FROM (
    SELECT seq FROM sqlite_sequence WHERE name = 'audit'
    UNION ALL SELECT max(id) FROM audit_bytes
    UNION ALL SELECT 0
);
DROP TABLE audit;
ALTER TABLE audit_bytes RENAME TO audit;

-- Each index's reader is listed in docs/performance.md. Every write updates every index, so
-- only those a query needs are kept.
-- A resource's chain, in order: verify, prune, timelines, incidents, `--resource`.
CREATE INDEX audit_by_resource ON audit (resource, id);
-- Retention and `--since`/`--until`, the alert rules' windows.
CREATE INDEX audit_by_time ON audit (at_us);
-- `--owner`. A search names an owner, so rows written without one are left out.
CREATE INDEX audit_by_owner ON audit (owner, id) WHERE owner IS NOT NULL;
-- `--outcome` for the rare outcomes. Nearly every row is accepted, and a search for accepted
-- rows finds them by walking the ids, so they are left out of the index.
CREATE INDEX audit_by_outcome ON audit (outcome, id) WHERE outcome <> 'accepted';
