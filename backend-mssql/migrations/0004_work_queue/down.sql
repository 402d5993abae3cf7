DROP TABLE {assignments};
DROP INDEX [{name}_queue_priority_idx] ON {table};
DROP INDEX [{name}_queue_fifo_idx] ON {table};
ALTER TABLE {table} DROP CONSTRAINT [{name}_assignable_df];
ALTER TABLE {table} DROP COLUMN assignable;
ALTER TABLE {table} DROP COLUMN held_by;
ALTER TABLE {table} DROP CONSTRAINT [{name}_assignments_df];
ALTER TABLE {table} DROP COLUMN assignments;
ALTER TABLE {table} DROP COLUMN max_assignments;
