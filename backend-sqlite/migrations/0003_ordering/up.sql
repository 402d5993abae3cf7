-- docket 0003_ordering: the FIFO keys (record date, record order) and custom attributes (JSON
-- text, validated and normalized by docket at intake; read with json_extract when a custom
-- order sorts by them). Nullable, no default: existing rows are not rewritten. The record date
-- is INTEGER microseconds since the Unix epoch, UTC, like every docket timestamp here.
ALTER TABLE {table} ADD COLUMN record_date INTEGER;
ALTER TABLE {table} ADD COLUMN record_order INTEGER;
ALTER TABLE {table} ADD COLUMN custom_attributes TEXT;
