-- docket 0001_base: the executions table, without priority (SQL Server 2019+).
-- {table} is the validated, [bracketed] table name; {name} its unqualified name for the names
-- of the key and indexes. Times are DATETIME2(6) holding UTC (docket binds UTC wall-clock
-- values, so no session or server time zone shifts them; DATETIMEOFFSET would store a +00:00
-- offset on every row for nothing). Keys are NVARCHAR (tiberius binds text as NVARCHAR: a
-- VARCHAR column would turn every key predicate into an implicit conversion and a scan) in a
-- binary collation, so 'A' and 'a' are different instances as on PostgreSQL. The primary key
-- leads with task_instance, as db-scheduler's did after deadlock reports on SQL Server.
CREATE TABLE {table} (
    task_name            NVARCHAR(100) COLLATE Latin1_General_100_BIN2 NOT NULL,
    task_instance        NVARCHAR(250) COLLATE Latin1_General_100_BIN2 NOT NULL,
    task_data            VARBINARY(MAX) NULL,
    execution_time       DATETIME2(6)  NOT NULL,
    picked               BIT           NOT NULL,
    picked_by            NVARCHAR(128) NULL,
    last_success         DATETIME2(6)  NULL,
    last_failure         DATETIME2(6)  NULL,
    consecutive_failures INT           NOT NULL DEFAULT 0,
    last_heartbeat       DATETIME2(6)  NULL,
    version              BIGINT        NOT NULL,
    CONSTRAINT [{name}_pk] PRIMARY KEY CLUSTERED (task_instance, task_name)
);
CREATE INDEX [{name}_execution_time_idx] ON {table} (execution_time);
CREATE INDEX [{name}_last_heartbeat_idx] ON {table} (last_heartbeat);
