DROP INDEX "{name}_queue_lag_idx";
DROP INDEX "{name}_task_lag_idx";
