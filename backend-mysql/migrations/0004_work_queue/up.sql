-- docket 0004_work_queue: work-queue state on the item rows and the assignments table.
-- `assignable` is stored (held_by IS NULL AND assignments < max_assignments, maintained by every
-- statement that changes those), so next_for reads only open items, in order, from one index:
-- (task_name, assignable, record_date, record_order), or with priority in front. NULL sorts
-- lowest, so `priority DESC` ranks NULL last; the mixed-direction index needs real descending
-- index parts (MySQL 8, MariaDB 10.8+; older MariaDB parses DESC and sorts instead).
-- MySQL DDL is not transactional, so each statement stands alone and the file can run again
-- after a failure: the assignments table comes first (IF NOT EXISTS), then one ALTER TABLE that
-- adds every column and index or nothing. Index names are per table in MySQL.
CREATE TABLE IF NOT EXISTS {assignments} (
    task_name     VARCHAR(100) NOT NULL,
    task_instance VARCHAR(250) NOT NULL,
    worker        VARCHAR(128) NOT NULL,
    status        VARCHAR(16)  NOT NULL,
    deadline      DATETIME(6)  NOT NULL,
    assigned_at   DATETIME(6)  NOT NULL,
    updated_at    DATETIME(6)  NOT NULL,
    PRIMARY KEY (task_name, task_instance, worker),
    INDEX status_deadline_idx (status, deadline),
    -- One worker's assignments of a type (the anti-join's materialized form reads these).
    INDEX worker_idx (task_name, worker, task_instance)
) ENGINE = InnoDB DEFAULT CHARACTER SET utf8mb4 COLLATE {collation} ROW_FORMAT = DYNAMIC;
ALTER TABLE {table}
    ADD COLUMN max_assignments INT          NULL,
    ADD COLUMN assignments     INT          NOT NULL DEFAULT 0,
    ADD COLUMN held_by         VARCHAR(128) NULL,
    ADD COLUMN assignable      BOOLEAN      NOT NULL DEFAULT FALSE,
    ADD INDEX queue_fifo_idx (task_name, assignable, record_date, record_order),
    ADD INDEX queue_priority_idx (task_name, assignable, priority DESC, record_date, record_order);
