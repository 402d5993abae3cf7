-- docket 0004_work_queue: work-queue state on the item rows and the assignments table.
-- `assignable` is stored (held_by IS NULL AND assignments < max_assignments, maintained by every
-- statement that changes those), so next_for reads only open items, in order, from one index:
-- (task_name, assignable, record_date, record_order), or with priority in front (NULL sorts
-- lowest, so under DESC it comes last). {assignments_name} is the quoted, unqualified name of
-- the assignments table, for after ON (the schema goes on the index name, as in 0001).
-- The assignments table is WITHOUT ROWID: it is read by its primary key (next_for's anti-join),
-- which then holds the whole row. CHECKs keep the lengths and booleans the other backends'
-- column types enforce (STRICT tables have neither VARCHAR nor BOOLEAN).
ALTER TABLE {table} ADD COLUMN max_assignments INTEGER;
ALTER TABLE {table} ADD COLUMN assignments INTEGER NOT NULL DEFAULT 0;
ALTER TABLE {table} ADD COLUMN held_by TEXT CHECK (length(held_by) <= 128);
ALTER TABLE {table} ADD COLUMN assignable INTEGER NOT NULL DEFAULT 0 CHECK (assignable IN (0, 1));
CREATE INDEX {schema}"{name}_queue_fifo_idx" ON "{name}" (task_name, assignable, record_date, record_order);
CREATE INDEX {schema}"{name}_queue_priority_idx" ON "{name}" (task_name, assignable, priority DESC, record_date, record_order);
CREATE TABLE {assignments} (
    task_name     TEXT    NOT NULL CHECK (length(task_name) <= 100),
    task_instance TEXT    NOT NULL CHECK (length(task_instance) <= 250),
    worker        TEXT    NOT NULL CHECK (length(worker) <= 128),
    status        TEXT    NOT NULL CHECK (length(status) <= 16),
    deadline      INTEGER NOT NULL,
    assigned_at   INTEGER NOT NULL,
    updated_at    INTEGER NOT NULL,
    PRIMARY KEY (task_name, task_instance, worker)
) STRICT, WITHOUT ROWID;
CREATE INDEX {schema}"{name}_assignments_deadline_idx" ON {assignments_name} (status, deadline);
CREATE INDEX {schema}"{name}_assignments_worker_idx" ON {assignments_name} (task_name, worker, task_instance);
