-- docket 0006_partial_indexes: the work queue's two indexes (0004) hold only work-queue items
-- (`max_assignments IS NOT NULL`), the only rows read through them: `next_for` and `list_for`
-- read items only and say so in their `WHERE`, so generic plans of prepared statements match
-- the predicate too. A scheduled execution is then written to five indexes instead of seven:
-- a 20,000-row bulk insert into a fresh table took 325 ms with the full indexes and 253 ms with
-- these (docs/BENCHMARKS.md, "Bulk enqueue on PostgreSQL"). Both are rebuilt here, holding the
-- table's write lock while they build, as 0005 did for its index.
DROP INDEX {schema}"{name}_queue_fifo_idx";
DROP INDEX {schema}"{name}_queue_priority_idx";
CREATE INDEX "{name}_queue_fifo_idx" ON {table} (task_name, assignable, record_date, record_order) WHERE max_assignments IS NOT NULL;
CREATE INDEX "{name}_queue_priority_idx" ON {table} (task_name, assignable, priority DESC NULLS LAST, record_date, record_order) WHERE max_assignments IS NOT NULL;
