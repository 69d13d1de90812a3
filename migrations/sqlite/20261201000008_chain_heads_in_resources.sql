-- A chain's head moves into its resource's row: an accepted write changes that row anyway, so
-- advancing the chain there costs no page of its own (a separate head table was one more
-- randomly placed page for every write to rewrite).
ALTER TABLE resources ADD COLUMN chain_seq INTEGER NOT NULL DEFAULT 0;
ALTER TABLE resources ADD COLUMN chain_hash TEXT NOT NULL
    DEFAULT '0000000000000000000000000000000000000000000000000000000000000000';
UPDATE resources SET chain_seq = c.seq, chain_hash = c.hash
    FROM audit_chains AS c WHERE c.resource = resources.key;

-- Attempts on a resource never written are audited too, and their chain's head stays here
-- until the resource is created. Then its row is marked moved (seq -1): a batch that creates a
-- resource writes that mark under the same compare-and-set as any head, so it cannot race an
-- attempt that still saw the resource missing. Renamed so that a daemon from before this
-- migration, still running, fails rather than advance heads that are no longer here.
ALTER TABLE audit_chains RENAME TO chain_heads;
UPDATE chain_heads SET seq = -1, hash = '' WHERE resource IN (SELECT key FROM resources);
