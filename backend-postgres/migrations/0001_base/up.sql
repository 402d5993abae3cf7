-- docket 0001_base: the executions table, without priority.
-- {table} is the validated, quoted table name; {name} its unqualified name for index names.
CREATE TABLE {table} (
    task_name            VARCHAR(100) NOT NULL,
    task_instance        VARCHAR(250) NOT NULL,
    task_data            BYTEA,
    execution_time       TIMESTAMPTZ  NOT NULL,
    picked               BOOLEAN      NOT NULL,
    picked_by            VARCHAR(128),
    last_success         TIMESTAMPTZ,
    last_failure         TIMESTAMPTZ,
    consecutive_failures INTEGER      NOT NULL DEFAULT 0,
    last_heartbeat       TIMESTAMPTZ,
    version              BIGINT       NOT NULL,
    PRIMARY KEY (task_name, task_instance)
);
CREATE INDEX "{name}_execution_time_idx" ON {table} (execution_time);
CREATE INDEX "{name}_last_heartbeat_idx" ON {table} (last_heartbeat);
