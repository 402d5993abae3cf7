-- docket 0001_base: the executions table, without priority (SQLite).
-- {table} is the validated, quoted table name; {name} its unqualified name; {schema} the quoted
-- schema and a dot, or nothing (SQLite puts the schema on the index name, not after ON).
-- STRICT: a value of the wrong type is an error, not silently stored. SQLite does not enforce
-- VARCHAR lengths, so CHECKs keep the limits the other backends' column types enforce.
-- Timestamps are INTEGER microseconds since the Unix epoch, UTC: exact, and they compare and
-- sort correctly in SQL (see src/store.rs).
CREATE TABLE {table} (
    task_name            TEXT    NOT NULL CHECK (length(task_name) <= 100),
    task_instance        TEXT    NOT NULL CHECK (length(task_instance) <= 250),
    task_data            BLOB,
    execution_time       INTEGER NOT NULL,
    picked               INTEGER NOT NULL CHECK (picked IN (0, 1)),
    picked_by            TEXT    CHECK (length(picked_by) <= 128),
    last_success         INTEGER,
    last_failure         INTEGER,
    consecutive_failures INTEGER NOT NULL DEFAULT 0,
    last_heartbeat       INTEGER,
    version              INTEGER NOT NULL,
    PRIMARY KEY (task_name, task_instance)
) STRICT;
CREATE INDEX {schema}"{name}_execution_time_idx" ON "{name}" (execution_time);
CREATE INDEX {schema}"{name}_last_heartbeat_idx" ON "{name}" (last_heartbeat);
