-- The witnessed audit (docs/guarantees.md). Every signed checkpoint, as the line the witness
-- file holds: the signer starts from the latest one it can verify.
CREATE TABLE audit_witness (
    id    BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    at_us BIGINT  NOT NULL,
    line  TEXT    NOT NULL
);

-- A prune that holds the signing key signs each chain start it moves: with a witness, a start
-- that moved without a signature is rows deleted outside a prune.
ALTER TABLE audit_checkpoints ADD COLUMN signature TEXT;
