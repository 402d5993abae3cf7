-- docket 0004_work_queue: work-queue state on the item rows and the assignments table.
-- `assignable` is stored (held_by IS NULL AND assignments < max_assignments, maintained by every
-- statement that changes those), so next_for reads only open items, in order, from one index:
-- (task_name, assignable, record_date, record_order), or with priority in front (NULL sorts
-- lowest, so `priority DESC` ranks NULL last, as the statements order). Adding a NOT NULL
-- column with a constant default is metadata-only on Enterprise edition (2012+) and rewrites
-- rows on the others. Defaults are named so 0004's down can drop them. Worker names compare in
-- the binary collation of the keys ('W1' and 'w1' are two workers, as on PostgreSQL).
-- The assignments primary key is NONCLUSTERED: its three key columns can reach 956 bytes,
-- over the 900 a clustered key may hold (a nonclustered key may hold 1,700).
-- The whole migration runs in one transaction (SQL Server DDL is transactional).
ALTER TABLE {table} ADD max_assignments INT NULL;
ALTER TABLE {table} ADD assignments INT NOT NULL CONSTRAINT [{name}_assignments_df] DEFAULT 0;
ALTER TABLE {table} ADD held_by NVARCHAR(128) COLLATE Latin1_General_100_BIN2 NULL;
ALTER TABLE {table} ADD assignable BIT NOT NULL CONSTRAINT [{name}_assignable_df] DEFAULT 0;
CREATE INDEX [{name}_queue_fifo_idx] ON {table} (task_name, assignable, record_date, record_order);
CREATE INDEX [{name}_queue_priority_idx] ON {table} (task_name, assignable, priority DESC, record_date, record_order);
CREATE TABLE {assignments} (
    task_name     NVARCHAR(100) COLLATE Latin1_General_100_BIN2 NOT NULL,
    task_instance NVARCHAR(250) COLLATE Latin1_General_100_BIN2 NOT NULL,
    worker        NVARCHAR(128) COLLATE Latin1_General_100_BIN2 NOT NULL,
    status        NVARCHAR(16)  NOT NULL,
    deadline      DATETIME2(6)  NOT NULL,
    assigned_at   DATETIME2(6)  NOT NULL,
    updated_at    DATETIME2(6)  NOT NULL,
    CONSTRAINT [{name}_assignments_pk] PRIMARY KEY NONCLUSTERED (task_name, task_instance, worker)
);
CREATE INDEX [{name}_assignments_deadline_idx] ON {assignments} (status, deadline);
-- One worker's assignments of a type (next_for's NOT EXISTS for a new or light worker).
CREATE INDEX [{name}_assignments_worker_idx] ON {assignments} (task_name, worker, task_instance);
