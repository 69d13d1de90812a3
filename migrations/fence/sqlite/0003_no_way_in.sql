-- The fence, version 3. On SQLite it changes only what `protect` writes: an UPDATE that moves a
-- row to another scope is judged on the scope it leaves as well (src/owndb/sqlite_triggers.rs).
-- Install rewrites every protected table's triggers whenever they differ from what this
-- fencewatch writes, so nothing else of the file changes here.
SELECT 1;
