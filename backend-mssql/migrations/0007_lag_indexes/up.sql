-- docket 0007_lag_indexes: the indexes the lag read (the dashboard's lag gauges and /metrics)
-- reads in order: a task's rows by picked, then execution time; a task type's open items by
-- arrival (filtered to work-queue rows). `priority` is the last key.
CREATE INDEX [{name}_task_lag_idx] ON {table} (task_name, picked, execution_time, priority);
CREATE INDEX [{name}_queue_lag_idx] ON {table} (task_name, assignable, execution_time, priority) WHERE max_assignments IS NOT NULL;
