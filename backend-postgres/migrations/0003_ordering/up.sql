-- docket 0003_ordering: the FIFO keys (record date, record order) and custom attributes (JSON
-- text, validated and normalized by docket at intake; read with jsonb operators when a custom
-- order sorts by them). Nullable, no default: existing rows are not rewritten.
ALTER TABLE {table} ADD COLUMN record_date TIMESTAMPTZ;
ALTER TABLE {table} ADD COLUMN record_order BIGINT;
ALTER TABLE {table} ADD COLUMN custom_attributes TEXT;
