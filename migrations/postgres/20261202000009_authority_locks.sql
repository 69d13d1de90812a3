-- Locks of external authorities (etcd) that writes named: the highest holder generation this
-- daemon, or any daemon on this database, has seen hold each one. It only grows, so a lock
-- service whose generations went backwards (a restore, a new cluster) is recognised and
-- refused rather than obeyed. `owner` is the Fencing-Owner that first presented that
-- generation; `regressed_*` the last time the service was caught going backwards.
CREATE TABLE authority_locks (
    lock                     TEXT   PRIMARY KEY NOT NULL,
    highest_holder_revision  BIGINT NOT NULL,
    holder_key               TEXT   NOT NULL,
    owner                    TEXT,
    seen_at_us               BIGINT NOT NULL,
    regressed_at_us          BIGINT,
    regressed_revision       BIGINT
);
