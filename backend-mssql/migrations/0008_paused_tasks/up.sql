-- docket 0008_paused_tasks: the tasks paused cluster-wide. Every scheduler reads this table at each
-- poll and leaves the listed task names out of its due-queries and claims (running executions
-- finish); removing a row resumes the task. One row per paused task, in `<table>_paused`.
CREATE TABLE {paused} (
    task_name NVARCHAR(100) COLLATE Latin1_General_100_BIN2 NOT NULL,
    paused_at DATETIME2(6)  NOT NULL,
    paused_by NVARCHAR(128) COLLATE Latin1_General_100_BIN2,
    CONSTRAINT [{name}_paused_pk] PRIMARY KEY (task_name)
);
