-- docket 0002_priority: nullable priority (adding a nullable column is a metadata-only change:
-- existing rows stay NULL, nothing is rewritten) and the index the priority due-queries read:
-- one seek per level on (priority, execution_time); DESC so the single ordered fallback
-- statement (priority DESC, execution_time ASC) reads it in order too. NULL sorts lowest in
-- SQL Server, so plain DESC ranks NULL priority last.
ALTER TABLE {table} ADD priority SMALLINT NULL;
CREATE INDEX [{name}_priority_execution_time_idx] ON {table} (priority DESC, execution_time ASC);
