-- docket 0003_ordering: the FIFO keys (record date, record order) and custom attributes (JSON
-- text, validated and normalized by docket at intake; read with JSON_VALUE when a custom order
-- sorts by them). Nullable, no default: adding them is a metadata-only change, no row is
-- rewritten. custom_attributes is NVARCHAR(MAX) (SQL Server 2019 has no JSON type) with an
-- ISJSON check, so JSON_VALUE never meets text it cannot parse (ISJSON of NULL is NULL: the
-- check passes). Named so 0003's down can drop it.
ALTER TABLE {table} ADD record_date DATETIME2(6) NULL;
ALTER TABLE {table} ADD record_order BIGINT NULL;
ALTER TABLE {table} ADD custom_attributes NVARCHAR(MAX) NULL CONSTRAINT [{name}_custom_attributes_json] CHECK (ISJSON(custom_attributes) = 1);
