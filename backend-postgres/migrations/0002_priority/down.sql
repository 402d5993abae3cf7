DROP INDEX IF EXISTS {schema}"{name}_priority_execution_time_idx";
ALTER TABLE {table} DROP COLUMN priority;
