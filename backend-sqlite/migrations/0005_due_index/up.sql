-- docket 0005_due_index: the claim's index. SQLite can use a partial index only when the query
-- spells its condition with the same literal (docket binds `picked`), so the index leads with
-- `picked`: the claim (`picked = ? AND execution_time <= ? ... ORDER BY execution_time LIMIT ?`)
-- is one range read in execution-time order, without ANALYZE.
CREATE INDEX {schema}"{name}_due_idx" ON "{name}" (picked, execution_time);
