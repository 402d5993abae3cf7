-- docket 0007_lag_indexes: the indexes the lag read (the dashboard's lag gauges and /metrics)
-- reads in order. Per task: its unpicked rows by execution time (the oldest due one is the first
-- entry of the range; due, scheduled and picked are ranges counted up to a cap). Per task type:
-- its open items by arrival (the items' own index, as 0006: only work-queue rows). `priority` is
-- the last key, so the per-level split is read from the index alone.
CREATE INDEX "{name}_task_lag_idx" ON {table} (task_name, picked, execution_time, priority);
CREATE INDEX "{name}_queue_lag_idx" ON {table} (task_name, assignable, execution_time, priority) WHERE max_assignments IS NOT NULL;
