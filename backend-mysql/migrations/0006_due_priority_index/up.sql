-- docket 0006_due_priority_index: the claim's index per priority level. A locking read on
-- InnoDB locks every index entry it examines, matching or not, until its transaction ends.
-- Through `priority_execution_time_idx` (no `picked`), a level's claim (`picked = false AND
-- priority = ? AND execution_time <= now ... ORDER BY execution_time LIMIT n FOR UPDATE SKIP
-- LOCKED`) examined, and locked, the level's claimed rows ahead of its unclaimed ones. With
-- `picked` and `priority` leading, the claim is one exact range in execution-time order, as
-- `due_idx` (0005) is for priority off. Online: adding a secondary index rewrites no rows.
CREATE INDEX due_priority_idx ON {table} (picked, priority, execution_time);
