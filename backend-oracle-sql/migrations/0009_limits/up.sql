-- docket 0009_limits: limits the whole cluster keeps (docs/DESIGN.md, "Limits"). `limit_key`
-- on the executions (the key per-key limits count under, given at scheduling; nullable, no
-- default: no row is rewritten); `<table>_limits`, one row per limited task, read by every
-- scheduler and locked by the claim of that task (its `claims` counter is written by each such
-- claim, so two claims on two Galera nodes conflict at certification); `<table>_starts`, the
-- starts a rate limit counts, kept for the longest window.
-- Oracle DDL commits implicitly: each statement stands alone.
ALTER TABLE {table} ADD limit_key VARCHAR2(100 CHAR);
CREATE TABLE {limits} (
    task_name           VARCHAR2(100 CHAR) NOT NULL,
    max_running         NUMBER(10),
    rate_count          NUMBER(10),
    rate_per_ms         NUMBER(19),
    max_running_per_key NUMBER(10),
    rate_per_key_count  NUMBER(10),
    rate_per_key_per_ms NUMBER(19),
    updated_at          TIMESTAMP(6) NOT NULL,
    claims              NUMBER(19) DEFAULT 0 NOT NULL,
    CONSTRAINT "{name}_limits_pk" PRIMARY KEY (task_name)
);
CREATE TABLE {starts} (
    task_name     VARCHAR2(100 CHAR) NOT NULL,
    started_at    TIMESTAMP(6)       NOT NULL,
    task_instance VARCHAR2(250 CHAR) NOT NULL,
    limit_key     VARCHAR2(100 CHAR),
    CONSTRAINT "{name}_starts_pk" PRIMARY KEY (task_name, started_at, task_instance)
);
