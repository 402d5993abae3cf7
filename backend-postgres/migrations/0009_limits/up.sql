-- docket 0009_limits: limits the whole cluster keeps (docs/DESIGN.md, "Limits"). `limit_key`
-- on the executions (the key per-key limits count under, given at scheduling; nullable, no
-- default: no row is rewritten); `<table>_limits`, one row per limited task, read by every
-- scheduler and locked by the claim of that task (its `claims` counter is written by each such
-- claim, so two claims on two Galera nodes conflict at certification); `<table>_starts`, the
-- starts a rate limit counts, kept for the longest window.
ALTER TABLE {table} ADD COLUMN limit_key VARCHAR(100);
CREATE TABLE {limits} (
    task_name           VARCHAR(100) NOT NULL PRIMARY KEY,
    max_running         INTEGER,
    rate_count          INTEGER,
    rate_per_ms         BIGINT,
    max_running_per_key INTEGER,
    rate_per_key_count  INTEGER,
    rate_per_key_per_ms BIGINT,
    updated_at          TIMESTAMPTZ  NOT NULL,
    claims              BIGINT       NOT NULL DEFAULT 0
);
CREATE TABLE {starts} (
    task_name     VARCHAR(100) NOT NULL,
    started_at    TIMESTAMPTZ  NOT NULL,
    task_instance VARCHAR(250) NOT NULL,
    limit_key     VARCHAR(100),
    PRIMARY KEY (task_name, started_at, task_instance)
);
