DROP INDEX [{name}_priority_execution_time_idx] ON {table};
ALTER TABLE {table} DROP COLUMN priority;
