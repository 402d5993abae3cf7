-- docket 0004_work_queue: work-queue state on the item rows and the assignments table.
-- `assignable` is stored (held_by IS NULL AND assignments < max_assignments, maintained by every
-- statement that changes those), so next_for reads only open items, in order, from one index:
-- (task_name, assignable, record_date, record_order), or with priority in front. A constant
-- default is not a rewrite on PostgreSQL 11+.
ALTER TABLE {table} ADD COLUMN max_assignments INTEGER;
ALTER TABLE {table} ADD COLUMN assignments INTEGER NOT NULL DEFAULT 0;
ALTER TABLE {table} ADD COLUMN held_by VARCHAR(128);
ALTER TABLE {table} ADD COLUMN assignable BOOLEAN NOT NULL DEFAULT FALSE;
CREATE INDEX "{name}_queue_fifo_idx" ON {table} (task_name, assignable, record_date, record_order);
CREATE INDEX "{name}_queue_priority_idx" ON {table} (task_name, assignable, priority DESC NULLS LAST, record_date, record_order);
CREATE TABLE {assignments} (
    task_name     VARCHAR(100) NOT NULL,
    task_instance VARCHAR(250) NOT NULL,
    worker        VARCHAR(128) NOT NULL,
    status        VARCHAR(16)  NOT NULL,
    deadline      TIMESTAMPTZ  NOT NULL,
    assigned_at   TIMESTAMPTZ  NOT NULL,
    updated_at    TIMESTAMPTZ  NOT NULL,
    PRIMARY KEY (task_name, task_instance, worker)
);
CREATE INDEX "{name}_assignments_deadline_idx" ON {assignments} (status, deadline);
-- One worker's assignments of a type: without it, the planner's hashed anti-join for a new or
-- light worker read every assignment of the type (docs/BENCHMARKS.md, "docket bench queue").
CREATE INDEX "{name}_assignments_worker_idx" ON {assignments} (task_name, worker, task_instance);
