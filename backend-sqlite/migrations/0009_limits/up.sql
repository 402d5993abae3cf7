-- docket 0009_limits: limits the whole cluster keeps (docs/DESIGN.md, "Limits"). `limit_key`
-- on the executions (the key per-key limits count under, given at scheduling; nullable, no
-- default: no row is rewritten); `<table>_limits`, one row per limited task, read by every
-- scheduler and locked by the claim of that task (its `claims` counter is written by each such
-- claim, so two claims on two Galera nodes conflict at certification); `<table>_starts`, the
-- starts a rate limit counts, kept for the longest window.
-- Timestamps are INTEGER microseconds since the Unix epoch, UTC, as every docket timestamp here.
ALTER TABLE {table} ADD COLUMN limit_key TEXT CHECK (length(limit_key) <= 100);
CREATE TABLE {limits} (
    task_name           TEXT    NOT NULL PRIMARY KEY CHECK (length(task_name) <= 100),
    max_running         INTEGER,
    rate_count          INTEGER,
    rate_per_ms         INTEGER,
    max_running_per_key INTEGER,
    rate_per_key_count  INTEGER,
    rate_per_key_per_ms INTEGER,
    updated_at          INTEGER NOT NULL,
    claims              INTEGER NOT NULL DEFAULT 0
) STRICT, WITHOUT ROWID;
CREATE TABLE {starts} (
    task_name     TEXT    NOT NULL CHECK (length(task_name) <= 100),
    started_at    INTEGER NOT NULL,
    task_instance TEXT    NOT NULL CHECK (length(task_instance) <= 250),
    limit_key     TEXT    CHECK (length(limit_key) <= 100),
    PRIMARY KEY (task_name, started_at, task_instance)
) STRICT, WITHOUT ROWID;
