DROP INDEX IF EXISTS {schema}"{name}_queue_lag_idx";
DROP INDEX IF EXISTS {schema}"{name}_task_lag_idx";
