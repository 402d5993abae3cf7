-- docket 0005_due_index: the claim's index, a partial index of the rows waiting to be claimed in
-- execution-time order. The claim (`picked = false AND execution_time <= now ... ORDER BY
-- execution_time LIMIT n`) reads it in order and stops at the limit, so its plan does not depend
-- on planner statistics (a fresh table whose statistics autovacuum has not gathered yet). A
-- claimed row leaves the index, so it holds only the backlog. Built without rewriting rows.
CREATE INDEX "{name}_due_idx" ON {table} (execution_time) WHERE picked = false;
