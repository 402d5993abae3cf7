-- docket 0008_paused_tasks: the tasks paused cluster-wide. Every scheduler reads this table at each
-- poll and leaves the listed task names out of its due-queries and claims (running executions
-- finish); removing a row resumes the task. One row per paused task, in `<table>_paused`.
-- paused_at is INTEGER microseconds since the Unix epoch, UTC, as every docket timestamp here.
CREATE TABLE {paused} (
    task_name TEXT    NOT NULL PRIMARY KEY CHECK (length(task_name) <= 100),
    paused_at INTEGER NOT NULL,
    paused_by TEXT    CHECK (length(paused_by) <= 128)
) STRICT, WITHOUT ROWID;
