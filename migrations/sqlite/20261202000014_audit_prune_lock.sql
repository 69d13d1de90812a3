-- Prunes of the audit take turns: each resource's is decided and done in a transaction that
-- first writes this row (a row lock on PostgreSQL, the write lock on SQLite), so two prunes at
-- once (the daemons' retention, `audit prune`) never put a checkpoint back behind rows the
-- other deleted.
CREATE TABLE audit_prune_lock (
    id            INTEGER PRIMARY KEY CHECK (id = 1),
    taken_at_us   INTEGER NOT NULL
);
INSERT INTO audit_prune_lock (id, taken_at_us) VALUES (1, 0);
