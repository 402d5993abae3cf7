DROP INDEX [{name}_queue_lag_idx] ON {table};
DROP INDEX [{name}_task_lag_idx] ON {table};
