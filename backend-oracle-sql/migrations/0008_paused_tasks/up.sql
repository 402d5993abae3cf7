-- docket 0008_paused_tasks: the tasks paused cluster-wide. Every scheduler reads this table at each
-- poll and leaves the listed task names out of its due-queries and claims (running executions
-- finish); removing a row resumes the task. One row per paused task, in `<table>_paused`.
CREATE TABLE {paused} (
    task_name VARCHAR2(100 CHAR) NOT NULL,
    paused_at TIMESTAMP(6)       NOT NULL,
    paused_by VARCHAR2(128 CHAR),
    CONSTRAINT "{name}_paused_pk" PRIMARY KEY (task_name)
);
