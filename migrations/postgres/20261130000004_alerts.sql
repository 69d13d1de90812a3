-- The state of each alert instance (a rule, or a rule for one resource). Written only by the
-- elected evaluator, and only with a fence token at least as high as the row's: a deposed
-- evaluator's late writes change nothing.
CREATE TABLE alert_states (
    rule           TEXT    NOT NULL,
    instance       TEXT    NOT NULL,
    state          TEXT    NOT NULL,
    since_us       BIGINT NOT NULL,
    fired_at_us    BIGINT,
    last_true_us   BIGINT,
    value          BIGINT NOT NULL,
    fence_token    BIGINT NOT NULL,
    updated_at_us  BIGINT NOT NULL,
    PRIMARY KEY (rule, instance)
);
CREATE INDEX alert_states_by_update ON alert_states (updated_at_us);

-- Every state change, for the audit of who was paged when.
CREATE TABLE alert_transitions (
    id           BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    at_us        BIGINT NOT NULL,
    rule         TEXT    NOT NULL,
    instance     TEXT    NOT NULL,
    from_state   TEXT    NOT NULL,
    to_state     TEXT    NOT NULL,
    value        BIGINT NOT NULL,
    fence_token  BIGINT NOT NULL
);
