ALTER TABLE {table} DROP INDEX priority_execution_time_idx, DROP COLUMN priority;
