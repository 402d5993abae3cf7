DROP INDEX IF EXISTS {schema}"{name}_queue_fifo_idx";
DROP INDEX IF EXISTS {schema}"{name}_queue_priority_idx";
CREATE INDEX "{name}_queue_fifo_idx" ON {table} (task_name, assignable, record_date, record_order);
CREATE INDEX "{name}_queue_priority_idx" ON {table} (task_name, assignable, priority DESC NULLS LAST, record_date, record_order);
