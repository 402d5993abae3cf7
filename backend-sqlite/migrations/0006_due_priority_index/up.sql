-- docket 0006_due_priority_index: the per-level probe's index. With priority on, a poll reads
-- one level at a time (`picked = ? AND priority = ? AND execution_time <= ? ... ORDER BY
-- execution_time LIMIT ?`). On a table SQLite has never analyzed, its planner chose `due_idx`
-- (0005: `picked`, then the time range) over the priority index, so a probe of a drained level
-- walked every due row of the other levels (73 to 104 ms at 100k due + 1M future rows; aging
-- mode, which probes more levels, fell to 0.22 of priority off: docs/BENCHMARKS.md). With
-- `picked` and `priority` leading, the probe is one exact range in execution-time order,
-- statistics or not. Priority off never reads it (as MySQL's 0006).
CREATE INDEX {schema}"{name}_due_priority_idx" ON "{name}" (picked, priority, execution_time);
