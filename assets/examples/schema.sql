-- The user's own tables for the reconciliation examples (reconcile.py, reconcile.rs), on
-- PostgreSQL:
--
--   psql "$DATABASE_URL" -v ON_ERROR_STOP=1 -f assets/examples/schema.sql
--
-- `accounts` holds the inputs; `region_totals` the totals the worker computes from them, one
-- row per region. The fence protects `region_totals` as one scope, `totals`: once a generation
-- has written there, a lower one writes nothing. `--lease reconcile` also refuses a generation
-- the daemon's lease `reconcile` has superseded before the newer one writes (it needs the
-- daemon's store in this database; leave it out otherwise):
--
--   fencewatch fence install --database "$DATABASE_URL"
--   fencewatch fence protect --database "$DATABASE_URL" region_totals --token-column fence_token \
--       --scope totals --owner-column worker --lease reconcile

CREATE TABLE accounts (
    id            bigint PRIMARY KEY,
    region        text   NOT NULL,
    balance_cents bigint NOT NULL
);

CREATE TABLE region_totals (
    region      text PRIMARY KEY,
    total_cents bigint NOT NULL DEFAULT 0,
    accounts    bigint NOT NULL DEFAULT 0,
    -- Set by every write: the writer's generation and its name.
    fence_token bigint,
    worker      text,
    computed_at timestamptz
);

INSERT INTO accounts (id, region, balance_cents) VALUES
    (1, 'eu', 12000), (2, 'eu', 3050), (3, 'eu', 990),
    (4, 'us', 40000), (5, 'us', 1500);

-- One row per region, made before the fence protects the table: the worker updates them.
INSERT INTO region_totals (region) VALUES ('eu'), ('us');
