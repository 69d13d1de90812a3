-- The state of each alert instance (a rule, or a rule for one resource). Written only by the
-- elected evaluator, and only with a fence token at least as high as the row's: a deposed
-- evaluator's late writes change nothing.
CREATE TABLE alert_states (
    rule           TEXT    NOT NULL,
    instance       TEXT    NOT NULL,
    state          TEXT    NOT NULL,
    since_us       INTEGER NOT NULL,
    fired_at_us    INTEGER,
    last_true_us   INTEGER,
    value          INTEGER NOT NULL,
    fence_token    INTEGER NOT NULL,
    updated_at_us  INTEGER NOT NULL,
    PRIMARY KEY (rule, instance)
);
CREATE INDEX alert_states_by_update ON alert_states (updated_at_us);

-- Every state change, for the audit of who was paged when.
CREATE TABLE alert_transitions (
    id           INTEGER PRIMARY KEY AUTOINCREMENT,
    at_us        INTEGER NOT NULL,
    rule         TEXT    NOT NULL,
    instance     TEXT    NOT NULL,
    from_state   TEXT    NOT NULL,
    to_state     TEXT    NOT NULL,
    value        INTEGER NOT NULL,
    fence_token  INTEGER NOT NULL
);
