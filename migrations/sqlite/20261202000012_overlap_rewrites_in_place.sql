-- An open overlap's row is rewritten by every batch that sights it. With `updated_at_us`
-- indexed, no rewrite could stay where it was (PostgreSQL's heap-only updates) and each one
-- moved an index entry, so a stale-owner spike wrote far more than the normal load. Changes are
-- found instead among the open overlaps (few: each is closed once quiet) and, for closed ones,
-- by when they closed, which is set once.
DROP INDEX overlaps_by_update;
CREATE INDEX overlaps_by_close ON ownership_overlaps (closed_at_us) WHERE state = 'closed';
