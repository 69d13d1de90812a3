-- `audit incidents` lists the newest incidents first, up to a limit: walked backwards from this
-- index rather than sorting every overlap ever seen. `first_seen_us` never changes once the row
-- exists, so sightings still rewrite their row in place.
CREATE INDEX overlaps_by_first_seen ON ownership_overlaps (first_seen_us, id);
