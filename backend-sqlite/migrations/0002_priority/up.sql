-- docket 0002_priority: nullable priority (existing rows stay NULL: no rewrite) and the index
-- the priority due-query reads in order. SQLite sorts NULL lowest, so under DESC it comes last,
-- which is docket's rule; no NULLS LAST needed. The CHECK keeps values within SMALLINT, as on
-- the other backends (STRICT tables have no SMALLINT type).
ALTER TABLE {table} ADD COLUMN priority INTEGER CHECK (priority BETWEEN -32768 AND 32767);
CREATE INDEX {schema}"{name}_priority_execution_time_idx" ON "{name}" (priority DESC, execution_time ASC);
