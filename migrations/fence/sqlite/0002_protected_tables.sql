-- The fence, version 2: protected tables. SQLite has no dynamic SQL, so `fencewatch fence
-- protect` writes each table's triggers (BEFORE INSERT and BEFORE UPDATE, named in this row)
-- with its columns in them; this table records what it wrote, for unprotect and uninstall.
CREATE TABLE fencewatch_protected (
    table_name      TEXT PRIMARY KEY NOT NULL,
    token_column    TEXT NOT NULL,
    scope_column    TEXT,
    scope           TEXT,
    op_column       TEXT,
    owner_column    TEXT,
    lease           TEXT,
    insert_trigger  TEXT NOT NULL,
    update_trigger  TEXT NOT NULL,
    CHECK ((scope_column IS NULL) <> (scope IS NULL))
);
