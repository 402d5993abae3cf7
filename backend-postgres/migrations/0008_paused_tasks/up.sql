-- docket 0008_paused_tasks: the tasks paused cluster-wide. Every scheduler reads this table at each
-- poll and leaves the listed task names out of its due-queries and claims (running executions
-- finish); removing a row resumes the task. One row per paused task, in `<table>_paused`.
CREATE TABLE {paused} (
    task_name VARCHAR(100) NOT NULL PRIMARY KEY,
    paused_at TIMESTAMPTZ  NOT NULL,
    paused_by VARCHAR(128)
);
