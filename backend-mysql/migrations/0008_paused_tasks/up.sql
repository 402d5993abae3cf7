-- docket 0008_paused_tasks: the tasks paused cluster-wide. Every scheduler reads this table at each
-- poll and leaves the listed task names out of its due-queries and claims (running executions
-- finish); removing a row resumes the task. One row per paused task, in `<table>_paused`.
CREATE TABLE IF NOT EXISTS {paused} (
    task_name VARCHAR(100) NOT NULL PRIMARY KEY,
    paused_at DATETIME(6)  NOT NULL,
    paused_by VARCHAR(128)
) ENGINE = InnoDB DEFAULT CHARACTER SET utf8mb4 COLLATE {collation};
