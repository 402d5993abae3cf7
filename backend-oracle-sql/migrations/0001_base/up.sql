-- docket 0001_base: the executions table, without priority (Oracle 19c+).
-- {table} is the validated, "double-quoted" table name: quoted names are case-sensitive in
-- Oracle, and this creates exactly the name the statements use. Columns are unquoted (stored
-- upper case; the statements name them unquoted too). {name} prefixes index and key names,
-- which are per schema in Oracle. Times are TIMESTAMP(6) holding UTC (bound and read as UTC
-- wall-clock values; no session time zone applies to a TIMESTAMP without time zone).
-- Booleans are NUMBER(1) (0/1): BOOLEAN columns exist only from 23ai on.
-- Note: Oracle stores '' as NULL, so an empty instance id cannot be stored (docket rejects
-- empty ids before they reach the database).
CREATE TABLE {table} (
    task_name            VARCHAR2(100 CHAR) NOT NULL,
    task_instance        VARCHAR2(250 CHAR) NOT NULL,
    task_data            BLOB,
    execution_time       TIMESTAMP(6)       NOT NULL,
    picked               NUMBER(1)          NOT NULL,
    picked_by            VARCHAR2(128 CHAR),
    last_success         TIMESTAMP(6),
    last_failure         TIMESTAMP(6),
    consecutive_failures NUMBER(10)         DEFAULT 0 NOT NULL,
    last_heartbeat       TIMESTAMP(6),
    version              NUMBER(19)         NOT NULL,
    CONSTRAINT "{name}_pk" PRIMARY KEY (task_name, task_instance)
);
CREATE INDEX "{name}_execution_time_idx" ON {table} (execution_time);
CREATE INDEX "{name}_last_heartbeat_idx" ON {table} (last_heartbeat);
