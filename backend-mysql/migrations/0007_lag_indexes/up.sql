-- docket 0007_lag_indexes: the indexes the lag read (the dashboard's lag gauges and /metrics)
-- reads in order. Per task: its rows by picked, then execution time (the oldest due one is the
-- first entry of the range; due, scheduled and picked are ranges counted up to a cap). Per task
-- type: its open items by arrival. `priority` is the last key, so the per-level split is read
-- from the index alone. Online: adding a secondary index rewrites no rows.
CREATE INDEX task_lag_idx ON {table} (task_name, picked, execution_time, priority);
CREATE INDEX queue_lag_idx ON {table} (task_name, assignable, execution_time, priority);
