-- docket 0002_priority: nullable priority (existing rows stay NULL: no rewrite) and the index
-- the priority due-query reads in order: priority DESC NULLS LAST, then execution_time.
ALTER TABLE {table} ADD COLUMN priority SMALLINT;
CREATE INDEX "{name}_priority_execution_time_idx" ON {table} (priority DESC NULLS LAST, execution_time ASC);
