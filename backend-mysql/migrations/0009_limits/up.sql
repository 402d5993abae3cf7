-- docket 0009_limits: limits the whole cluster keeps (docs/DESIGN.md, "Limits"). `limit_key`
-- on the executions (the key per-key limits count under, given at scheduling; nullable, no
-- default: no row is rewritten); `<table>_limits`, one row per limited task, read by every
-- scheduler and locked by the claim of that task (its `claims` counter is written by each such
-- claim, so two claims on two Galera nodes conflict at certification); `<table>_starts`, the
-- starts a rate limit counts, kept for the longest window.
-- MySQL DDL is not transactional: the tables come first (IF NOT EXISTS), then the column (an
-- instant change on MariaDB 10.3+ and MySQL 8.0.12+), so the file can run again after a failure.
CREATE TABLE IF NOT EXISTS {limits} (
    task_name           VARCHAR(100) NOT NULL PRIMARY KEY,
    max_running         INT,
    rate_count          INT,
    rate_per_ms         BIGINT,
    max_running_per_key INT,
    rate_per_key_count  INT,
    rate_per_key_per_ms BIGINT,
    updated_at          DATETIME(6)  NOT NULL,
    claims              BIGINT       NOT NULL DEFAULT 0
) ENGINE = InnoDB DEFAULT CHARACTER SET utf8mb4 COLLATE {collation};
CREATE TABLE IF NOT EXISTS {starts} (
    task_name     VARCHAR(100) NOT NULL,
    started_at    DATETIME(6)  NOT NULL,
    task_instance VARCHAR(250) NOT NULL,
    limit_key     VARCHAR(100),
    PRIMARY KEY (task_name, started_at, task_instance)
) ENGINE = InnoDB DEFAULT CHARACTER SET utf8mb4 COLLATE {collation};
ALTER TABLE {table} ADD COLUMN IF NOT EXISTS limit_key VARCHAR(100) COLLATE {collation};
