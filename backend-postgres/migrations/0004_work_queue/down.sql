DROP TABLE {assignments};
DROP INDEX IF EXISTS {schema}"{name}_queue_priority_idx";
DROP INDEX IF EXISTS {schema}"{name}_queue_fifo_idx";
ALTER TABLE {table} DROP COLUMN assignable;
ALTER TABLE {table} DROP COLUMN held_by;
ALTER TABLE {table} DROP COLUMN assignments;
ALTER TABLE {table} DROP COLUMN max_assignments;
