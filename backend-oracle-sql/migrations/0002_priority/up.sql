-- docket 0002_priority: nullable priority (adding a nullable column without a default is a
-- dictionary-only change: no row is rewritten) and the index the priority due-queries read.
-- Oracle sorts NULL first under DESC; the statements say `priority DESC NULLS LAST`, and the
-- per-level probes (`priority = :n AND execution_time <= :m ORDER BY execution_time`) are
-- index ranges on (priority, execution_time).
ALTER TABLE {table} ADD priority NUMBER(5);
CREATE INDEX "{name}_priority_execution_time_idx" ON {table} (priority, execution_time);
