-- `serve --watch URL`: the fence audit of a user's own database flows through this daemon's live
-- side. What of it is kept here, per watched source (its name; '' is this daemon's own):
--
-- Ownership overlaps of a watched database are recorded beside this daemon's own, told apart by
-- `source`, so that one resource name in two databases is two overlaps.
ALTER TABLE ownership_overlaps ADD COLUMN source TEXT NOT NULL DEFAULT '';
DROP INDEX overlaps_one_open;
CREATE UNIQUE INDEX overlaps_one_open ON ownership_overlaps (source, resource, stale_token)
    WHERE state = 'open';

-- Alert instances are per source too: a per-resource rule keeps `orders/eu` of two databases
-- apart, and a rule over all resources fires per source. SQLite cannot change a primary key in
-- place: the table is rebuilt with its rows.
CREATE TABLE alert_states_by_source (
    rule           TEXT    NOT NULL,
    source         TEXT    NOT NULL DEFAULT '',
    instance       TEXT    NOT NULL,
    state          TEXT    NOT NULL,
    since_us       INTEGER NOT NULL,
    fired_at_us    INTEGER,
    last_true_us   INTEGER,
    value          INTEGER NOT NULL,
    fence_token    INTEGER NOT NULL,
    updated_at_us  INTEGER NOT NULL,
    PRIMARY KEY (rule, source, instance)
);
INSERT INTO alert_states_by_source (rule, source, instance, state, since_us, fired_at_us,
        last_true_us, value, fence_token, updated_at_us)
    SELECT rule, '', instance, state, since_us, fired_at_us, last_true_us, value, fence_token,
        updated_at_us
    FROM alert_states;
DROP TABLE alert_states;
ALTER TABLE alert_states_by_source RENAME TO alert_states;
CREATE INDEX alert_states_by_update ON alert_states (updated_at_us);
ALTER TABLE alert_transitions ADD COLUMN source TEXT NOT NULL DEFAULT '';

-- How far each watched source's audit has been taken in: the highest id below which every row
-- was recorded (overlaps, counts) in the same transaction that moved this. A restarted daemon
-- resumes here, neither replaying a row nor losing one; two daemons watching one database take
-- each row once.
CREATE TABLE watch_positions (
    source         TEXT    PRIMARY KEY,
    after_id       INTEGER NOT NULL,
    updated_at_us  INTEGER NOT NULL
);

-- Watched rows counted per source, resource, outcome and second (the row's own time), for the
-- alert rules, which count this daemon's rows in `audit`. Kept a day.
CREATE TABLE watched_counts (
    source     TEXT    NOT NULL,
    resource   TEXT    NOT NULL,
    outcome    TEXT    NOT NULL,
    second_us  INTEGER NOT NULL,
    n          INTEGER NOT NULL,
    PRIMARY KEY (source, resource, outcome, second_us)
);
CREATE INDEX watched_counts_by_time ON watched_counts (second_us);
