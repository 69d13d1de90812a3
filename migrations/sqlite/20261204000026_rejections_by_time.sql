-- The alert rules count each resource's rejections in their window every evaluation
-- (`rejection_counts`: outcome among the rejections, `at_us` since the window's start). With the
-- outcome index alone that read every rejection ever audited, a cost growing with the audit's
-- age; this partial index over the same rare rows seeks each outcome's window directly.
CREATE INDEX audit_rejections_by_time ON audit (outcome, at_us) WHERE outcome <> 'accepted';
