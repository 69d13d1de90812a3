-- The alert rules count each resource's rejections in their window every evaluation
-- (`rejection_counts`, grouped by resource). With `resource` in the index over those rows, the
-- count reads the index alone instead of one table row per rejection, which on a large file
-- are pages the reader's cache no longer holds. The same rows as before: only rejections.
DROP INDEX audit_rejections_by_time;
CREATE INDEX audit_rejections_by_time ON audit (outcome, at_us, resource) WHERE outcome <> 'accepted';
