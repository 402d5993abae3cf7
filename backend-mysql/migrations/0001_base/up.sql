-- docket 0001_base: the executions table, without priority (MySQL 8 / MariaDB 10.6+).
-- {table} is the validated, quoted table name; {collation} the flavor's binary no-pad utf8mb4
-- collation, so keys compare byte for byte as on PostgreSQL. Times are DATETIME(6) holding UTC.
-- One statement, so a failure leaves nothing behind (MySQL DDL is not transactional). Index
-- names are per table in MySQL, so they need no table prefix (which could pass 64 characters).
CREATE TABLE {table} (
    task_name            VARCHAR(100) NOT NULL,
    task_instance        VARCHAR(250) NOT NULL,
    task_data            LONGBLOB,
    execution_time       DATETIME(6)  NOT NULL,
    picked               BOOLEAN      NOT NULL,
    picked_by            VARCHAR(128),
    last_success         DATETIME(6),
    last_failure         DATETIME(6),
    consecutive_failures INT          NOT NULL DEFAULT 0,
    last_heartbeat       DATETIME(6),
    version              BIGINT       NOT NULL,
    PRIMARY KEY (task_name, task_instance),
    INDEX execution_time_idx (execution_time),
    INDEX last_heartbeat_idx (last_heartbeat)
) ENGINE = InnoDB DEFAULT CHARACTER SET utf8mb4 COLLATE {collation} ROW_FORMAT = DYNAMIC;
