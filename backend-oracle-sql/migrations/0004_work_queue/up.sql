-- docket 0004_work_queue: work-queue state on the item rows and the assignments table.
-- `assignable` is stored (held_by IS NULL AND assignments < max_assignments, maintained by every
-- statement that changes those), so next_for reads only open items, in order, from one index:
-- (task_name, assignable, record_date, record_order). With priority on, the order is
-- `priority DESC NULLS LAST`, which no index order gives in Oracle (a DESC index column keeps
-- NULL first): the priority index narrows the read to the task type's open items, which are
-- then sorted. Adding a NOT NULL column with a default is a dictionary-only change (11g+).
-- Booleans are NUMBER(1). Oracle DDL commits implicitly: a failure halfway leaves the earlier
-- statements applied (undo them with the matching statements of down.sql before a retry).
ALTER TABLE {table} ADD max_assignments NUMBER(10);
ALTER TABLE {table} ADD assignments NUMBER(10) DEFAULT 0 NOT NULL;
ALTER TABLE {table} ADD held_by VARCHAR2(128 CHAR);
ALTER TABLE {table} ADD assignable NUMBER(1) DEFAULT 0 NOT NULL;
CREATE INDEX "{name}_queue_fifo_idx" ON {table} (task_name, assignable, record_date, record_order);
CREATE INDEX "{name}_queue_priority_idx" ON {table} (task_name, assignable, priority DESC, record_date, record_order);
CREATE TABLE {assignments} (
    task_name     VARCHAR2(100 CHAR) NOT NULL,
    task_instance VARCHAR2(250 CHAR) NOT NULL,
    worker        VARCHAR2(128 CHAR) NOT NULL,
    status        VARCHAR2(16 CHAR)  NOT NULL,
    deadline      TIMESTAMP(6)       NOT NULL,
    assigned_at   TIMESTAMP(6)       NOT NULL,
    updated_at    TIMESTAMP(6)       NOT NULL,
    CONSTRAINT "{name}_assignments_pk" PRIMARY KEY (task_name, task_instance, worker)
);
CREATE INDEX "{name}_assignments_deadline_idx" ON {assignments} (status, deadline);
-- One worker's assignments of a type (next_for's NOT EXISTS for a new or light worker).
CREATE INDEX "{name}_assignments_worker_idx" ON {assignments} (task_name, worker, task_instance);
