DROP INDEX queue_lag_idx ON {table};
DROP INDEX task_lag_idx ON {table};
