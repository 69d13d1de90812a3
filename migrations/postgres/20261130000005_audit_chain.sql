-- Tamper evidence: each resource's audit rows form a hash chain. `seq` numbers a row within its
-- resource's chain; `hash` is SHA-256 over the row's canonical encoding and `prev_hash`.
ALTER TABLE audit ADD COLUMN seq BIGINT;
ALTER TABLE audit ADD COLUMN prev_hash TEXT;
ALTER TABLE audit ADD COLUMN hash TEXT;

-- The head of each chain, advanced in the transaction that appends to it (and locked by it, so
-- concurrent writers to one resource append one after the other).
CREATE TABLE audit_chains (
    resource  TEXT   PRIMARY KEY,
    seq       BIGINT NOT NULL,
    hash      TEXT   NOT NULL
);

-- Where a pruned chain now starts: the last pruned row's position and hash.
CREATE TABLE audit_checkpoints (
    resource     TEXT   PRIMARY KEY,
    seq          BIGINT NOT NULL,
    hash         TEXT   NOT NULL,
    pruned_at_us BIGINT NOT NULL
);

-- The audit tools filter by owner, outcome and token.
CREATE INDEX audit_by_owner ON audit (owner, id);
CREATE INDEX audit_by_outcome ON audit (outcome, id);
CREATE INDEX audit_by_token ON audit (resource, token);
