-- docket 0003_ordering: the FIFO keys (record date, record order) and custom attributes (JSON
-- text, validated and normalized by docket at intake; read with JSON_EXTRACT when a custom
-- order sorts by them). Nullable, no default: existing rows keep NULL, and appending nullable
-- columns is an instant change (MySQL 8.0.12+, MariaDB 10.3+). One statement, so a failure
-- leaves nothing behind (MySQL DDL is not transactional).
ALTER TABLE {table}
    ADD COLUMN record_date       DATETIME(6) NULL,
    ADD COLUMN record_order      BIGINT      NULL,
    ADD COLUMN custom_attributes LONGTEXT    NULL;
