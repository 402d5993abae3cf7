-- docket 0009_limits: limits the whole cluster keeps (docs/DESIGN.md, "Limits"). `limit_key`
-- on the executions (the key per-key limits count under, given at scheduling; nullable, no
-- default: no row is rewritten); `<table>_limits`, one row per limited task, read by every
-- scheduler and locked by the claim of that task (its `claims` counter is written by each such
-- claim, so two claims on two Galera nodes conflict at certification); `<table>_starts`, the
-- starts a rate limit counts, kept for the longest window.
ALTER TABLE {table} ADD limit_key NVARCHAR(100) COLLATE Latin1_General_100_BIN2 NULL;
CREATE TABLE {limits} (
    task_name           NVARCHAR(100) COLLATE Latin1_General_100_BIN2 NOT NULL,
    max_running         INT NULL,
    rate_count          INT NULL,
    rate_per_ms         BIGINT NULL,
    max_running_per_key INT NULL,
    rate_per_key_count  INT NULL,
    rate_per_key_per_ms BIGINT NULL,
    updated_at          DATETIME2(6) NOT NULL,
    claims              BIGINT NOT NULL CONSTRAINT [{name}_limits_claims] DEFAULT 0,
    CONSTRAINT [{name}_limits_pk] PRIMARY KEY (task_name)
);
CREATE TABLE {starts} (
    task_name     NVARCHAR(100) COLLATE Latin1_General_100_BIN2 NOT NULL,
    started_at    DATETIME2(6) NOT NULL,
    task_instance NVARCHAR(250) COLLATE Latin1_General_100_BIN2 NOT NULL,
    limit_key     NVARCHAR(100) COLLATE Latin1_General_100_BIN2 NULL,
    CONSTRAINT [{name}_starts_pk] PRIMARY KEY (task_name, started_at, task_instance)
);
