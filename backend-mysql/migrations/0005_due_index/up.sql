-- docket 0005_due_index: the claim's index. MySQL and MariaDB have no partial indexes; with
-- `picked` leading, the claim (`picked = false AND execution_time <= now ... ORDER BY
-- execution_time LIMIT n FOR UPDATE SKIP LOCKED`) is one range read in execution-time order that
-- never examines (and so never locks) claimed rows, whatever the statistics say. Online:
-- adding a secondary index rewrites no rows.
CREATE INDEX due_idx ON {table} (picked, execution_time);
