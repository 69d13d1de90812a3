-- The holders of external locks (etcd) that writes observed, one row per holder key and
-- generation (its create revision): when this daemon, or any daemon on this database, first
-- and last saw it hold the lock. Recorded in the transaction of the writes that observed it,
-- so "who held generation G at time T" is answerable for locks the daemon does not grant.
CREATE TABLE authority_holders (
    id             BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    lock           TEXT   NOT NULL,
    generation     BIGINT NOT NULL,
    holder_key     TEXT   NOT NULL,
    first_seen_us  BIGINT NOT NULL,
    last_seen_us   BIGINT NOT NULL,
    UNIQUE (lock, generation, holder_key)
);
CREATE INDEX authority_holders_by_lock ON authority_holders (lock, id);
CREATE INDEX authority_holders_by_time ON authority_holders (last_seen_us);
