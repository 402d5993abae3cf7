-- docket 0002_priority: nullable priority (existing rows stay NULL; appending a nullable
-- column is an instant change on MySQL 8.0.12+ and MariaDB 10.3+, no rewrite) and an
-- ASCENDING (priority, execution_time) index. NULL sorts lowest, so `priority DESC` already
-- ranks NULL last. Ascending on purpose: on MariaDB a descending index defeats MIN/MAX and
-- loose index scans (the per-level probes of the priority due-query), and it serves MySQL
-- versions without descending indexes too.
ALTER TABLE {table} ADD COLUMN priority SMALLINT NULL;
CREATE INDEX priority_execution_time_idx ON {table} (priority, execution_time);
