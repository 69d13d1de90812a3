-- With an audit retention, lease events, closed overlaps and alert transitions older than its
-- window are deleted with the audit rows; these let each pass find them without a scan.
CREATE INDEX lease_events_by_time ON lease_events (at_us);
CREATE INDEX alert_transitions_by_time ON alert_transitions (at_us);
