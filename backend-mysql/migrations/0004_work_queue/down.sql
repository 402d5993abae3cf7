DROP TABLE IF EXISTS {assignments};
ALTER TABLE {table}
    DROP INDEX queue_priority_idx,
    DROP INDEX queue_fifo_idx,
    DROP COLUMN assignable,
    DROP COLUMN held_by,
    DROP COLUMN assignments,
    DROP COLUMN max_assignments;
